"""Gains, modes and the torque law as live parameters over a real Zenoh router (docs/ros2-interop.md "Parameters").

The nodes run on one Zenoh session (the interaction node's C++ real-time loop on its own thread,
as in a launched stack); every set and get is ``hri param`` (``param_main``) from another session
through the router, as ``ros2 param`` would be. For each settable gain: the set is acknowledged,
the loop runs with it from its next tick (its own state, or its behaviour: the admittance's
steady displacement under a push), ``param get`` returns it; a value the one gain check refuses
is refused with that check's sentence and changes nothing. The mode and gains topics change the
same parameters. Waits only bound how long a condition may take; nothing is timed."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.node import Node
from hri_runtime.cli.topic import param_main
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams

WAIT_S = 60.0
K_ = "interaction.impedance.stiffness_diag"
D_ = "interaction.impedance.damping_diag"
ADM = {g: f"interaction.admittance.{g}_diag" for g in ("mass", "damping", "stiffness")}


class Stack:
    """Nodes on one Zenoh session, spun by a thread once they exist."""

    def __init__(self, ep: str):
        self.zp = ZenohParams.defaults().with_(connect_endpoints=[ep])
        self.ctx = ZenohContext(self.zp)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)

    def _spin(self):
        while not self._stop.is_set():
            self.ctx.spin(timeout_s=0.01)

    def start(self):
        self._thread.start()

    def close(self):
        self._stop.set()
        self._thread.join(10)
        for n in list(getattr(self.ctx, "nodes", [])):
            n.destroy_node()
        self.ctx.shutdown()
        self.ctx.close()

    def param(self, capsys, *args) -> tuple[int, str]:
        """``hri param <args>`` from its own session; (exit code, stdout)."""
        capsys.readouterr()
        rc = param_main(["--timeout", "20", *args], context=ZenohContext(self.zp))
        return rc, capsys.readouterr().out.strip()


def wait_for(cond, what: str):
    end = time.monotonic() + WAIT_S
    while not cond():
        assert time.monotonic() < end, what
        time.sleep(0.02)


def value_of(out: str):
    assert out.startswith("Value is: "), out
    import yaml

    return yaml.safe_load(out[len("Value is: "):])


@pytest.fixture
def stack(zenoh_router):
    s = Stack(zenoh_router)
    yield s
    s.close()


def test_interaction_gains_and_mode_set_get_refuse_over_the_router(stack, capsys):
    from hri_interaction.nodes.interaction_node import InteractionNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("fr3")
    StopSupervisorNode(cfg=cfg, context=stack.ctx)
    node = InteractionNode(cfg=cfg, context=stack.ctx, parameters={"interaction.blend_s": 0.0})
    probe = Node("probe", context=stack.ctx)
    push = probe.create_publisher("geometry_msgs/msg/WrenchStamped", "/interaction/sim_push", qos=10)
    gains_pub = probe.create_publisher("std_msgs/msg/Float64MultiArray", "/interaction/gains", qos=10)
    mode_pub = probe.create_publisher("std_msgs/msg/String", "/interaction/mode", qos=10)
    stop_pub = probe.create_publisher("hri_interfaces/msg/StopRequest", "/safety/stop_request", qos=10)
    stack.start()
    eng = node.engine
    assert eng.kind == "rt"                              # the real-time loop, as launched
    wait_for(lambda: not eng.held, "the supervisor's heartbeat releases the start-up hold")

    def after_next_tick():
        """A loop snapshot taken after at least one tick that began after this call."""
        t0 = int(eng.state()["ticks"])
        wait_for(lambda: int(eng.state()["ticks"]) > t0 + 1, "the loop ticks")
        return eng.state()

    def diag(s, key):
        return np.diag(np.asarray(s[key], float)).tolist()

    # ---- impedance K and D: acknowledged, in the loop from its next tick, returned by get
    for name, key, new, bad, why in (
            (K_, "K", [70.0, 70.0, 70.0, 11000.0, 11000.0, 11000.0], 60000.0, "stiffness vz = 60000 N/m outside [10, 50000]"),
            (D_, "D", [5.0, 5.0, 5.0, 280.0, 280.0, 280.0], 6000.0, "damping vz = 6000 N·s/m outside [1, 5000]")):
        rc, out = stack.param(capsys, "set", "/interaction", name, str(new))
        assert (rc, out) == (0, "Set parameter successful")
        assert diag(after_next_tick(), key) == new
        assert value_of(stack.param(capsys, "get", "/interaction", name)[1]) == new
        refused = new[:5] + [bad]
        before = eng.state()["rejected"].get("gains_out_of_range", 0)
        rc, out = stack.param(capsys, "set", "/interaction", name, str(refused))
        assert rc == 1 and out.startswith(f"Setting parameter failed: {name}: {why}"), out
        assert "gains_out_of_range" in out
        assert eng.state()["rejected"]["gains_out_of_range"] == before + 1       # counted by the loop's input check
        assert diag(after_next_tick(), key) == new                               # nothing changed
        assert value_of(stack.param(capsys, "get", "/interaction", name)[1]) == new

    # ---- the gains topic changes the same parameters
    K2, D2 = [80.0] * 3 + [12000.0] * 3, [6.0] * 3 + [320.0] * 3
    gains_pub.publish(msgs.new("std_msgs/msg/Float64MultiArray", data=K2 + D2))
    wait_for(lambda: diag(eng.state(), "K") == K2 and diag(eng.state(), "D") == D2, "the gains topic reaches the loop")
    assert value_of(stack.param(capsys, "get", "/interaction", K_)[1]) == K2
    assert value_of(stack.param(capsys, "get", "/interaction", D_)[1]) == D2

    # ---- the mode
    rc, out = stack.param(capsys, "set", "/interaction", "interaction.mode", "admittance")
    assert (rc, out) == (0, "Set parameter successful")
    assert after_next_tick()["mode"] == "admittance"
    assert stack.param(capsys, "get", "/interaction", "interaction.mode")[1] == "Value is: admittance"
    rc, out = stack.param(capsys, "set", "/interaction", "interaction.mode", "sideways")
    assert rc == 1 and "not one of ['impedance', 'admittance', 'hybrid']" in out
    assert after_next_tick()["mode"] == "admittance"

    # ---- admittance K: its behaviour -- the steady displacement under a constant push -- follows it
    f_world = (0.0, 0.0, -10.0)

    def steady_lambda():
        """|lambda| once it has settled (changes < 1 % over 0.2 s), the push held on."""
        last = None
        end = time.monotonic() + WAIT_S
        while True:
            m = msgs.new("geometry_msgs/msg/WrenchStamped")
            m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = f_world
            push.publish(m)
            time.sleep(0.2)
            lam = float(np.linalg.norm(eng.state()["lam"]))
            if last is not None and lam > 1e-4 and abs(lam - last) < 0.01 * lam:
                return lam
            last = lam
            assert time.monotonic() < end, "the admittance does not settle"

    lam1 = steady_lambda()
    k_adm = cfg["interaction"]["admittance"]["stiffness_diag"]
    half = [k / 2 for k in k_adm]
    rc, out = stack.param(capsys, "set", "/interaction", ADM["stiffness"], str(half))
    assert (rc, out) == (0, "Set parameter successful")
    lam2 = steady_lambda()
    assert 1.8 < lam2 / lam1 < 2.2, (lam1, lam2)         # K halved: the displacement (F/K) doubles
    assert value_of(stack.param(capsys, "get", "/interaction", ADM["stiffness"])[1]) == half
    # M and D: set and returned; 5 values for a 6-axis gain is refused by the admittance check
    for g in ("mass", "damping"):
        new = [2 * v for v in cfg["interaction"]["admittance"][f"{g}_diag"]]
        assert stack.param(capsys, "set", "/interaction", ADM[g], str(new)) == (0, "Set parameter successful")
        assert value_of(stack.param(capsys, "get", "/interaction", ADM[g])[1]) == new
        rc, out = stack.param(capsys, "set", "/interaction", ADM[g], str(new[:5]))
        assert rc == 1 and "gains_invalid" in out and "6" in out, out
        assert value_of(stack.param(capsys, "get", "/interaction", ADM[g])[1]) == new
    push.publish(msgs.new("geometry_msgs/msg/WrenchStamped"))      # the push ends

    # ---- the mode topic changes the same parameter
    mode_pub.publish(msgs.new("std_msgs/msg/String", data="hybrid"))
    wait_for(lambda: eng.state()["mode"] == "hybrid", "the mode topic reaches the loop")
    assert stack.param(capsys, "get", "/interaction", "interaction.mode")[1] == "Value is: hybrid"

    # ---- while the system stop holds, a mode switch is refused by the loop's input rule
    stop_pub.publish(msgs.new("hri_interfaces/msg/StopRequest", source="test", reason="live params test"))
    wait_for(lambda: eng.held, "the stop holds the loop")
    rc, out = stack.param(capsys, "set", "/interaction", "interaction.mode", "impedance")
    assert rc == 1 and "mode_switch_refused" in out, out
    assert after_next_tick()["mode"] == "hybrid"
    assert stack.param(capsys, "get", "/interaction", "interaction.mode")[1] == "Value is: hybrid"


def test_interaction_law_set_get_refuse_over_the_router(stack, capsys):
    """``interaction.law`` (docs/realtime.md "Switching the torque law"): within the Lie family the
    set is acknowledged and the loop runs the law from its next tick; to ``cartesian`` with the
    admittance displaced by a push it is refused with the tick's one sentence and nothing changes;
    while the stop holds (the admittance at rest) it is taken."""
    from hri_interaction.nodes.interaction_node import InteractionNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("fr3")
    StopSupervisorNode(cfg=cfg, context=stack.ctx)
    node = InteractionNode(cfg=cfg, context=stack.ctx, parameters={"interaction.mode": "admittance"})
    probe = Node("probe", context=stack.ctx)
    push = probe.create_publisher("geometry_msgs/msg/WrenchStamped", "/interaction/sim_push", qos=10)
    stop_pub = probe.create_publisher("hri_interfaces/msg/StopRequest", "/safety/stop_request", qos=10)
    stack.start()
    eng = node.engine
    assert eng.kind == "rt" and eng.law == "lie"
    wait_for(lambda: not eng.held, "the supervisor's heartbeat releases the start-up hold")
    assert eng.state()["mode"] == "admittance"           # the configured start mode runs in the loop
    law = "interaction.law"

    assert stack.param(capsys, "set", "/interaction", law, "gic") == (0, "Set parameter successful")
    wait_for(lambda: eng.state()["law"] == "gic" and not eng.state()["law_blending"], "the loop runs the new law")
    assert stack.param(capsys, "get", "/interaction", law)[1] == "Value is: gic"

    m = msgs.new("geometry_msgs/msg/WrenchStamped")
    m.wrench.force.x = 10.0
    # published until it arrives (the probe's publisher is new: its first samples may precede discovery)
    wait_for(lambda: push.publish(m) or float(np.abs(eng.state()["lam"]).max()) > 1e-4,
             "the push displaces the admittance")
    rc, out = stack.param(capsys, "set", "/interaction", law, "cartesian")
    assert rc == 1 and out.startswith(f"Setting parameter failed: {law}: law gic -> cartesian: the admittance "
                                      "is engaged"), out
    assert "(law_switch_refused)" in out
    assert eng.state()["law"] == "gic"
    assert stack.param(capsys, "get", "/interaction", law)[1] == "Value is: gic"
    rc, out = stack.param(capsys, "set", "/interaction", law, "pid")
    assert rc == 1 and "not one of" in out, out

    stop_pub.publish(msgs.new("hri_interfaces/msg/StopRequest", source="test", reason="law switch test"))
    wait_for(lambda: eng.held and not np.any(eng.state()["lam"]), "the stop holds, the admittance zeroed")
    assert stack.param(capsys, "set", "/interaction", law, "cartesian") == (0, "Set parameter successful")
    wait_for(lambda: eng.state()["law"] == "cartesian", "the loop runs the classical law")
    assert stack.param(capsys, "get", "/interaction", law)[1] == "Value is: cartesian"
    assert eng.state()["law_refusals"] == 0


def test_teleop_scale_and_joint_robot_pid_gains_over_the_router(stack, capsys):
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode
    from hri_sim.nodes.joint_robot_node import JointRobotNode, SET_GAINS_SRV

    StopSupervisorNode(context=stack.ctx)
    teleop = ArmTeleopNode(cfg=load_robot_config("fr3", overrides=["teleop.output=joint"]), context=stack.ctx,
                           parameters={"teleop.vr.enabled": False})
    robot = JointRobotNode(context=stack.ctx)
    probe = Node("probe", context=stack.ctx)
    set_gains = probe.create_client(SET_GAINS_SRV, "/joint_robot/set_gains")
    stack.start()

    # ---- the teleop scale: the clutch maps with it from the next hand sample on
    for key in ("position_scale", "orientation_scale"):
        name = f"teleop.clutch.{key}"
        assert stack.param(capsys, "set", "/arm_teleop", name, "0.5") == (0, "Set parameter successful")
        assert getattr(teleop.pipe.clutch.params, key) == 0.5
        assert stack.param(capsys, "get", "/arm_teleop", name)[1] == "Value is: 0.5"
        rc, out = stack.param(capsys, "set", "/arm_teleop", name, "0.0")
        assert rc == 1 and "must be > 0" in out, out
        assert getattr(teleop.pipe.clutch.params, key) == 0.5
        assert stack.param(capsys, "get", "/arm_teleop", name)[1] == "Value is: 0.5"

    # ---- the joint robot's PID gains (one value per joint), from its next control period on
    prefix = next(n.rsplit(".", 1)[0] for n in robot.gain_params.values())
    n = len(robot.names)
    for term in ("kp", "ki", "kd"):
        name = f"{prefix}.{term}"
        old = value_of(stack.param(capsys, "get", "/joint_robot", name)[1])
        assert old == [getattr(p.gains, term) for p in robot.pids]
        new = [round(v * 1.5 + 0.25, 6) for v in old]
        assert stack.param(capsys, "set", "/joint_robot", name, str(new)) == (0, "Set parameter successful")
        assert [getattr(p.gains, term) for p in robot.pids] == new
        assert value_of(stack.param(capsys, "get", "/joint_robot", name)[1]) == new
        rc, out = stack.param(capsys, "set", "/joint_robot", name, str(new[:-1]))
        assert rc == 1 and out == f"Setting parameter failed: {name}: {n - 1} values for {n} joints ({', '.join(robot.names)})"
        assert [getattr(p.gains, term) for p in robot.pids] == new
    # the robot's ~/set_gains (what the tuning node uses) changes the same parameters
    assert set_gains.wait_for_service(WAIT_S)
    j = robot.names[1]
    r = set_gains.call(msgs.new(SET_GAINS_SRV + "_Request", joint=j, gains=[3.0, 2.0, 1.0]), timeout_s=WAIT_S)
    assert r.success, r.message
    for term, v in zip(("kp", "ki", "kd"), (3.0, 2.0, 1.0)):
        assert value_of(stack.param(capsys, "get", "/joint_robot", f"{prefix}.{term}")[1])[1] == v
    r = set_gains.call(msgs.new(SET_GAINS_SRV + "_Request", joint=j, gains=[-3.0, 2.0, 1.0]), timeout_s=WAIT_S)
    assert not r.success and r.message == "gains must be 3 finite numbers >= 0, got [-3.0, 2.0, 1.0]"
    assert value_of(stack.param(capsys, "get", "/joint_robot", f"{prefix}.kp")[1])[1] == 3.0
    # a negative gain through the parameter: the same check, the same sentence
    kd = value_of(stack.param(capsys, "get", "/joint_robot", f"{prefix}.kd")[1])
    rc, out = stack.param(capsys, "set", "/joint_robot", f"{prefix}.kd", str([-1.0] + kd[1:]))
    assert rc == 1 and out == (f"Setting parameter failed: {prefix}.kd: {robot.names[0]}: gains must be 3 finite "
                               f"numbers >= 0, got {[*(getattr(robot.pids[0].gains, t) for t in ('kp', 'ki')), -1.0]}")
    assert value_of(stack.param(capsys, "get", "/joint_robot", f"{prefix}.kd")[1]) == kd
