"""The console node on hri_runtime's in-process context: topics into the snapshot, safe stop
published from a foreign thread (the WebSocket receive path) without any executor hop, commands
onto the interaction topics, PID commands through the real hri_pid_tuning node's services."""
import json
import math
import threading

import pytest

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node
from hri_runtime.parameter import ParameterError

from hri_console.core.protocol import StartupRefused
from hri_console.nodes.console_node import ConsoleNode


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("fr3")


class Probe(Node):
    """A stand-in for the rest of the stack: publishes what the robot publishes, records what the
    console sends."""

    def __init__(self, cfg, **kw):
        super().__init__("probe", **kw)
        tt, it = cfg["teleop"]["topics"], cfg["interaction"]["topics"]
        self.got = {"stop": [], "reset": [], "mode": [], "gains": []}
        self.create_subscription("hri_interfaces/msg/StopRequest", "/safety/stop_request", self.got["stop"].append)
        self.create_subscription("std_msgs/msg/Bool", cfg["atomic"]["topics"]["reset"], self.got["reset"].append)
        self.create_subscription("std_msgs/msg/String", it["mode"], self.got["mode"].append)
        self.create_subscription("std_msgs/msg/Float64MultiArray", it["gains"], self.got["gains"].append)
        self.diag = self.create_publisher("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics")
        self.js = self.create_publisher("sensor_msgs/msg/JointState", tt["joint_states"])
        self.sp = self.create_publisher("sensor_msgs/msg/JointState", cfg["console"]["topics"]["joint_setpoints"])
        self.ee = self.create_publisher("geometry_msgs/msg/PoseStamped", tt["ee_pose"])
        self.mode = self.create_publisher("hri_interfaces/msg/TeleopMode", tt["mode"])
        self.istate = self.create_publisher("hri_interfaces/msg/InteractionState", it["state"])
        self.astate = self.create_publisher("hri_interfaces/msg/AtomicState", cfg["atomic"]["topics"]["atomic_state"])


def diag(name, level, message, **values):
    kv = [msgs.new("diagnostic_msgs/msg/KeyValue", key=k, value=str(v)) for k, v in values.items()]
    return msgs.new("diagnostic_msgs/msg/DiagnosticArray", status=[msgs.new(
        "diagnostic_msgs/msg/DiagnosticStatus", level=level, name=name, message=message, values=kv)])


def js(names, pos):
    return msgs.new("sensor_msgs/msg/JointState", name=list(names), position=list(pos))


@pytest.fixture
def env(cfg):
    ctx = InprocContext(start_time_s=10.0)
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    probe = Probe(cfg, context=ctx)
    return ctx, node, probe


def test_topics_fill_the_snapshot_and_bad_samples_are_dropped(env, cfg):
    ctx, node, probe = env
    names = cfg["joints"]["names"]
    home = [math.radians(d) for d in cfg["joints"]["named_positions_deg"]["home"]]
    probe.diag.publish(diag("hri_pulse: vr link", 0, "ok", connected=True, receive_rate_hz="50.00"))
    probe.js.publish(js(names, home))
    probe.ee.publish(msgs.new("geometry_msgs/msg/PoseStamped", pose=msgs.new(
        "geometry_msgs/msg/Pose", position=msgs.new("geometry_msgs/msg/Point", x=0.3, y=0.0, z=0.5),
        orientation=msgs.new("geometry_msgs/msg/Quaternion", x=1.0, y=0.0, z=0.0, w=0.0))))
    probe.mode.publish(msgs.new("hri_interfaces/msg/TeleopMode", mode="TRACK"))
    probe.istate.publish(msgs.new("hri_interfaces/msg/InteractionState", mode="impedance", flags=["hold"], energy_j=1.5,
                                  rejected=[msgs.new("hri_interfaces/msg/Count", name="non_finite", count=2)]))
    probe.astate.publish(msgs.new("hri_interfaces/msg/AtomicState", state=3, locked=True, fault="link_safe_stop"))
    ctx.spin_for(0.1)
    s = node.snapshot()
    row = s["health"]["hri_pulse: vr link"]
    assert row["level"] == 0 and row["values"]["receive_rate_hz"] == "50.00" and not row["stale"]
    j4 = s["robot"]["joints"][3]
    assert j4["name"] == names[3] and j4["position_rad"] == pytest.approx(math.radians(-135.0))
    # joint 4 of the FR3: [-174.3, -8.7] deg, home -135 deg -> 39.3 deg to the lower limit
    assert j4["margin_rad"] == pytest.approx(math.radians(39.3))
    assert s["robot"]["ee_pose"]["position_m"] == [0.3, 0.0, 0.5]
    assert s["robot"]["teleop_mode"] == "TRACK"
    it = s["robot"]["interaction"]
    assert (it["mode"], it["flags"], it["energy_j"], it["rejected"]) == ("impedance", ["hold"], 1.5, {"non_finite": 2})
    at = s["robot"]["atomic"]
    assert (at["state"], at["locked"], at["fault"]) == (3, True, "link_safe_stop")
    # bad samples: counted per cause, never shown
    probe.js.publish(js(names[:2], [0.0]))
    probe.js.publish(js(names, [math.nan] * 7))
    ctx.spin_for(0.1)
    s = node.snapshot()
    assert s["robot"]["joints"][3]["position_rad"] == pytest.approx(math.radians(-135.0))
    assert s["dropped"] == {"length_mismatch": 1, "non_finite": 1}
    assert node.rejected_count("joint_states") == 2
    # a health row that is not refreshed goes STALE after console.state.health_stale_s
    ctx.spin_for(cfg["console"]["state"]["health_stale_s"] + 0.1)
    assert node.snapshot()["health"]["hri_pulse: vr link"]["level"] == 3


def test_signed_error_graph_is_setpoint_minus_measured(env):
    ctx, node, probe = env
    probe.sp.publish(js(["hand"], [0.5]))
    ctx.spin_for(0.01)
    for q in (0.1, 0.3, 0.6):
        probe.js.publish(js(["hand"], [q]))
        ctx.spin_for(0.01)
    err = node.snapshot()["pid"]["error"]["hand"]
    assert [e for _, e in err] == pytest.approx([0.4, 0.2, -0.1])
    assert [t for t, _ in err] == pytest.approx([10.01, 10.02, 10.03])   # delivered before the clock advances


def test_safe_stop_is_published_from_the_receive_thread_without_the_executor(env):
    ctx, node, probe = env
    replies = []
    th = threading.Thread(target=lambda: replies.append(node.handle('{"type":"safe_stop","id":7}')))
    th.start()
    th.join(10)
    # already on the wire before the executor ran anything: the subscriber's queue holds it
    assert node.pub_stop.published == 1 and probe.got["stop"] == []
    assert ctx.spin_once()
    assert [m.source for m in probe.got["stop"]] == ["console"]
    res = replies[0]["result"]
    assert replies[0]["type"] == "ack" and res["topic"] == "/safety/stop_request" and res["subscribers"] == 1
    assert node.snapshot()["robot"]["safe_stop"] is True
    r = node.handle('{"type":"release_stop"}')          # no stop supervisor: refused, one sentence
    assert r["type"] == "reject" and "stop supervisor" in r["reason"]
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    sup = StopSupervisorNode(cfg=node.cfg, context=ctx)
    node.handle('{"type":"safe_stop"}')
    ctx.spin_for(0.01)
    assert sup.latch.sources == ["console"] and node.snapshot()["system_stop"]["stopped"]
    r = node.handle('{"type":"release_stop"}')          # the click's request is still fresh: refused
    assert r["type"] == "reject" and "console still requested" in r["reason"]
    ctx.spin_for(0.5)
    r = node.handle('{"type":"release_stop"}')
    ctx.spin_for(0.01)
    assert r["type"] == "ack" and "cleared console" in r["result"]["message"]
    assert [m.data for m in probe.got["reset"]] == [True] and r["result"]["subscribers"] == 1
    assert not sup.latch.stopped and node.snapshot()["robot"]["safe_stop"] is False


def test_arm_stack_joints_from_the_interaction_sim_and_reset_without_atomic_is_no_warning(cfg):
    """Cartesian FR3 stack: the arm's joints come from the interaction node's simulation
    (``interaction.topics.sim_joint_states``); no atomic node: nobody on the atomic reset is no
    warning, until an atomic controller has reported its state."""
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    ctx = InprocContext(start_time_s=10.0)
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    sup = StopSupervisorNode(cfg=node.cfg, context=ctx)
    sim = Node("interaction_sim", context=ctx)
    pub = sim.create_publisher("sensor_msgs/msg/JointState", cfg["interaction"]["topics"]["sim_joint_states"])
    names = cfg["joints"]["names"]
    pub.publish(js(names, [0.1] * len(names)))
    ctx.spin_for(0.5)
    joints = node.snapshot()["robot"]["joints"]
    assert [j["name"] for j in joints] == list(names) and joints[0]["position_rad"] == pytest.approx(0.1)
    r = node.handle('{"type":"release_stop"}')
    assert r["type"] == "ack" and r["result"]["subscribers"] == 0 and "warning" not in r["result"]
    astate = sim.create_publisher("hri_interfaces/msg/AtomicState", cfg["atomic"]["topics"]["atomic_state"])
    astate.publish(msgs.new("hri_interfaces/msg/AtomicState"))
    ctx.spin_for(0.2)
    r = node.handle('{"type":"release_stop"}')
    assert r["type"] == "ack" and "no subscriber on /atomic/reset" in r["result"]["warning"]
    assert sup.latch.reset_count == 2


def test_mode_and_gains_without_an_interaction_node_are_refused_and_bad_ones_never_leave(env):
    """The console sets the mode and gains through the interaction node's parameter services
    (tests/console/test_console_interaction.py with the real node): with none running, the
    operator reads why; malformed ones are refused before anything is sent."""
    ctx, node, probe = env
    K, D = [60.0] * 3 + [9000.0] * 3, [4.0] * 3 + [250.0] * 3
    for good in ({"type": "set_mode", "mode": "admittance"},
                 {"type": "set_gains", "gains": {"stiffness": K, "damping": D}}):
        r = node.handle(json.dumps(good))
        assert r["type"] == "reject" and r["cause"] == "unavailable"
        assert r["reason"] == ("service /interaction/set_parameters_atomically is not available "
                               "(is the interaction node running?)")
    for bad, cause in (({"type": "set_mode", "mode": "turbo"}, "bad_value"),
                       ({"type": "set_gains", "gains": {"stiffness": K, "damping": D[:5]}}, "bad_field"),
                       ({"type": "set_gains", "gains": {"stiffness": [0.0] * 6, "damping": D}}, "gains_invalid")):
        r = node.handle(json.dumps(bad))
        assert r["type"] == "reject" and r["cause"] == cause and r["reason"]
    ctx.spin_for(0.01)
    assert probe.got["mode"] == [] and probe.got["gains"] == [] and probe.got["stop"] == []


def test_non_loopback_without_token_refuses_to_start(cfg):
    with pytest.raises(StartupRefused):
        ConsoleNode(cfg=cfg, context=InprocContext(), parameters={"serve": False, "console.bind_host": "0.0.0.0"})


def test_node_parameters_are_the_declared_keys_with_the_robots_values(cfg):
    """One declaration: every console key is a node parameter, the robot config's value is its
    default, an override wins and reaches the core; the declared bounds hold (one clear error)."""
    node = ConsoleNode(cfg=cfg, context=InprocContext(),
                       parameters={"serve": False, "console.state.health_max_rows": 5})
    assert node.get_parameter("console.port").value == cfg["console"]["port"]
    assert node.get_parameter("teleop.topics.joint_states").value == cfg["teleop"]["topics"]["joint_states"]
    assert node.params.state.health_max_rows == node.state.p.health_max_rows == 5
    with pytest.raises(ParameterError, match="console.port.*out of range"):
        ConsoleNode(cfg=cfg, context=InprocContext(), parameters={"serve": False, "console.port": 70000})


# ------------------------------------------------------------------ PID services (real node)

def run(ctx, node, frame):
    """The command worker's view: dispatch on another thread while the executor spins."""
    out = []
    th = threading.Thread(target=lambda: out.append(node.handle(json.dumps(frame))))
    th.start()
    while th.is_alive():
        ctx.spin_for(0.001)
        th.join(0.001)
    return out[0]


@pytest.fixture
def pid_env(cfg, tmp_path):
    from hri_pid_tuning.nodes.tuning_node import PidTuningNode
    from hri_pid_tuning.session import TuningSession

    ctx = InprocContext(start_time_s=10.0)
    session = TuningSession.create("humanoid_arm", "s2", clock=lambda: 1.7e9)
    tuner = PidTuningNode(session=session, context=ctx,
                          parameters={"pid_tuning.node.configuration_path": str(tmp_path / "p.json")})
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    ctx.spin_for(1.1)                 # one status message: the console knows the joints and gains
    return ctx, node, tuner


def test_autotune_table_and_apply_change_the_acknowledged_gains(pid_env):
    ctx, node, tuner = pid_env
    assert "hand" in node.snapshot()["pid"]["status"]["joints"]
    r = run(ctx, node, {"type": "pid_autotune", "joint": "hand", "id": 1})
    assert r["type"] == "ack", r
    table = node.snapshot()["pid"]["autotune"]["hand"]
    assert table["relay"]["ok"] and len(table["heuristics"]) >= 3
    row = next(h for h in table["heuristics"] if h != table["applied"])
    r = run(ctx, node, {"type": "pid_apply", "joint": "hand", "heuristic": row})
    assert r["type"] == "ack", r
    assert tuner.session.storage.acknowledged["hand"].to_dict() == pytest.approx(table["heuristics"][row])
    assert node.snapshot()["pid"]["autotune"]["hand"]["applied"] == row
    # explicit gains: kp only, ki/kd kept from the tuning node's status
    ctx.spin_for(1.1)
    before = tuner.session.storage.acknowledged["hand"].to_dict()
    r = run(ctx, node, {"type": "pid_apply", "joint": "hand", "gains": {"kp": 3.5}})
    assert r["type"] == "ack", r
    assert tuner.session.storage.acknowledged["hand"].to_dict() == pytest.approx({**before, "kp": 3.5})


def test_refusals_of_the_service_are_shown_with_its_reason(pid_env):
    ctx, node, tuner = pid_env
    g0 = dict(tuner.session.storage.local)
    r = run(ctx, node, {"type": "pid_autotune", "joint": "knee"})
    assert r["type"] == "reject" and r["cause"] == "service_refused" and "unknown joint" in r["reason"]
    r = run(ctx, node, {"type": "pid_apply", "joint": "hand", "heuristic": "classic"})
    assert r["type"] == "reject" and "no auto-tune result" in r["reason"]
    r = run(ctx, node, {"type": "pid_apply", "joint": "hand", "gains": {"kp": -1}})
    assert r["type"] == "reject" and r["cause"] == "out_of_range"       # refused by the console
    assert tuner.session.storage.local == g0
    assert tuner.server.rejected == {"unknown_joint": 1, "not_tuned": 1}
    r = run(ctx, node, {"type": "pid_stop"})
    assert r["type"] == "reject" and "no manual recording" in r["reason"]


def test_malformed_websocket_frames_never_reach_the_robot(cfg):
    """Real WebSocket to the node's server: every malformed frame is rejected with a cause and
    counted; nothing is published on any topic the robot listens to."""
    from websockets.exceptions import ConnectionClosedError
    from websockets.sync.client import connect

    ctx = InprocContext()
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"console.port": 0})
    probe = Probe(cfg, context=ctx)
    bad = ["{", "[]", "42", b"\x00\xff\xfe", json.dumps({"type": "safe_stopp"}), json.dumps({"type": 1}),
           json.dumps({"type": "set_mode", "mode": "warp"}), json.dumps({"type": "set_mode", "mode": ["impedance"]}),
           '{"type":"set_gains","gains":{"stiffness":[1,1,1,1,1,NaN],"damping":[1,1,1,1,1,1]}}',
           json.dumps({"type": "set_gains", "gains": {"stiffness": [1] * 6}}),
           json.dumps({"type": "pid_apply", "joint": "hand", "gains": {"kp": 1e12}}),
           json.dumps({"type": "pid_autotune", "joint": "../../etc"}),
           json.dumps({"type": "release_stop", "id": {"x": 1}})]
    try:
        with connect(f"ws://127.0.0.1:{node.port}/ws", open_timeout=10, max_size=None) as ws:
            causes = []
            for raw in bad:
                ws.send(raw)
                while True:
                    m = json.loads(ws.recv(timeout=10))
                    if m["type"] != "state":
                        break
                assert m["type"] == "reject" and m["reason"], m
                causes.append(m["cause"])
            # above console.max_frame_bytes: websockets closes the connection (1009), counted too
            ws.send(json.dumps({"type": "set_mode", "mode": "x" * cfg["console"]["max_frame_bytes"]}))
            with pytest.raises(ConnectionClosedError) as exc:
                while True:
                    ws.recv(timeout=10)
            assert exc.value.rcvd.code == 1009
        ctx.spin_for(0.1)
        for _ in range(100):                 # the server thread counts it after the close
            if node.gate.rejected["too_large"]:
                break
            threading.Event().wait(0.05)
        assert set(causes) | {"too_large"} == set(node.gate.rejected)
        assert sum(node.gate.rejected.values()) == len(bad) + 1
        assert all(v == [] for v in probe.got.values())
        assert node.pub_stop.published == 0 and sum(node.gate.accepted.values()) == 0   # nothing dispatched
    finally:
        node.destroy_node()


def test_safe_stop_is_not_queued_behind_a_pending_pid_service_call(cfg, tmp_path):
    """Over the real WebSocket: an auto-tune is sent first and cannot finish (nobody spins the
    executor, so the service never answers); a safe stop sent after it is published and
    acknowledged at once. Then the executor runs and the auto-tune completes normally."""
    from hri_pid_tuning.nodes.tuning_node import PidTuningNode
    from hri_pid_tuning.session import TuningSession
    from websockets.sync.client import connect

    ctx = InprocContext(start_time_s=10.0)
    PidTuningNode(session=TuningSession.create("humanoid_arm", "s2", clock=lambda: 1.7e9), context=ctx,
                  parameters={"pid_tuning.node.configuration_path": str(tmp_path / "p.json")})
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"console.port": 0})
    probe = Probe(cfg, context=ctx)
    try:
        with connect(f"ws://127.0.0.1:{node.port}/ws", open_timeout=10) as ws:
            ws.send(json.dumps({"type": "pid_autotune", "joint": "hand", "id": 1}))
            while node.snapshot()["pid"]["busy"] is None:         # the worker is waiting on the service
                threading.Event().wait(0.01)
            ws.send(json.dumps({"type": "safe_stop", "id": 2}))
            replies = []
            while not replies:
                m = json.loads(ws.recv(timeout=10))
                if m["type"] != "state":
                    replies.append(m)
            assert replies[0]["id"] == 2 and replies[0]["command"] == "safe_stop"
            assert node.pub_stop.published == 1 and node.snapshot()["pid"]["busy"]["command"] == "pid_autotune"
            while len(replies) < 2:                              # now let the executor run
                ctx.spin_for(0.001)
                try:
                    m = json.loads(ws.recv(timeout=0.01))
                except TimeoutError:
                    continue
                if m["type"] != "state":
                    replies.append(m)
            assert replies[1]["id"] == 1 and replies[1]["type"] == "ack", replies[1]
        assert [m.source for m in probe.got["stop"]] == ["console"]
    finally:
        node.destroy_node()


def test_console_autotunes_a_live_robot_node_and_shows_the_progress(cfg):
    """The console's auto-tune drives the tuning node, which tunes the robot node over
    the runtime; the progress topic becomes the console's progress bar state."""
    from hri_pid_tuning.nodes.tuning_node import PidTuningNode
    from hri_sim.pid_plants_mujoco import load_pid_config
    from hri_sim.nodes.joint_robot_node import JointRobotNode

    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    ctx = InprocContext(start_time_s=10.0)
    StopSupervisorNode(cfg=load_pid_config("humanoid_arm"), context=ctx)   # the robot holds without it
    robot = JointRobotNode(robot="humanoid_arm", setup="s2", cfg=load_pid_config("humanoid_arm"), context=ctx)
    PidTuningNode(context=ctx, parameters={"pid_tuning.node.robot": "humanoid_arm", "pid_tuning.node.setup": "s2",
                                           "pid_tuning.node.live": True})
    node = ConsoleNode(cfg=cfg, context=ctx, parameters={"serve": False})
    seen = []
    node.create_subscription("hri_interfaces/msg/TuningProgress", "/pid_tuning/progress",
                             lambda m: seen.append((m.phase, m.joint, m.fraction)), qos=1000)
    ctx.spin_for(1.1)
    r = run(ctx, node, {"type": "pid_autotune", "joint": "elbow", "id": 1})
    assert r["type"] == "ack", r
    table = node.snapshot()["pid"]["autotune"]["elbow"]
    assert table["relay"]["ok"] and table["applied"]
    g = robot.pids[robot.names.index("elbow")].gains             # the robot node runs the new gains
    assert g.kp == pytest.approx(table["heuristics"][table["applied"]]["kp"])
    assert {"posture", "identify", "relay"} <= {p for p, j, _ in seen if j == "elbow"}
    fr = [f for p, j, f in seen if j == "elbow"]
    assert fr == sorted(fr) and fr[-1] == 1.0                     # a bar that only moves forward
    pr = node.snapshot()["pid"]["progress"]
    assert pr["phase"] == "done" and pr["fraction"] == 1.0
