"""`ros2 launch launch/<arm>.launch.yaml control:=ros2_control hardware:=mujoco|mock` for the three
arms (fr3, ur5e, iiwa14; ROS 2's own launcher, launch_ros's spawners) with nothing generated before
it (docs/hardware.md): the controller manager reads the committed config/ros2_control/<arm>.yaml and waits for robot_state's
/robot_description, robot_state writes the model file its tag names, the spawners load and
activate joint_state_broadcaster and interaction_controller; `ros2 control list_controllers` and
`ros2 control list_hardware_interfaces` (ros2controlcli) show them active and their interfaces
claimed; SIGINT to the launcher ends the launch with exit 0 and every process on its own.

mujoco: the arm holds its home pose under the controller, then follows the operator's first
clutch stroke (`hri arm-emulate`: arm_teleop -> /interaction/reference -> the controller), once
more after the operator's /safety/reset when a starved node latched a heartbeat timeout
(test_ros2_control.operator_strokes).

The iiwa14 (ros2_control.position_command measured): the controller claims the joints' position
commands as well (lbr_ros2_control's torque command mode needs them), on mujoco and on mock; on
mujoco the standard effort controller, switched in for it, moves nothing (the system discards
effort while a position command is unset, as lbr_fri_ros2 does), and the switch back works.

mock (mock_components/GenericSystem): the plumbing check: the same interfaces, the controller
claims and runs, the states stay at their initial values (nothing moves them).

Skipped, saying why, where `ros2` (ros2cli, ros2launch), launch_ros, ros2_control,
ros2controlcli or the workspace's installed packages (lib/<pkg>/<exe>, the ament index) are
absent. No duration is asserted; the waits are bounded guards."""
from __future__ import annotations

import ast
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hri_runtime.config.tree import load_robot_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ros2_control import MISSING as CONTROL_MISSING, effort_commands, operator_strokes, starved_latch  # noqa: E402
from test_ros2_e2e import REPO, WAIT_S, Probe, communicate, free_port, latched, wait_for  # noqa: E402

pytestmark = [pytest.mark.ros2_control, pytest.mark.ros2_launch]

ARMS = ["fr3", "ur5e", "iiwa14"]


def _missing() -> str:
    if CONTROL_MISSING:
        return CONTROL_MISSING
    if shutil.which("ros2") is None:
        return "ROS2 LAUNCH NOT TESTED: `ros2` (ros2cli) is not on PATH"
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    for pkg in ("launch_ros", "ros2launch", "ros2controlcli", "hri_safety", "hri_sim", "hri_arm_teleop",
                "hri_console"):
        try:
            get_package_prefix(pkg)
        except PackageNotFoundError:
            return (f"ROS2 LAUNCH NOT TESTED: {pkg} is not in the ament index (AMENT_PREFIX_PATH); "
                    "colcon build the workspace with ROS 2 sourced (docs/ros2-interop.md)")
    return ""


MISSING = _missing()


def _ros2(env: dict, *args: str, show: bool = False) -> str:
    r = subprocess.run(["ros2", *args], env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert r.returncode == 0, f"ros2 {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    if show:
        print(f"$ ros2 {' '.join(args)}\n{r.stdout}")
    return r.stdout


def _controllers(env: dict, show: bool = False) -> dict:
    """`ros2 control list_controllers`: name -> (type, state)."""
    out = _ros2(env, "control", "list_controllers", "--controller-manager", "/controller_manager", show=show)
    rows = [re.split(r"\s+", re.sub(r"\x1b\[[0-9;]*m", "", line).strip()) for line in out.splitlines() if line.strip()]
    return {r[0]: (r[1], r[2]) for r in rows if len(r) >= 3}


def _interfaces(env: dict) -> dict:
    """`ros2 control list_hardware_interfaces`: {"command": {interface: tags}, "state": {interface: tags}},
    tags as printed ('[available] [claimed]'; state interfaces have none)."""
    out = re.sub(r"\x1b\[[0-9;]*m", "", _ros2(env, "control", "list_hardware_interfaces", "--controller-manager",
                                            "/controller_manager", show=True))
    got: dict = {"command": {}, "state": {}}
    section = None
    for line in out.splitlines():
        if line.strip() in ("command interfaces", "state interfaces"):
            section = line.split()[0]
            continue
        m = re.match(r"\s+(\S+/\S+)\s*(.*)$", line)
        if m and section:
            got[section][m.group(1)] = m.group(2).strip()
    return got


@pytest.mark.parametrize("robot", ARMS)
@pytest.mark.parametrize("hardware", ["mujoco", "mock"])
def test_ros2_launch_starts_the_controller_manager_and_spawns_the_controllers(robot, hardware, tmp_path,
                                                                              monkeypatch):
    if MISSING:
        pytest.skip(MISSING)
    cfg = load_robot_config(robot)
    dom = str(20 + (os.getpid() + 11 + 2 * ARMS.index(robot) + (0 if hardware == "mujoco" else 1)) % 80)
    monkeypatch.setenv("ROS_DOMAIN_ID", dom)        # the test's probe joins the launch's domain
    env = dict(os.environ, HRI_TRANSPORT="rclpy", ROS_DOMAIN_ID=dom, PYTHONUNBUFFERED="1")
    rc_dir = tmp_path / "rc"
    vr_port = free_port(socket.SOCK_DGRAM)
    proc = subprocess.Popen(["ros2", "launch", str(REPO / "launch" / f"{robot}.launch.yaml"), "control:=ros2_control",
                             f"hardware:={hardware}", f"vr_port:={vr_port}",
                             f"ros2_control_dir:={rc_dir}"], env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    text = ""
    probe = None
    try:
        def active() -> bool:
            assert proc.poll() is None, "ros2 launch ended"
            try:
                c = _controllers(env)
            except AssertionError:
                return False
            return all(c.get(n, ("", ""))[1] == "active" for n in ("interaction_controller", "joint_state_broadcaster"))

        wait_for(active, f"both controllers active (ros2 control list_controllers, {hardware})", 2 * WAIT_S)
        c = _controllers(env, show=True)
        assert c["interaction_controller"][0] == "hri_controllers/InteractionController"
        assert c["joint_state_broadcaster"][0] == "joint_state_broadcaster/JointStateBroadcaster"
        hw = _interfaces(env)
        names = cfg["joints"]["names"]
        ft = cfg["ros2_control"]["ft_sensor"]
        # the iiwa14 (ros2_control.position_command measured): the position commands as well, as on
        # lbr_ros2_control, claimed by the controller; the other arms: effort only
        position = cfg["ros2_control"]["position_command"] == "measured"
        assert position == (robot == "iiwa14")
        for j in names:
            assert "[claimed]" in hw["command"][f"{j}/effort"], (j, hw)
            assert f"{j}/position" in hw["state"] and f"{j}/velocity" in hw["state"]
            if position:
                assert "[claimed]" in hw["command"][f"{j}/position"], (j, hw)
            else:
                assert f"{j}/position" not in hw["command"], (j, hw)
        claimed = _ros2(env, "control", "list_controllers", "--controller-manager", "/controller_manager",
                        "--claimed-interfaces", show=True)
        assert all((f"{j}/position" in claimed) == position for j in names), claimed
        assert all(f"{ft}/{a}.{x}" in hw["state"] for a in ("force", "torque") for x in "xyz"), hw
        assert (f"{cfg['ros2_control']['push_gpio']}/force.x" in hw["command"]) == (hardware == "mujoco")
        # the controller reads the sensor: its six interfaces among the ones it requires
        req = _ros2(env, "control", "list_controllers", "--controller-manager", "/controller_manager",
                    "--required-state-interfaces", show=True)
        assert all(f"{ft}/{a}.{x}" in req for a in ("force", "torque") for x in "xyz"), req
        assert (rc_dir / "model.mjb").is_file()          # written by robot_state at start-up
        hwc = _ros2(env, "control", "list_hardware_components", "--controller-manager", "/controller_manager",
                    show=True)
        plugin = {"mujoco": "hri_controllers/MujocoSystem", "mock": "mock_components/GenericSystem"}[hardware]
        assert plugin in hwc and "active" in hwc, hwc
        if hardware == "mock":   # the states follow nothing: the joint state stays the home pose
            # (GenericSystem's position state follows a written position command: on the iiwa14 the
            # controller writes the position it reads, so it stays the home pose there as well)
            def field(name: str) -> list:       # `ros2 topic echo --csv --field`: one line, a Python list repr
                out = _ros2(env, "topic", "echo", "--once", "--no-lost-messages", "--csv", "--field", name,
                            "/joint_states", show=True)
                line = next(ln for ln in out.splitlines() if "[" in ln and "]" in ln)
                return ast.literal_eval(line[line.index("["):line.rindex("]") + 1])

            js = field("name")
            pos = dict(zip(js, field("position")))   # one message each: GenericSystem's states do not change
            home = np.radians(cfg["joints"]["named_positions_deg"]["home"])
            assert np.allclose([pos[j] for j in names], home, atol=1e-9), (pos, home)
        else:
            probe = Probe(f"ros2_control_launch_{robot}")
            _holds_home_and_follows_the_operator(probe, cfg, vr_port, rc_dir / "model.mjb")
            if position:
                _an_effort_only_controller_moves_nothing(probe, cfg, env)
    finally:
        if probe is not None:
            probe.close()
        if proc.poll() is None:      # SIGINT to the launcher, which sends one to each of its processes
            os.kill(proc.pid, signal.SIGINT)
        text = communicate(proc)
        print(text[-6000:])
    assert proc.returncode == 0, text[-4000:]
    # every process ends with exit 0 (on a loaded machine a Python node may take longer than the
    # launcher's 5 s SIGINT grace and end on its SIGTERM: reported, not failed here)
    assert text.count("process has finished cleanly") == 6, text[-4000:]
    for bad in ("Traceback", "process has died", "exit code"):
        assert bad not in text, f"{bad!r} in the ros2 launch output:\n{text[-4000:]}"


def _an_effort_only_controller_moves_nothing(p: Probe, cfg: dict, env: dict) -> None:
    """lbr_fri_ros2's rule, as the MuJoCo system applies it to a tag with position commands: the
    interaction controller deactivated sets them back to NaN, so the standard effort controller
    (effort only), commanding 5 N·m on every joint, moves nothing: the joints stay where they were
    for 1 s (without the rule that torque would move them; gravity is compensated by the system).
    Switched back, the interaction controller is active again, writing the positions."""
    from sensor_msgs.msg import JointState
    names = cfg["joints"]["names"]
    p.subscribe(JointState, "/joint_states", qos=100)

    def q() -> np.ndarray:
        m = p.messages("/joint_states")[-1]
        return np.array([m.position[list(m.name).index(j)] for j in names])

    wait_for(lambda: p.messages("/joint_states"), "/joint_states")
    _ros2(env, "control", "load_controller", "--set-state", "inactive", "effort_controller", "--controller-manager",
          "/controller_manager", show=True)
    with effort_commands(p.node, [5.0] * len(names)):
        _ros2(env, "control", "switch_controllers", "--deactivate", "interaction_controller", "--activate",
              "effort_controller", "--strict", "--controller-manager", "/controller_manager", show=True)
        c = _controllers(env, show=True)
        assert c["effort_controller"][1] == "active" and c["interaction_controller"][1] == "inactive", c
        time.sleep(0.3)
        before = q()
        time.sleep(1.0)
        moved = float(np.abs(q() - before).max())
    print(f"{cfg['robot']['model']}: under the effort controller alone the joints moved {moved:.2e} rad in 1 s")
    assert moved < 1e-6, (before, q())
    _ros2(env, "control", "switch_controllers", "--deactivate", "effort_controller", "--activate",
          "interaction_controller", "--strict", "--controller-manager", "/controller_manager", show=True)
    c = _controllers(env, show=True)
    assert c["interaction_controller"][1] == "active" and c["effort_controller"][1] == "inactive", c
    hw = _interfaces(env)
    assert all("[claimed]" in hw["command"][f"{j}/position"] for j in names), hw


def _holds_home_and_follows_the_operator(p: Probe, cfg: dict, vr_port: int, model_file) -> None:
    """The MuJoCo arm under the controller: the EE is at the home pose's (the model's forward
    kinematics at joints.named_positions_deg.home, within 2 mm: the system's brakes held the arm
    until the controller took it) and holds there (two 1 s windows within 1 mm of the pose at the
    start of the first), then the
    operator's first clutch stroke (-y, `hri arm-emulate --seconds 3.2`) moves it > 3 cm along -y
    with x and z kept within 1 cm; the positions are printed."""
    import mujoco
    from geometry_msgs.msg import PoseStamped
    from hri_arm_teleop.emulate import main as emulate
    from hri_interfaces.msg import InteractionState, SafetyStop, TeleopMode

    p.subscribe(PoseStamped, "/ee_pose", qos=1000)
    p.subscribe(InteractionState, "/interaction/state", qos=latched())
    p.subscribe(SafetyStop, "/safety/stop", qos=latched())
    p.subscribe(TeleopMode, "/teleop/mode", qos=latched())

    def ee(since: int = 0) -> np.ndarray:
        return np.array([(m.pose.position.x, m.pose.position.y, m.pose.position.z)
                         for m in p.messages("/ee_pose")[since:]]).reshape(-1, 3)

    wait_for(lambda: len(ee()) > 20 and p.messages("/safety/stop") and p.messages("/interaction/state"),
             "/ee_pose, /safety/stop and /interaction/state")
    wait_for(lambda: "/arm_teleop" in p.node_names(), "arm_teleop in the graph")
    start = ee()[-1]
    model = mujoco.MjModel.from_binary_path(str(model_file))
    data = mujoco.MjData(model)
    for name, q in zip(cfg["joints"]["names"], np.radians(cfg["joints"]["named_positions_deg"]["home"])):
        data.qpos[model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)]] = q
    mujoco.mj_forward(model, data)
    home = data.site_xpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, cfg["interaction"]["ee_site"])].copy()
    assert np.linalg.norm(start - home) < 0.002, (start, home)
    n = len(ee())
    time.sleep(1.0)
    first = ee(n)
    n = len(ee())
    time.sleep(1.0)
    second = ee(n)
    hold = max(float(np.abs(w - start).max()) for w in (first, second))
    print(f"{cfg['robot']['model']}: EE {np.round(start, 4).tolist()}, {np.linalg.norm(start - home) * 1e3:.3f} mm "
          f"from home's; largest deviation over 2 s {hold * 1e3:.3f} mm")
    assert hold < 0.001, (start, first[-1], second[-1])
    # the operator starts once arm_teleop is out of its start-up STOP (a stroke streamed while it
    # still holds is ignored, as on the real arm), or a starved node's latch is there to reset
    wait_for(lambda: ((m := p.messages("/teleop/mode")) and m[-1].mode == "HOLD") or starved_latch(p),
             "arm_teleop out of its start-up STOP (/teleop/mode HOLD)")
    resets: list = []

    def stroke():
        y0 = ee()[-1]
        assert emulate(["--host", "127.0.0.1", "--port", str(vr_port), "--seconds", "3.2"]) == 0
        time.sleep(1.0)
        return y0, ee()[-1]

    y0, y1 = operator_strokes(p, stroke, lambda out: out[0][1] - out[1][1] > 0.03,
                              f"{cfg['robot']['model']}'s first stroke", resets)
    print(f"{cfg['robot']['model']}: the stroke moved the EE {np.round((y1 - y0) * 1e3, 1).tolist()} mm "
          f"(resets {resets})")
    assert abs(y1[0] - y0[0]) < 0.01 and abs(y1[2] - y0[2]) < 0.01, (y0, y1)
