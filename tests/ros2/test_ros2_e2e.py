"""End-to-end on a real ROS 2 with the rclpy backend (skipped without rclpy: see conftest.py).

The same node code and launch files as the zenoh/in-process tests, on rmw: typed hri_interfaces
messages and the PID Tune service between two rclpy contexts, `hri launch` of the Tino chain and
the arm chain with HRI_TRANSPORT=rclpy driven by the emulators over real UDP, the RIHS01 hashes
of every hri_interfaces type against the ones rosidl generated, and a clean SIGINT shutdown
(exit 0, no traceback) of every process. Waits are bounded guards, no duration is asserted.
"""
from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hri_runtime import msgs, wire
from hri_runtime.config import load_robot_config
from hri_runtime.node import Node

REPO = Path(__file__).resolve().parents[2]
HRI = [sys.executable, "-m", "hri_runtime.cli"]
WAIT_S = 90.0


def free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, what: str, timeout_s: float = WAIT_S) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def rclpy_ctx():
    from hri_runtime.rclpy_backend import RclpyContext

    made = []

    def make():
        ctx = RclpyContext()
        ctx.spin_in_background()
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        ctx.shutdown()
        ctx.close()


@pytest.fixture
def domain_env():
    """An isolated ROS domain for the processes of one test (other agents' ROS graphs stay apart)."""
    dom = str(20 + os.getpid() % 80)
    old = os.environ.get("ROS_DOMAIN_ID")
    os.environ["ROS_DOMAIN_ID"] = dom
    yield dict(os.environ, HRI_TRANSPORT="rclpy", ROS_DOMAIN_ID=dom, PYTHONUNBUFFERED="1")
    if old is None:
        os.environ.pop("ROS_DOMAIN_ID", None)
    else:
        os.environ["ROS_DOMAIN_ID"] = old


def stop_launcher(proc: subprocess.Popen) -> str:
    """SIGINT to the launcher's process group (a terminal's Ctrl-C); its output."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    text, _ = proc.communicate(timeout=WAIT_S)
    return text


def assert_clean_exit(proc: subprocess.Popen, text: str) -> None:
    assert proc.returncode == 0, text[-4000:]
    for bad in ("Traceback", "KeyboardInterrupt", "terminate called", "exited with code -", "died"):
        assert bad not in text, f"{bad!r} in the launch output:\n{text[-4000:]}"


# ------------------------------------------------------------------------------ interfaces
def test_rihs01_of_every_hri_interfaces_type_equals_rosidl(domain_env):
    """rosidl_generator_type_description writes share/hri_interfaces/<kind>/<X>.json with the
    type hash; the no-ROS runtime computes it from the same .msg/.srv files."""
    from ament_index_python.packages import get_package_share_directory

    share = Path(get_package_share_directory("hri_interfaces"))
    files = sorted(share.glob("msg/*.json")) + sorted(share.glob("srv/*.json"))
    assert files, f"no rosidl type descriptions under {share}"
    for f in files:
        kind, name = f.parent.name, f.stem
        expected = next(h["hash_string"] for h in json.loads(f.read_text())["type_hashes"]
                        if h["type_name"] == f"hri_interfaces/{kind}/{name}")
        t = f"hri_interfaces/{kind}/{name}"
        if kind == "srv":
            msgs.srv_types(t)
        else:
            msgs.get(t)
        assert wire.type_hash(t, msgs.typestore()) == expected, t


def test_cdr_of_hri_interfaces_equals_rclpy_serialization():
    """Our CDR of each hri_interfaces message (fields filled) is byte-identical with rclpy's, both ways."""
    from rclpy.serialization import deserialize_message, serialize_message
    from rosidl_runtime_py.convert import message_to_ordereddict
    from rosidl_runtime_py.set_message import set_message_fields
    from rosidl_runtime_py.utilities import get_message

    samples = {
        "InteractionState": dict(mode="admittance", flags=["hold", "singular"], energy_j=0.5, ticks=7,
                                 admittance_lambda=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
                                 rejected=[dict(name="non_finite", count=2)], period_p99_us=float("nan")),
        "AtomicState": dict(state=3, direction=-1, locked=True, fault="link_safe_stop", queue=2),
        "PidTuningStatus": dict(robot="humanoid_arm", joints=["hand"], recording=True,
                                gains=[dict(joint="hand", kp=2.0, ki=0.5, kd=0.05, acknowledged=True)]),
        "TuningProgress": dict(phase="relay", joint="hand", fraction=0.25, detail="cycle 2 of 8"),
        "TeleopMode": dict(mode="SAFETY_HOLD", reason="workspace"),
        "SafetyStop": dict(stopped=True, reason="console", sources=["console"], heartbeat_seq=9),
        "StopRequest": dict(source="console", reason="operator"),
    }
    for name, fields in samples.items():
        t = f"hri_interfaces/msg/{name}"
        fields = {k: v for k, v in fields.items() if k in msgs.get(t).__dataclass_fields__}
        theirs = get_message(t)()
        set_message_fields(theirs, json.loads(json.dumps(fields)))
        raw = bytes(serialize_message(theirs))
        ours = msgs.from_dict(t, json.loads(json.dumps(fields)))
        assert msgs.serialize(ours) == raw, name
        back = deserialize_message(msgs.serialize(ours), get_message(t))
        assert json.dumps(message_to_ordereddict(back)) == json.dumps(message_to_ordereddict(theirs)), name


def test_typed_state_and_tune_service_between_rclpy_contexts(rclpy_ctx, domain_env):
    a, b = rclpy_ctx(), rclpy_ctx()
    got, lock = [], threading.Lock()
    pub_node, sub_node = Node("ros2_state_pub", context=a), Node("ros2_state_sub", context=b)
    pub = pub_node.create_publisher("hri_interfaces/msg/InteractionState", "/ros2_test/state", qos=10)

    def on_state(m):
        with lock:
            got.append(m)

    sub_node.create_subscription("hri_interfaces/msg/InteractionState", "/ros2_test/state", on_state, qos=10)
    sent = msgs.new("hri_interfaces/msg/InteractionState", mode="admittance", flags=["hold"], energy_j=0.25,
                    rejected=[msgs.new("hri_interfaces/msg/Count", name="non_finite", count=3)])

    def received():
        pub.publish(sent)
        with lock:
            return bool(got)

    wait_for(received, "an InteractionState across rmw", 30.0)
    m = got[0]
    assert (m.mode, list(m.flags), m.energy_j, [(c.name, c.count) for c in m.rejected]) == \
        ("admittance", ["hold"], 0.25, [("non_finite", 3)])

    def on_tune(req, resp):
        resp.success = req.joint == "hand" and list(req.gains) == [1.0, 0.0, 0.1]
        resp.message = f"{req.joint} {req.heuristic}"
        return resp

    pub_node.create_service("hri_interfaces/srv/Tune", "/ros2_test/apply", on_tune)
    cli = sub_node.create_client("hri_interfaces/srv/Tune", "/ros2_test/apply")
    wait_for(cli.service_is_ready, "the Tune service", 30.0)
    fut = cli.call_async(msgs.new("hri_interfaces/srv/Tune_Request", joint="hand", heuristic="classic",
                                  gains=[1.0, 0.0, 0.1]))
    wait_for(fut.done, "the Tune response", 30.0)
    r = fut.result()
    assert r.success and r.message == "hand classic"


# ------------------------------------------------------------------------------ chains
class TinoWatch(Node):
    def __init__(self, T, **kw):
        super().__init__("ros2_tino_watch", **kw)
        self.states, self.odom, self.rpm = [], [], []
        self.create_subscription("hri_interfaces/msg/AtomicState", T["atomic_state"],
                                 lambda m: self.states.append((int(m.state), m.fault)), qos=10000)
        self.create_subscription("nav_msgs/msg/Odometry", T["odom"], self.odom.append, qos=100)
        self.create_subscription("std_msgs/msg/Float64", T["leg_rpm"], lambda m: self.rpm.append(m.data), qos=1000)

    def movements(self) -> list[int]:
        out, prev = [], 0
        for s, _ in list(self.states):
            if s != prev and s != 0:
                out.append(s)
            prev = s
        return out


def test_tino_chain_on_rclpy_moves_and_latches_the_link_stop(rclpy_ctx, domain_env):
    from hri_pulse import emulator

    cfg = load_robot_config("tino")
    T = cfg["atomic"]["topics"]
    udp = free_port(socket.SOCK_DGRAM)
    launcher = subprocess.Popen(HRI + ["launch", str(REPO / "launch/tino.launch.yaml"), f"vr_port:={udp}"],
                                env=domain_env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
    try:
        w = TinoWatch(T, context=rclpy_ctx())
        wait_for(lambda: launcher.poll() is None and w.states and w.odom, "atomic and tino_sim on rmw")
        time.sleep(0.5)      # let atomic see a few leg states (not an assertion)
        plan = emulator.plan({"duration_s": 5.0, "actions": [{"at_s": 0.3, "state": 3, "angular": 1},
                                                             {"at_s": 2.6, "state": 1}],
                              "impairments": {"stop_at_s": 4.6}}, cfg["pulse"]["emulator"], seed=3)
        with open(os.devnull, "w") as devnull:
            emulator.send_plan(plan, "127.0.0.1", udp, out=devnull)
        wait_for(lambda: w.states and w.states[-1][1] == "link_safe_stop", "the link_safe_stop fault")
        assert w.movements() == [3, 1]
        q = w.odom[-1].pose.pose.orientation
        assert abs(2 * math.atan2(q.z, q.w)) > 0.1          # the base turned
    finally:
        text = stop_launcher(launcher)
    assert_clean_exit(launcher, text)


class ArmWatch(Node):
    def __init__(self, **kw):
        super().__init__("ros2_arm_watch", **kw)
        self.lock = threading.Lock()
        self.ee, self.modes = [], []
        self.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose", self.on_ee, qos=10)
        self.create_subscription("hri_interfaces/msg/TeleopMode", "/teleop/mode", self.on_mode, qos=10)

    def on_ee(self, m):
        with self.lock:
            self.ee.append((m.pose.position.x, m.pose.position.y, m.pose.position.z))

    def on_mode(self, m):
        with self.lock:
            self.modes.append(m.mode)

    def last(self):
        with self.lock:
            return self.ee[-1] if self.ee else None


@pytest.mark.parametrize("robot", ["fr3", "ur5e", "iiwa14"])
def test_arm_chain_on_rclpy_follows_the_emulated_operator(rclpy_ctx, domain_env, robot):
    vr_port = free_port(socket.SOCK_DGRAM)
    launcher = subprocess.Popen(HRI + ["launch", str(REPO / "launch" / f"{robot}.launch.yaml"), f"vr_port:={vr_port}"],
                                env=domain_env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
    try:
        w = ArmWatch(context=rclpy_ctx())
        wait_for(lambda: launcher.poll() is None and w.last() is not None, "/ee_pose on rmw")
        p0 = w.last()
        from hri_arm_teleop.emulate import main as emulate

        assert emulate(["--host", "127.0.0.1", "--port", str(vr_port), "--seconds", "3.2"]) == 0
        wait_for(lambda: p0[1] - w.last()[1] > 0.08, "the EE following the -y stroke", 60.0)
        with w.lock:
            assert "TRACK" in w.modes
    finally:
        text = stop_launcher(launcher)
    assert_clean_exit(launcher, text)


# ------------------------------------------------------------------------------ ros2 launch
@pytest.mark.parametrize("robot", ["tino", "fr3", "ur5e", "iiwa14"])
def test_ros2_launch_of_every_robot_runs_and_stops_cleanly(rclpy_ctx, domain_env, robot):
    """`ros2 launch launch/<robot>.launch.yaml` (ROS 2's own launcher, nodes from the workspace's
    install/), data on the robot's state topic, then a terminal Ctrl-C: exit 0, no traceback."""
    import shutil

    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        installed = bool(get_package_prefix("hri_pulse"))
    except PackageNotFoundError:
        installed = False
    if shutil.which("ros2") is None or not installed:
        pytest.skip("ROS 2 NOT TESTED: `ros2` or the workspace's install/ is not sourced "
                    "(colcon build, then `. install/setup.bash`)")
    topic, typ = (("/atomic/state", "hri_interfaces/msg/AtomicState") if robot == "tino"
                  else ("/ee_pose", "geometry_msgs/msg/PoseStamped"))
    got = []
    w = Node(f"ros2_launch_watch_{robot}", context=rclpy_ctx())
    w.create_subscription(typ, topic, got.append, qos=10)
    proc = subprocess.Popen(["ros2", "launch", str(REPO / "launch" / f"{robot}.launch.yaml"),
                             f"vr_port:={free_port(socket.SOCK_DGRAM)}"], env=domain_env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_for(lambda: proc.poll() is None and got, f"{topic} from ros2 launch of {robot}")
    finally:
        text = stop_launcher(proc)
    assert proc.returncode == 0, text[-4000:]
    for bad in ("Traceback", "KeyboardInterrupt", "terminate called", "exit code -", "[ERROR]"):
        assert bad not in text, f"{bad!r} in the ros2 launch output:\n{text[-4000:]}"
