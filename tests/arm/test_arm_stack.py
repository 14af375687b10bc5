"""The arm stack (teleop.output cartesian): its real nodes composed in one process, lockstep in
simulated time (hri_arm_teleop.stack.ArmStack): VR packets over real UDP -> arm_teleop (clutch ->
planner) -> /interaction/reference -> interaction (the 1 kHz engine) -> the torque-controlled MuJoCo
arm; the figures come from the bag recorder's MCAP. No wall-clock timing is asserted."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hri_arm_teleop.stack import ArmStack, ScriptedPerson, push_metrics, read_trace, scenario_config, tracking_mask
from hri_runtime.config.tree import list_arms, load_robot_config

REPO = Path(__file__).resolve().parents[2]
ARMS = list_arms()   # every robot file of kind arm (tests/arm/test_arm_discovery.py)


def _run(robot: str, jitter: bool, tmp_path: Path, overrides=()):
    cfg = scenario_config(load_robot_config(robot, overrides=list(overrides)))
    sc = cfg["teleop"]["scenario"]
    from hri_arm_teleop.core.scenario import SquareScenario

    person = ScriptedPerson.from_tree(cfg, SquareScenario.from_tree(cfg))
    stack = ArmStack(cfg, person, jitter=jitter, mcap=tmp_path / "run.mcap")
    try:
        stack.run(person.t_end)
        st, health = stack.engine.state(), stack.receiver.health()
    finally:
        stack.close()
    a = read_trace(tmp_path / "run.mcap", stack.cfg, stack.jitter, packets=stack.packets())
    imp, adm = cfg["interaction"]["impedance"], cfg["interaction"]["admittance"]
    pm = push_metrics(a, person, imp["stiffness_diag"][3], adm["stiffness_diag"][3],
                      sc["settle_tol_m"], sc["settle_max_s"])
    mask = tracking_mask(a, person, sc["settle_max_s"])
    err = np.linalg.norm(a["ee_p"] - a["target_p"], axis=1)[mask]
    return cfg, stack, st, health, a, pm, err


def _reference_rejections(st: dict) -> int:
    return sum(n for cause, n in st["rejected"].items() if cause.startswith("reference"))


@pytest.mark.parametrize("robot", ARMS)
def test_square_through_the_interaction_loop_and_the_push(robot, tmp_path):
    cfg, stack, st, health, a, pm, err = _run(robot, False, tmp_path)
    assert stack.pipe.clutch.counters.engagements == cfg["teleop"]["demo"]["strokes"]
    assert health["accepted"] == stack.operator.sent                   # every packet handled
    assert _reference_rejections(st) == 0 and stack.pipe.safety_holds == 0
    assert err.size > 10_000 and np.sqrt(np.mean(err ** 2)) < 0.002      # RMS < 2 mm at 1 kHz
    # the square was drawn: the EE went 20 cm along -y and +z (base frame) and came back
    side = cfg["teleop"]["demo"]["side_m"]
    span = a["ee_p"].max(axis=0) - a["ee_p"].min(axis=0)
    assert span[1] == pytest.approx(side, abs=0.005) and span[2] == pytest.approx(side, abs=0.005)
    # 10 N for 1 s (impedance): the EE yields F/K and returns within the settling bound
    assert pm["push_deviation_m"] == pytest.approx(pm["push_expected_m"], rel=0.25)
    assert pm["recovered"], pm
    # 0.5 Hz push in admittance: it follows (more than the stiff impedance would) and returns
    assert pm["admittance_peak_m"] > 2 * pm["push_expected_m"] * (pm["admittance_push_force_n"] / pm["push_force_n"])
    assert pm["admittance_recovered"], pm
    assert st["energy_violations"] == 0 and st["mode"] == "impedance"
    assert np.all(np.isfinite(a["tau"]))
    # event-driven reference: the torque changes on the first tick after the packet arrives
    lat = a["latency_s"]
    assert lat.size > 500 and np.percentile(lat, 99) <= stack.dt + 1e-9


def test_jittered_reference_link_with_passivity_on_has_no_energy_violation(tmp_path):
    cfg, stack, st, health, a, pm, err = _run("fr3", True, tmp_path,
                                              overrides=["teleop.scenario.passivity_filter=passivity"])
    assert stack.link is not None and a["references_delivered"] < a["references_sent"]   # overtaken ones dropped
    assert np.median(a["link_delay_s"]) > 0.02                                            # really delayed
    assert cfg["interaction"]["passivity"]["filter"] == "passivity"
    assert st["energy_violations"] == 0 and np.min(a["energy_j"]) >= -1e-12
    assert pm["admittance_recovered"] and stack.pipe.safety_holds == 0
    assert np.all(np.isfinite(a["tau"]))


@pytest.mark.parametrize("robot", ARMS)
def test_link_loss_holds_the_pose_and_safe_stop_holds_and_releases_without_a_jump(robot):
    cfg = scenario_config(load_robot_config(robot))
    stack = ArmStack(cfg, jitter=False)
    sq = stack.square
    mid = sq.settle_s + sq.press_lead_s + 0.5 * sq.move_s          # the arm is moving (stroke 0)
    try:
        # link loss mid-stroke: the operator goes silent; the command goes stale -> HOLD
        stack.send_until = mid
        stack.run(mid + cfg["teleop"]["loop"]["command_max_age_s"] + 0.5)
        assert stack.pipe.mode == "HOLD"
        p_hold = stack.engine.ee_pose()[:3, 3].copy()
        stack.run(stack.clock() + 2.0)
        assert np.linalg.norm(stack.engine.ee_pose()[:3, 3] - p_hold) < 5e-4       # holds still
        # the operator is back: SAFE STOP arrives while the arm tracks again
        stack.send_until = float("inf")
        stack.operator.next_t = stack.clock()
        t_stroke1 = sq.settle_s + sq.stroke_s + sq.press_lead_s + 0.3 * sq.move_s
        stack.run(t_stroke1)
        assert stack.pipe.mode == "TRACK"
        stack.pipe.stop("console: SAFE STOP")
        stack.engine.hold(True, "console: SAFE STOP")
        p_stop = stack.engine.ee_pose()[:3, 3].copy()
        stack.run(stack.clock() + 1.5)           # the operator keeps drawing: ignored
        assert stack.pipe.mode == "STOP"
        st = stack.engine.state()
        assert st["frozen"] and np.linalg.norm(st["world_T_ee"][:3, 3] - p_stop) < 2e-3
        p_before_release = st["world_T_ee"][:3, 3].copy()
        # reset: stays where it is (no jump back to an old reference) until a new stroke
        stack.engine.hold(False, "reset")
        stack.pipe.release()
        stack.run(stack.clock() + 0.5)
        assert np.linalg.norm(stack.engine.ee_pose()[:3, 3] - p_before_release) < 1e-3
    finally:
        stack.close()


def test_teleop_demo_main_scenario_prints_the_stack_metrics_and_writes_mcap_and_plots(tmp_path, capsys):
    import json

    from hri_arm_teleop.demo import main
    from hri_runtime.bag.recording import McapReader

    out = tmp_path / "run"
    assert main(["--out", str(out), "--port", "0", "-q", "--set", "teleop.scenario.realtime_s=0.5"]) == 0
    text = capsys.readouterr().out
    for needle in ("tracking error", "push 10 N", "energy violations", "missed deadlines", "first torque"):
        assert needle in text, text
    s = json.loads((out / "summary.json").read_text())
    assert s["output"] == "cartesian" and s["jitter"] and s["engagements"] == 3
    assert s["energy_violations"] == 0 and s["safety_holds"] == 0
    if s["engine"] == "rt":
        assert s["realtime_ticks"] > 0 and s["period_error_us"]["p99"] >= 0 and s["missed_deadlines"] >= 0
    for name in ("path.png", "push.png", "energy.png", "teleop.mcap"):
        assert (out / name).stat().st_size > 10_000, name
    rd = McapReader(out / "teleop.mcap")            # the nodes' own topics, recorded as they ran
    tau = [m.msg.data for m in rd.messages(["/interaction/torque"])]
    assert len(tau) > 20_000 and len(tau[0]) == 7
    ref = next(iter(rd.messages(["/interaction/reference"]))).msg      # a full pose: unit quaternion
    o = ref.pose.orientation
    assert abs(o.x ** 2 + o.y ** 2 + o.z ** 2 + o.w ** 2 - 1.0) < 1e-9 and ref.header.frame_id == "fr3_base"
    assert "provenance" in rd.metadata()


@pytest.mark.parametrize("robot", [a for a in ARMS if (REPO / "launch" / f"{a}.launch.yaml").is_file()])
def test_launch_file_is_one_stack_per_arm(robot):
    from hri_runtime.launch.frontend import parse_launch_file

    path = REPO / "launch" / f"{robot}.launch.yaml"
    nodes = {n.exec: n for n in parse_launch_file(path, {}).nodes}
    assert {"stop_supervisor", "arm_teleop", "interaction"} <= set(nodes)
    assert nodes["arm_teleop"].params["teleop.output"] == "cartesian"
    assert nodes["interaction"].params["robot"] == robot == nodes["arm_teleop"].params["robot"]
    joint = {n.exec for n in parse_launch_file(path, {"output": "joint"}).nodes}
    assert "interaction" not in joint and "arm_teleop" in joint


def test_nodes_in_process_ur5e_ee_command_goes_through_the_interaction_loop():
    """arm_teleop (cartesian) + interaction + stop supervisor on the in-process runtime (simulated
    clock: the interaction node ticks in lockstep): /ee_command -> /interaction/reference -> torque."""
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_interaction.nodes.interaction_node import InteractionNode
    from hri_runtime.geometry import matrix_from_pose, pose_stamped_from_matrix
    from hri_runtime.inproc import InprocContext
    from hri_runtime.node import Node
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("ur5e")
    ctx = InprocContext()
    StopSupervisorNode(context=ctx, cfg=cfg)
    inter = InteractionNode(cfg=cfg, context=ctx)
    arm = ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.vr.enabled": False})
    probe = Node("probe", context=ctx)
    refs, ee = [], []
    probe.create_subscription("geometry_msgs/msg/PoseStamped", "/interaction/reference", refs.append, qos=100)
    probe.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose", ee.append, qos=10)
    cmd = probe.create_publisher("geometry_msgs/msg/PoseStamped", "/ee_command", qos=10)
    ctx.spin_for(0.5)
    assert arm.output == "cartesian" and inter.engine.lockstep and ee   # stepped on the simulated clock
    T1 = matrix_from_pose(ee[-1])
    T1[2, 3] += 0.02
    for _ in range(15):
        cmd.publish(pose_stamped_from_matrix(T1, ctx.now_s(), cfg["frames"]["base"]))
        ctx.spin_for(0.1)
    assert refs and arm.pipe.mode == "TRACK"
    assert matrix_from_pose(ee[-1])[2, 3] == pytest.approx(T1[2, 3], abs=0.002)
    assert inter.engine.state()["rejected"] == {}
