"""The interaction controller under ros2_control (docs/hardware.md), on a ROS 2 with ros2_control
and hri_controllers built: the controller manager at 1 kHz (the committed parameter file
config/ros2_control/fr3.yaml) with hri_controllers/MujocoSystem (the FR3 in MuJoCo) and
hri_controllers/InteractionController (spawned by controller_manager's spawner with the model file
robot_state wrote), the stop supervisor, robot_state (the URDF with the <ros2_control> tag) and
arm_teleop as processes; the scripted VR operator over UDP. One stack for the module, the tests in
order: load and activate (the F/T sensor claimed), the square, the push in impedance and in
admittance (the measured wrench), the system stop, a switch to a standard controller and back,
heartbeat silence. The real-time check runs the controller once per interaction.law.

Skipped, saying why, where ros2_control or hri_controllers is not installed (the PyPI Jazzy of
`make ros2-ci` has no ros2_control: the marker ``ros2_control`` deselects them there). No wall-clock
timing is asserted; positions are."""
from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hri_runtime.config.tree import load_robot_config
from hri_runtime.packages import find_executable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ros2_e2e import (REPO, WAIT_S, Probe, _sigint_held, communicate, free_port, hold_deviation,  # noqa: E402
                           latched, wait_for)

pytestmark = pytest.mark.ros2_control

ROBOT = "fr3"


def _ros2_control_missing() -> str:
    if not find_executable("controller_manager", "ros2_control_node"):
        return ("ROS2_CONTROL NOT TESTED: controller_manager/ros2_control_node is not on AMENT_PREFIX_PATH "
                "(install ros-jazzy-ros2-control, or build it; docs/ros2-interop.md)")
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        if (Path(prefix) / "share" / "hri_controllers" / "package.xml").is_file():
            return ""
    return "ROS2_CONTROL NOT TESTED: hri_controllers is not built (colcon build with ros2_control sourced)"


MISSING = _ros2_control_missing()


class Stack:
    """The processes and the test's rclpy probe; CM service calls."""

    def __init__(self, tmp: Path, env: dict):
        self.env = env
        self.cfg = load_robot_config(ROBOT)
        # what launch/ros2_control.launch.yaml passes: the committed parameter file; robot_state
        # writes the model file into the ros2_control dir
        self.files = {"params": REPO / "config" / "ros2_control" / f"{ROBOT}.yaml", "model": tmp / "model.mjb"}
        self.vr_port = free_port(socket.SOCK_DGRAM)
        self.procs: dict[str, subprocess.Popen] = {}
        self.p = Probe("ros2_control_probe")

    def start(self, name: str, cmd: list[str]) -> None:
        with _sigint_held():
            self.procs[name] = subprocess.Popen(cmd, env=self.env, cwd=REPO, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def node(self, pkg: str, exe: str, *params: str) -> list[str]:
        path = find_executable(pkg, exe)
        assert path, f"{exe} of {pkg} is not installed"
        args = [path, "--ros-args"]
        for p in params:
            args += ["-p", p]
        return args

    def call(self, srv: str, cls, **fields):
        return self.p.call(cls, f"/controller_manager/{srv}", cls.Request(**fields), timeout_s=WAIT_S)

    def controllers(self) -> dict:
        from controller_manager_msgs.srv import ListControllers

        return {c.name: c for c in self.call("list_controllers", ListControllers).controller}

    def switch(self, activate=(), deactivate=()) -> bool:
        from controller_manager_msgs.srv import SwitchController

        r = self.call("switch_controller", SwitchController, activate_controllers=list(activate),
                      deactivate_controllers=list(deactivate), strictness=SwitchController.Request.STRICT)
        return r.ok

    def load_and_activate(self, name: str) -> None:
        from controller_manager_msgs.srv import ConfigureController, LoadController

        assert self.call("load_controller", LoadController, name=name).ok, name
        assert self.call("configure_controller", ConfigureController, name=name).ok, name
        assert self.switch(activate=[name]), name

    def close(self) -> dict:
        texts = {}
        for name, q in reversed(list(self.procs.items())):
            if q.poll() is None:
                os.kill(q.pid, signal.SIGCONT)
                os.kill(q.pid, signal.SIGINT)
            try:
                texts[name] = communicate(q)
            except AssertionError as exc:
                texts[name] = str(exc)
        self.p.close()
        return texts


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if MISSING:
        pytest.skip(MISSING)
    from geometry_msgs.msg import PoseStamped
    from hri_interfaces.msg import InteractionState, SafetyStop, TeleopMode
    from sensor_msgs.msg import JointState

    dom = str(20 + (os.getpid() + 7) % 80)
    env = dict(os.environ, HRI_TRANSPORT="rclpy", ROS_DOMAIN_ID=dom, PYTHONUNBUFFERED="1")
    old = os.environ.get("ROS_DOMAIN_ID")
    os.environ["ROS_DOMAIN_ID"] = dom
    s = Stack(tmp_path_factory.mktemp("ros2_control"), env)
    try:
        p = s.p
        p.subscribe(PoseStamped, "/ee_pose", qos=1000)
        p.subscribe(PoseStamped, "/interaction/reference", qos=1000)
        p.subscribe(InteractionState, "/interaction/state", qos=latched())
        p.subscribe(SafetyStop, "/safety/stop", qos=latched())
        p.subscribe(JointState, "/joint_states", qos=100)
        p.subscribe(TeleopMode, "/teleop/mode", qos=latched(100))
        s.start("stop_supervisor", s.node("hri_safety", "stop_supervisor", f"robot:={ROBOT}"))
        s.start("robot_state", s.node("hri_sim", "robot_state", f"robot:={ROBOT}", "ros2_control.control:=ros2_control",
                                      "ros2_control.hardware:=mujoco", f"ros2_control.dir:={s.files['model'].parent}"))
        s.start("controller_manager", [find_executable("controller_manager", "ros2_control_node"), "--ros-args",
                                       "--params-file", str(s.files["params"]),
                                       "-r", "~/robot_description:=/robot_description"])
        s.start("arm_teleop", s.node("hri_arm_teleop", "arm_teleop", f"robot:={ROBOT}", "teleop.robot.interface:=ros2",
                                     f"teleop.vr.port:={s.vr_port}"))
        yield s
    finally:
        s.texts = s.close()
        for name, text in s.texts.items():     # shown with -s (and in a failure's captured output)
            print(f"---- {name}\n{text[-3000:]}")
        if old is None:
            os.environ.pop("ROS_DOMAIN_ID", None)
        else:
            os.environ["ROS_DOMAIN_ID"] = old


def _ee(s: Stack) -> np.ndarray:
    return np.array([(m.pose.position.x, m.pose.position.y, m.pose.position.z) for m in s.p.messages("/ee_pose")])


def _state(s: Stack):
    st = s.p.messages("/interaction/state")
    return st[-1] if st else None


def starved_latch(p: Probe) -> str:
    """The heartbeat timeout that a node starved past safety.stop.timeout_s latched on its own
    (docs/safety.md: latched in the actuator) while the supervisor's stop is released: the
    controller's hold reason or arm_teleop's STOP reason; "" when there is none (a stop the
    supervisor holds is not one: the operator did not ask for it to be reset here)."""
    stop = p.messages("/safety/stop")
    if not stop or stop[-1].stopped:
        return ""
    st = p.messages("/interaction/state")
    if st and "stop_heartbeat_timeout" in st[-1].frozen:
        return f"interaction_controller: {st[-1].frozen}"
    modes = p.messages("/teleop/mode")
    if modes and modes[-1].mode == "STOP":
        return f"arm_teleop: STOP {modes[-1].reason}"
    return ""


def operator_reset(p: Probe, why: str, resets: list) -> None:
    """/safety/reset as the operator presses it at the console, after a heartbeat timeout latched
    by a starved node (tests/runtime/test_runtime_acl_launch.py's operator_reset on the rclpy
    side); the reason goes into ``resets`` (printed with the results)."""
    from std_srvs.srv import Trigger

    resets.append(why)
    assert p.call(Trigger, "/safety/reset", Trigger.Request(), timeout_s=WAIT_S).success, why
    wait_for(lambda: not starved_latch(p), f"the latch released after /safety/reset ({why})")


def operator_strokes(p: Probe, stroke, moved, what: str, resets: list):
    """The operator's ``stroke()`` (its result to ``moved``), once more after one /safety/reset when
    the arm did not move because a starved node latched a heartbeat timeout during it; fails,
    naming the latch or its absence, when the arm did not move. Returns the stroke's result."""
    out = stroke()
    if not moved(out) and (why := starved_latch(p)):
        operator_reset(p, why, resets)
        out = stroke()
    assert moved(out), f"{what}: the arm did not follow the operator (latch: {starved_latch(p) or 'none'}; resets {resets})"
    return out


@contextlib.contextmanager
def effort_commands(node, values: list):
    """The standard effort controller's command topic fed ``values`` at 100 Hz from a thread for
    the duration of the block (what an operator's effort source would publish)."""
    from std_msgs.msg import Float64MultiArray

    pub = node.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
    stop = threading.Event()

    def feed():
        while not stop.is_set():
            pub.publish(Float64MultiArray(data=list(values)))
            time.sleep(0.01)

    th = threading.Thread(target=feed, daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join(2.0)


def _released(s: Stack) -> None:
    """The controller follows (not held by the system stop). On a loaded machine the supervisor's
    heartbeat can arrive later than safety.stop.timeout_s: the controller then holds, latched, as
    it must; the operator's /safety/reset releases it. Counted in the printed results."""
    wait_for(lambda: _state(s) is not None, "/interaction/state")
    s.resets = getattr(s, "resets", [])
    if _state(s).frozen or starved_latch(s.p):
        operator_reset(s.p, starved_latch(s.p) or _state(s).frozen, s.resets)
        wait_for(lambda: _state(s).frozen == "", f"the controller released after {_state(s).frozen!r}")


@pytest.mark.parametrize("law", ["lie", "cartesian", "gic", "lie_osd"])
def test_update_allocates_nothing_holds_without_heartbeat_and_follows_with_it(tmp_path, law):
    """src/hri_controllers/test/rt_check.cpp: the controller on loaned interfaces of the FR3 in
    MuJoCo, outside a controller manager (its checks are printed), with each torque law of
    interaction.law (lie_osd reads M(q) from the model terms); without a robot description the
    F/T sensor is absent and the controller still configures and runs."""
    if MISSING:
        pytest.skip(MISSING)
    from hri_sim.cli import write_ros2_control

    exe = find_executable("hri_controllers", "hri_controllers_rt_check")
    assert exe, "hri_controllers_rt_check is not installed (colcon build hri_controllers)"
    files = write_ros2_control(ROBOT, "mujoco", tmp_path)
    q0 = np.radians(load_robot_config(ROBOT)["joints"]["named_positions_deg"]["home"])
    env = dict(os.environ, ROS_DOMAIN_ID=str(20 + (os.getpid() + 3) % 80))
    r = subprocess.run([exe, str(files["params"]), *(repr(float(q)) for q in q0), "--ros-args", "-p",
                        f"interaction.law:={law}"], env=env, capture_output=True, text=True, timeout=300)
    print(r.stderr)
    assert r.returncode == 0 and "all checks passed" in r.stderr, r.stderr[-4000:]
    assert f"ok: configured with interaction.law {law}" in r.stderr
    assert "ok: update() allocated 0 times in 2000 calls" in r.stderr
    assert "absent from the robot description: 14 state interfaces claimed (joints only)" in r.stderr
    assert "no wrench is read" in r.stderr
    # the FR3 (ros2_control.position_command none): effort commands only
    assert "ok: command interfaces claimed with ros2_control.position_command none: 7 effort, 0 position" in r.stderr
    assert "ok: deactivate: zero effort" in r.stderr
    # the parameter file has the controller's gravity term off: the arm is stepped as the MuJoCo
    # system steps it, g(q) added on the hardware side (docs/hardware.md)
    assert "ok: gravity compensated by the system" in r.stderr


def test_on_the_iiwa14_the_controller_writes_the_measured_positions_to_the_position_commands(tmp_path):
    """lbr_fri_ros2's torque command mode discards the torques while a joint's position command is
    NaN (docs/hardware.md): with the iiwa14's parameter file (ros2_control.position_command measured)
    the controller claims <joint>/position beside <joint>/effort, and after every update() (held
    before the first heartbeat, following the reference, held under the stop) each position command
    holds exactly the finite position read in that cycle; update() still allocates nothing and the
    arm still follows; deactivate hands the position commands back unset (NaN) with zero effort."""
    if MISSING:
        pytest.skip(MISSING)
    from hri_sim.cli import write_ros2_control

    exe = find_executable("hri_controllers", "hri_controllers_rt_check")
    assert exe, "hri_controllers_rt_check is not installed (colcon build hri_controllers)"
    files = write_ros2_control("iiwa14", "mujoco", tmp_path)
    q0 = np.radians(load_robot_config("iiwa14")["joints"]["named_positions_deg"]["home"])
    env = dict(os.environ, ROS_DOMAIN_ID=str(20 + (os.getpid() + 9) % 80))
    r = subprocess.run([exe, str(files["params"]), *(repr(float(q)) for q in q0)], env=env, capture_output=True,
                       text=True, timeout=300)
    print(r.stderr)
    assert r.returncode == 0 and "all checks passed" in r.stderr, r.stderr[-4000:]
    assert "ok: command interfaces claimed with ros2_control.position_command measured: 7 effort, 7 position" in r.stderr
    assert re.search(r"ok: position commands equal the positions read in (\d+) cycles \(0 joint values differ\)",
                     r.stderr), r.stderr[-4000:]
    assert int(re.search(r"read in (\d+) cycles", r.stderr).group(1)) > 2000
    assert "ok: update() allocated 0 times in 2000 calls" in r.stderr
    assert "ok: follows a 2 cm step" in r.stderr and "ok: holds under the stop" in r.stderr
    assert "ok: deactivate: zero effort, position commands unset (NaN)" in r.stderr


def test_an_unknown_law_is_refused_with_one_line(tmp_path):
    if MISSING:
        pytest.skip(MISSING)
    from hri_sim.cli import write_ros2_control

    exe = find_executable("hri_controllers", "hri_controllers_rt_check")
    files = write_ros2_control(ROBOT, "mujoco", tmp_path)
    q0 = np.radians(load_robot_config(ROBOT)["joints"]["named_positions_deg"]["home"])
    r = subprocess.run([exe, str(files["params"]), *(repr(float(q)) for q in q0), "--ros-args", "-p",
                        "interaction.law:=pid"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, ROS_DOMAIN_ID=str(20 + (os.getpid() + 5) % 80)))
    assert r.returncode == 1 and "FAILED: init" in r.stderr, r.stderr[-2000:]
    assert "interaction.law" in r.stderr and "pid" in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("who", ["hardware", "controller"])
def test_the_mujoco_system_compensates_gravity_as_the_arms_drivers_do(tmp_path, who):
    """The committed parameter file has the controller's interaction.gravity_compensation false:
    the arms' drivers add g(q) themselves, and so does the MuJoCo system (docs/hardware.md). With
    its compensation on (ros2_control.gravity_compensation hardware, the default) the arm holds its
    home pose under the interaction controller (within 1 mm) and a zero effort command from the
    standard effort controller holds the joints (the compensation is exact: g at the measured q);
    with it off (the tag's gravity_compensation false, the controller's term still off) the same
    arm sags under the controller and falls under zero effort: the compensation is real."""
    if MISSING:
        pytest.skip(MISSING)
    import mujoco
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState

    dom = str(20 + (os.getpid() + 17 + (who == "controller")) % 80)
    env = dict(os.environ, HRI_TRANSPORT="rclpy", ROS_DOMAIN_ID=dom, PYTHONUNBUFFERED="1")
    old = os.environ.get("ROS_DOMAIN_ID")
    os.environ["ROS_DOMAIN_ID"] = dom
    s = Stack(tmp_path, env)
    try:
        assert yaml_value(s.files["params"], "interaction_controller", "interaction", "gravity_compensation") is False
        s.p.subscribe(PoseStamped, "/ee_pose", qos=1000)
        s.p.subscribe(JointState, "/joint_states", qos=100)
        s.start("robot_state", s.node("hri_sim", "robot_state", f"robot:={ROBOT}", "ros2_control.control:=ros2_control",
                                      "ros2_control.hardware:=mujoco", f"ros2_control.dir:={tmp_path}",
                                      f"ros2_control.gravity_compensation:={who}"))
        s.start("controller_manager", [find_executable("controller_manager", "ros2_control_node"), "--ros-args",
                                       "--params-file", str(s.files["params"]),
                                       "-r", "~/robot_description:=/robot_description"])
        wait_for(lambda: _has_service(s, "/controller_manager/list_controllers"), "the controller manager's services")
        s.load_and_activate("joint_state_broadcaster")
        spawner = subprocess.run([find_executable("controller_manager", "spawner"), "interaction_controller",
                                  "--controller-manager", "/controller_manager", "--controller-ros-args",
                                  f"--param model_file:={s.files['model']}"], env=env, capture_output=True, text=True,
                                 timeout=WAIT_S)
        assert spawner.returncode == 0, spawner.stdout[-2000:] + spawner.stderr[-2000:]
        # the home pose's EE from the model (the brakes held the arm there until the controller took it)
        model = mujoco.MjModel.from_binary_path(str(s.files["model"]))
        data = mujoco.MjData(model)
        names = s.cfg["joints"]["names"]
        adr = [model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in names]
        data.qpos[adr] = np.radians(s.cfg["joints"]["named_positions_deg"]["home"])
        mujoco.mj_forward(model, data)
        home = data.site_xpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s.cfg["interaction"]["ee_site"])].copy()
        wait_for(lambda: len(_ee(s)) > 20, "/ee_pose")
        time.sleep(1.5)
        n = len(_ee(s))
        time.sleep(1.0)
        sag = float(np.linalg.norm(_ee(s)[n:] - home, axis=1).max())   # the EE's largest distance from home
        # the standard effort controller, commanding zero torque (lbr's and franka's gravity
        # compensation controllers send zeros)
        from controller_manager_msgs.srv import ConfigureController, LoadController

        assert s.call("load_controller", LoadController, name="effort_controller").ok
        assert s.call("configure_controller", ConfigureController, name="effort_controller").ok
        with effort_commands(s.p.node, [0.0] * len(names)):
            time.sleep(0.3)
            assert s.switch(activate=["effort_controller"], deactivate=["interaction_controller"])

            def q() -> np.ndarray:
                m = s.p.messages("/joint_states")[-1]
                return np.array([m.position[list(m.name).index(j)] for j in names])

            time.sleep(0.3)
            before = q()
            time.sleep(1.0)
            fell = float(np.abs(q() - before).max())
        print(f"{ROBOT}, ros2_control.gravity_compensation {who}: EE {sag * 1e3:.3f} mm from home under the "
              f"interaction controller; joints moved {fell:.2e} rad in 1 s under zero effort")
        if who == "hardware":
            assert sag < 0.001 and fell < 1e-4, (sag, fell)
        else:
            assert sag > 0.003 and fell > 0.05, (sag, fell)
    finally:
        for name, text in s.close().items():
            print(f"---- {name}\n{text[-2000:]}")
        if old is None:
            os.environ.pop("ROS_DOMAIN_ID", None)
        else:
            os.environ["ROS_DOMAIN_ID"] = old


def yaml_value(path: Path, *keys: str):
    """A value of a ROS parameter file (``<node>: ros__parameters: ...``) by its node and names."""
    import yaml

    v = yaml.safe_load(path.read_text())[keys[0]]["ros__parameters"]
    for k in keys[1:]:
        v = v[k]
    return v


def test_controller_manager_loads_and_activates_the_controller_on_the_mujoco_system(stack):
    from controller_manager_msgs.srv import ListHardwareInterfaces

    s = stack
    wait_for(lambda: s.p.messages("/safety/stop") and all(q.poll() is None for q in s.procs.values()),
             "the stop supervisor's heartbeat")
    wait_for(lambda: _has_service(s, "/controller_manager/list_controllers"), "the controller manager's services")
    s.load_and_activate("joint_state_broadcaster")
    # as launch/ros2_control.launch.yaml: the spawner, the model file robot_state wrote as the controller's argument
    assert s.files["model"].is_file(), "robot_state wrote no model file"
    spawner = subprocess.run([find_executable("controller_manager", "spawner"), "interaction_controller",
                              "--controller-manager", "/controller_manager", "--controller-ros-args",
                              f"--param model_file:={s.files['model']}"], env=s.env, capture_output=True, text=True,
                             timeout=WAIT_S)
    assert spawner.returncode == 0, spawner.stdout[-2000:] + spawner.stderr[-2000:]
    c = s.controllers()
    assert c["interaction_controller"].state == "active", c
    assert c["interaction_controller"].type == "hri_controllers/InteractionController"
    names = s.cfg["joints"]["names"]
    assert sorted(c["interaction_controller"].claimed_interfaces) == sorted(f"{j}/effort" for j in names)
    # the F/T sensor of the MuJoCo system is read (semantic_components::ForceTorqueSensor)
    ft = s.cfg["ros2_control"]["ft_sensor"]
    axes = [f"{ft}/{a}.{x}" for a in ("force", "torque") for x in "xyz"]
    assert list(c["interaction_controller"].required_state_interfaces)[-6:] == axes, c["interaction_controller"]
    hw = s.call("list_hardware_interfaces", ListHardwareInterfaces)
    cmd = {i.name: i for i in hw.command_interfaces}
    assert all(cmd[f"{j}/effort"].is_claimed for j in names)
    state = {i.name for i in hw.state_interfaces}
    assert {f"{j}/{k}" for j in names for k in ("position", "velocity")} | set(axes) <= state
    # the controller runs: its state ticks at 1 kHz of controller time, and it holds until the
    # supervisor's first heartbeat, then follows
    wait_for(lambda: _state(s) is not None and _state(s).ticks > 2000, "2000 controller ticks")
    st = _state(s)
    assert st.driver == "ros2_control" and st.mode == "impedance"
    assert abs(st.time_s - st.ticks * 1e-3) < 1e-6
    wait_for(lambda: s.p.messages("/joint_states") and len(_ee(s)) > 20, "/joint_states and /ee_pose")


def _has_service(s: Stack, name: str) -> bool:
    return any(n == name for n, _ in s.p.node.get_service_names_and_types())


def test_square_through_arm_teleop_is_tracked_within_2_mm(stack):
    from hri_arm_teleop.emulate import main as emulate

    s = stack
    # arm_teleop up (in the graph; its start-up loads its models), then the operator
    wait_for(lambda: "/arm_teleop" in s.p.node_names(), "arm_teleop in the graph")
    time.sleep(3.0)
    _released(s)
    wait_for(lambda: ((m := s.p.messages("/teleop/mode")) and m[-1].mode == "HOLD") or starved_latch(s.p),
             "arm_teleop out of its start-up STOP (/teleop/mode HOLD)")
    side = s.cfg["teleop"]["demo"]["side_m"]

    def square():
        """The square (hri arm-emulate), the references arm_teleop sent and the EE poses meanwhile."""
        n_ref0, n_ee0 = len(s.p.messages("/interaction/reference")), len(s.p.messages("/ee_pose"))
        assert emulate(["--host", "127.0.0.1", "--port", str(s.vr_port)]) == 0
        time.sleep(1.0)
        return s.p.messages("/interaction/reference")[n_ref0:], s.p.messages("/ee_pose")[n_ee0:]

    def drawn(out) -> bool:      # the EE went round the square's sides (y and z)
        ep = np.array([(m.pose.position.x, m.pose.position.y, m.pose.position.z) for m in out[1]])
        span = ep.max(axis=0) - ep.min(axis=0) if len(ep) else np.zeros(3)
        return bool(span[1] > 0.8 * side and span[2] > 0.8 * side)

    refs, ees = operator_strokes(s.p, square, drawn, "the square", s.resets)
    assert "TRACK" in [m.mode for m in s.p.messages("/teleop/mode")], "arm_teleop never tracked the operator"
    assert len(refs) > 200, "arm_teleop sent no reference stream"
    rt = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in refs])
    rp = np.array([(m.pose.position.x, m.pose.position.y, m.pose.position.z) for m in refs])
    et = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in ees])
    ep = np.array([(m.pose.position.x, m.pose.position.y, m.pose.position.z) for m in ees])
    # cross-track error: each EE sample of a stroke (the reference stream on, by stamps) to the
    # polyline of the references arm_teleop sent (hri_arm_teleop.core.scenario.path_error_to_polyline,
    # as tests/arm/test_arm_square_sim.py): on the wall clock the EE's time lag behind the
    # reference (delivery, the 50 Hz stream's first-order hold, the 50 Hz state topic) is no path error
    from hri_arm_teleop.core.scenario import path_error_to_polyline

    k = np.searchsorted(rt, et, side="right") - 1
    ok = k >= 0
    k = np.clip(k, 0, len(rt) - 1)
    fresh = ok & (et - rt[k] < 0.1)                       # the stream is on (a clutch stroke)
    err = path_error_to_polyline(ep[fresh], rp)
    lag = np.linalg.norm(ep - rp[k], axis=1)[fresh]        # vs the latest reference by stamp
    span = ep.max(axis=0) - ep.min(axis=0)
    stack.square = {"samples": int(err.size), "rms_m": float(np.sqrt(np.mean(err ** 2))), "max_m": float(err.max()),
                    "vs_latest_reference_rms_m": float(np.sqrt(np.mean(lag ** 2))), "span_m": span.tolist()}
    print("square:", stack.square)
    assert err.size > 200
    assert span[1] == pytest.approx(side, abs=0.01) and span[2] == pytest.approx(side, abs=0.01), span
    assert stack.square["rms_m"] < 0.002, stack.square


def test_a_10_n_push_yields_f_over_k_and_recovers(stack):
    from std_msgs.msg import Float64MultiArray

    s = stack
    s.load_and_activate("push_controller")
    pub = s.p.node.create_publisher(Float64MultiArray, "/push_controller/commands", 10)
    force = 10.0
    K = float(s.cfg["interaction"]["impedance"]["stiffness_diag"][3])

    def mean_ee(seconds: float) -> np.ndarray:
        n = len(_ee(s))
        time.sleep(seconds)
        return _ee(s)[n:].mean(axis=0)

    _released(s)
    # at rest first (the governed reference of the last stroke has arrived)
    end = time.monotonic() + 20.0
    while True:
        a, b = mean_ee(0.5), mean_ee(0.5)
        if np.linalg.norm(a - b) < 2e-5 or time.monotonic() > end:
            break
    base = mean_ee(0.5)
    pub.publish(Float64MultiArray(data=[force, 0.0, 0.0]))
    time.sleep(1.5)
    pushed = mean_ee(0.5)
    pub.publish(Float64MultiArray(data=[0.0, 0.0, 0.0]))
    time.sleep(3.0)
    back = mean_ee(0.5)
    dev = float(np.linalg.norm(pushed - base))
    stack.push = {"force_n": force, "expected_m": force / K, "deviation_m": dev,
                  "after_release_m": float(np.linalg.norm(back - base))}
    assert dev == pytest.approx(force / K, rel=0.25), stack.push
    assert pushed[0] > base[0]
    assert stack.push["after_release_m"] < 0.25 * force / K, stack.push


def test_admittance_yields_to_the_measured_push_and_recovers(stack):
    """interaction.mode admittance: the 10 N push on the MuJoCo EE reaches the controller only
    through the system's F/T sensor; the admittance yields F/K_adm (its lambda) and the impedance
    F/K on top (tests/interaction/test_interaction_mujoco.py on the RT loop), and both come back
    on release. Without the sensor the arm would yield F/K only, as in impedance (the test above)."""
    from std_msgs.msg import Float64MultiArray, String

    s = stack
    sec = s.cfg["interaction"]
    K, K_adm = float(sec["impedance"]["stiffness_diag"][3]), float(sec["admittance"]["stiffness_diag"][3])
    force = 10.0
    if "push_controller" not in s.controllers():        # loaded by the impedance push above
        s.load_and_activate("push_controller")
    mode_pub = s.p.node.create_publisher(String, "/interaction/mode", 10)
    pub = s.p.node.create_publisher(Float64MultiArray, "/push_controller/commands", 10)

    def mean_ee(seconds: float) -> np.ndarray:
        n = len(_ee(s))
        time.sleep(seconds)
        return _ee(s)[n:].mean(axis=0)

    _released(s)
    mode_pub.publish(String(data="admittance"))
    wait_for(lambda: _state(s).mode == "admittance", "the admittance mode")
    base = mean_ee(0.5)
    pub.publish(Float64MultiArray(data=[force, 0.0, 0.0]))
    time.sleep(2.0)
    pushed = mean_ee(0.5)
    lam = np.array(_state(s).admittance_lambda)
    pub.publish(Float64MultiArray(data=[0.0, 0.0, 0.0]))
    time.sleep(3.0)
    back = mean_ee(0.5)
    lam_back = np.array(_state(s).admittance_lambda)
    mode_pub.publish(String(data="impedance"))
    wait_for(lambda: _state(s).mode == "impedance", "the impedance mode again")
    dev = float(np.linalg.norm(pushed - base))
    expected = force / K_adm + force / K
    stack.admittance = {"force_n": force, "expected_m": expected, "deviation_m": dev,
                        "lambda_m": float(np.linalg.norm(lam[3:])), "f_over_k_adm_m": force / K_adm,
                        "after_release_m": float(np.linalg.norm(back - base)),
                        "lambda_after_release_m": float(np.linalg.norm(lam_back[3:]))}
    print("admittance push:", stack.admittance)
    assert pushed[0] > base[0]
    assert dev == pytest.approx(expected, rel=0.15), stack.admittance
    assert stack.admittance["lambda_m"] == pytest.approx(force / K_adm, rel=0.1), stack.admittance
    assert stack.admittance["after_release_m"] < 0.25 * expected, stack.admittance
    assert stack.admittance["lambda_after_release_m"] < 0.1 * force / K_adm, stack.admittance


def test_interaction_law_is_a_live_parameter_of_the_controller(stack):
    """`ros2 param set /interaction_controller interaction.law gic` as on the interaction node:
    applied at a tick boundary with the blend (the arm holds its pose through it), read back by
    get; an unknown law is refused with its reason and the law stays."""
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import GetParameters, SetParameters

    s = stack
    _released(s)
    node = "/interaction_controller"

    def set_law(law: str):
        return s.p.call(SetParameters, f"{node}/set_parameters", SetParameters.Request(parameters=[
            Parameter(name="interaction.law", value=ParameterValue(type=ParameterType.PARAMETER_STRING,
                                                                   string_value=law))]), timeout_s=WAIT_S).results[0]

    def law_now() -> str:
        return s.p.call(GetParameters, f"{node}/get_parameters", GetParameters.Request(names=["interaction.law"]),
                        timeout_s=WAIT_S).values[0].string_value

    before = _ee(s)[-1]
    for law in ("gic", "lie_osd", "lie"):
        r = set_law(law)
        assert r.successful, r.reason
        assert law_now() == law
        time.sleep(0.5)                                   # > switch.law_blend_s
    drift = float(np.linalg.norm(_ee(s)[-1] - before))
    r = set_law("pid")
    assert not r.successful and "pid" in r.reason, r.reason
    assert law_now() == "lie"
    print(f"law switches lie -> gic -> lie_osd -> lie: EE drift {drift * 1e3:.3f} mm")
    assert drift < 0.001


def test_safe_stop_holds_and_the_reset_releases(stack):
    from hri_arm_teleop.emulate import main as emulate
    from hri_interfaces.msg import StopRequest
    from std_srvs.srv import Trigger

    s = stack
    stop_pub = s.p.node.create_publisher(StopRequest, "/safety/stop_request", 10)
    _released(s)

    def stroke():
        """The operator streams the first stroke (-y) for 7 s; returns once the EE has followed it
        3 cm (the operator still streaming) or the stroke is over."""
        result: dict = {}
        op = threading.Thread(target=lambda: result.setdefault("rc", emulate(
            ["--host", "127.0.0.1", "--port", str(s.vr_port), "--seconds", "7.0"])), daemon=True)
        y0 = _ee(s)[-1][1]
        op.start()
        end = time.monotonic() + 60.0
        while op.is_alive() and y0 - _ee(s)[-1][1] <= 0.03 and time.monotonic() < end:
            time.sleep(0.05)
        return op, result, y0 - _ee(s)[-1][1] > 0.03

    def following(out) -> bool:
        if not out[2]:
            out[0].join(WAIT_S)       # the stroke is over: a retry starts on a released clutch
        return out[2]

    op, result, _ = operator_strokes(s.p, stroke, following, "the -y stroke before the stop", s.resets)
    stop_pub.publish(StopRequest(source="console", reason="ros2_control test"))
    wait_for(lambda: s.p.messages("/safety/stop")[-1].stopped, "the latched stop")
    wait_for(lambda: _state(s).frozen.startswith("system stop"), "the controller holding")
    n = len(_ee(s))
    op.join(WAIT_S)
    assert result.get("rc") == 0
    held = _ee(s)[n:]
    i, dev = hold_deviation(held)
    assert i is not None, "the EE never came to rest while the operator streamed"
    stack.stop = {"held_samples": len(held) - i, "max_dev_m": dev}
    assert dev < 0.001, f"the EE moved {dev * 1000:.2f} mm while held"
    r = s.p.call(Trigger, "/safety/reset", Trigger.Request())
    assert r.success, r.message
    wait_for(lambda: not s.p.messages("/safety/stop")[-1].stopped, "the released stop")
    wait_for(lambda: _state(s).frozen == "", "the controller released")


def test_switch_to_the_effort_controller_and_back(stack):
    s = stack
    from controller_manager_msgs.srv import ConfigureController, LoadController

    assert s.call("load_controller", LoadController, name="effort_controller").ok
    assert s.call("configure_controller", ConfigureController, name="effort_controller").ok
    # zero torque from the standard controller: the system adds g(q), as the arms' drivers do
    # (franka's and lbr's gravity compensation controllers send zeros)
    g = [0.0] * len(s.cfg["joints"]["names"])
    before = _ee(s)[-1]
    ticks = _state(s).ticks
    with effort_commands(s.p.node, g):
        time.sleep(0.3)
        assert s.switch(activate=["effort_controller"], deactivate=["interaction_controller"])
        c = s.controllers()
        assert c["effort_controller"].state == "active" and c["interaction_controller"].state == "inactive"
        time.sleep(1.0)
        assert s.switch(activate=["interaction_controller"], deactivate=["effort_controller"])
    c = s.controllers()
    assert c["interaction_controller"].state == "active" and c["effort_controller"].state == "inactive"
    # re-activated: its tick count starts again from 0
    wait_for(lambda: 1000 < _state(s).ticks < ticks, "the interaction controller ticking again")
    n = len(_ee(s))
    time.sleep(1.0)
    after = _ee(s)[n:]
    # re-activated: it holds where it found the arm (re-anchored, no jump back to the old target)
    drift = float(np.linalg.norm(after[-1] - after[0]))
    stack.switched = {"moved_under_effort_m": float(np.linalg.norm(after[0] - before)), "drift_after_m": drift}
    assert drift < 0.001, stack.switched
    # zero torque held the arm: the system compensated gravity
    assert stack.switched["moved_under_effort_m"] < 0.001, stack.switched


def test_heartbeat_silence_holds(stack):
    s = stack
    sup = s.procs["stop_supervisor"]
    timeout = float(s.cfg["safety"]["stop"]["timeout_s"])
    os.kill(sup.pid, signal.SIGSTOP)            # the supervisor falls silent (no heartbeat)
    try:
        wait_for(lambda: "stop_heartbeat_timeout" in _state(s).frozen, "the heartbeat timeout hold",
                 timeout_s=10 * timeout + 10)
        ev = {c.name: c.count for c in _state(s).events}
        assert ev["stop_heartbeat_timeouts"] >= 1
    finally:
        os.kill(sup.pid, signal.SIGCONT)
    # latched: a heartbeat alone does not release it (a reset after the silence does)
    time.sleep(2 * timeout)
    assert "stop_heartbeat_timeout" in _state(s).frozen


def test_every_process_ran_without_error(stack):
    s = stack
    assert all(q.poll() is None for q in s.procs.values()), {n: q.poll() for n, q in s.procs.items()}
    c = s.controllers()
    assert c["interaction_controller"].state == "active"
    print("ros2_control results:", {k: getattr(s, k, None) for k in ("square", "push", "admittance", "stop", "switched", "resets")})
