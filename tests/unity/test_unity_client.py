"""The Unity client's C# protocol core (clients/unity/Runtime/Protocol) compiled with Debian's Mono
(`mcs`) and driven against the REAL nodes over real UDP: the byte layouts equal the Python codecs
(golden vectors), the pulses of a scripted headset reach `vr_interface_node` and each press is
executed exactly once (three 25 Hz cycles), the FR3 of `arm_teleop` follows two clutch strokes
(and holds while the hand re-centers), and the robot's feedback packets are decoded in C#.

The C# driver (clients/unity/Tools~/ProtocolDriver.cs) runs in lockstep with the nodes' simulated
clock: one stdin command per frame, answered once the datagram is sent. Without mcs/mono the test
is skipped with the install command (CI installs mono-mcs as it installs chromium)."""
from __future__ import annotations

import shutil
import struct
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config
from hri_runtime.geometry import matrix_from_pose
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "clients" / "unity"


@pytest.fixture(scope="module")
def driver_exe(tmp_path_factory):
    mcs, mono = shutil.which("mcs"), shutil.which("mono")
    if not (mcs and mono):
        msg = ("C# client NOT TESTED: Mono's mcs/mono not installed "
               "(apt-get install -y mono-mcs; .ci/run installs it)")
        warnings.warn(msg)
        pytest.skip(msg)
    out = tmp_path_factory.mktemp("unity") / "driver.exe"
    sources = sorted(str(p) for p in (CLIENT / "Runtime" / "Protocol").glob("*.cs"))
    sources.append(str(CLIENT / "Tools~" / "ProtocolDriver.cs"))
    r = subprocess.run([mcs, "-warnaserror", "-out:" + str(out), *sources], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return [mono, str(out)]


class Driver:
    """The C# driver process: one command, one answer line."""

    def __init__(self, cmd, link_timeout_s=3.0):
        self.p = subprocess.Popen(cmd + [str(link_timeout_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)

    def __call__(self, line: str) -> str:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline().strip()
        assert out and not out.startswith("error"), f"{line!r} -> {out!r}"
        return out

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.p.kill()


@pytest.fixture
def driver(driver_exe):
    d = Driver(driver_exe)
    yield d
    d.close()


def test_layouts_equal_the_python_codecs(driver):
    from hri_arm_teleop.core import vr_packet as vp
    from hri_pulse.core.auth import Sealer
    from hri_pulse.core.codec import UnityCodec, UnityPacket
    from hri_pulse.core.feedback import encode_pose, encode_skeleton

    _, pulse_hex, arm_hex, sealed_hex, sealed_arm_hex = driver("golden").split()
    assert bytes.fromhex(pulse_hex) == UnityCodec.encode(UnityPacket(10.5, -20.25, 3.0, 2, -1, 55.0, -90.0, 12345))
    assert bytes.fromhex(arm_hex) == vp.encode(vp.ControllerPose(
        42, 12.5, (0.1, 1.2, 0.4), (0.0, 0.0, 0.0, 1.0), clutch=True, tracking_valid=True, right_hand=True,
        buttons=vp.BUTTON_PRIMARY, trigger=0.25, grip=1.0))
    auth = Sealer(bytes(range(16)), 7, 1767225600000)           # one framing for both packets
    assert bytes.fromhex(sealed_hex) == auth.seal(bytes.fromhex(pulse_hex))
    assert bytes.fromhex(sealed_arm_hex) == auth.seal(bytes.fromhex(arm_hex))
    # the golden vector of docs/protocols.md "Authentication"
    key = bytes(range(32)).hex()
    assert driver(f"seal {key} 7 1767225600000 2 -1 42 1.0 2.0 3.0 50.0 0.0") == (
        "0000803f000000400000404002000000ffffffff00004842000000002a000000" "0207000000a8da769b010000"
        "c1ffd40f383c24da87b6f33bf2f07f6c")
    # feedback written by the robot's encoder, decoded in C#
    pose = encode_pose(5, 1.5, (1.0, 2.0, 3.0), (0.0, 0.0, 0.6, 0.8), valid=True)
    kind, *vals = driver(f"decode {pose.hex()}").split()
    assert kind == "pose" and [float(v) for v in vals] == [5, 1.5, 1, 1, 2, 3, 0, 0, np.float32(0.6), np.float32(0.8)]
    skel = encode_skeleton(9, 2.25, [(0.5, 0.25, 1.0), (-1.0, 0.0, 2.0)], 32)
    kind, *vals = driver(f"decode {skel.hex()}").split()
    assert kind == "skeleton" and [float(v) for v in vals] == [9, 2.25, 2, 0.5, 0.25, 1, -1, 0, 2]
    # a newer layout / garbage is rejected by cause, never misread
    assert driver(f"decode {(pose[:4] + bytes([2]) + pose[5:]).hex()}") == "rejected bad_version"
    assert driver(f"decode {pose[:40].hex()}") == "rejected bad_size"
    assert driver(f"decode {(b'XXXX' + pose[4:]).hex()}") == "rejected bad_magic"


class Recorder(Node):
    def __init__(self, topics, **kw):
        super().__init__("unity_test_recorder", **kw)
        self.cmd = []
        self.create_subscription("geometry_msgs/msg/Twist", topics["base_cmd"],
                                 lambda m: self.cmd.append((int(m.linear.x), int(m.angular.z))), qos=1000)
        self.odom = self.create_publisher("nav_msgs/msg/Odometry", topics["pose"], qos=10)

    def pulses(self):
        out, prev = [], (0, 0)
        for s, d in self.cmd:
            if s and (s, d) != prev:
                out.append([s, d, 1])
            elif s and out:
                out[-1][2] += 1
            prev = (s, d) if s else (0, 0)
        return [tuple(p) for p in out]


def test_pulses_reach_vr_interface_once_each_and_feedback_is_decoded(driver):
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode

    cfg = load_robot_config("tino")["pulse"]
    frame_s = 1.0 / cfg["health"]["expected_receive_rate_hz"]
    ctx = InprocContext(start_time_s=100.0)
    node = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0})
    rec = Recorder(cfg["topics"], context=ctx)
    odom = msgs.new("nav_msgs/msg/Odometry")
    odom.pose.pose.position.x, odom.pose.pose.position.y = 1.25, -0.5
    odom.pose.pose.orientation.w = 1.0
    try:
        driver(f"pulse-target 127.0.0.1 {node.port}")
        feedback = []

        def frames(n):
            for _ in range(n):
                driver("tick")
                ctx.spin_for(frame_s)
                rec.odom.publish(odom)
                ans = driver(f"feedback {ctx.now_s():.6f}")
                feedback.extend(x.strip() for x in ans.split("|")[1:])

        # a repeated press (3, -1) is a new command; a 1-frame tap (2, 0) is still a whole pulse
        script = [(0, 0, 10), (1, 0, 5), (0, 0, 10), (2, 1, 8), (0, 0, 10), (3, -1, 5), (0, 0, 10),
                  (3, -1, 5), (0, 0, 10), (2, 0, 1), (0, 0, 10)]
        for state, ang, n in script:
            assert driver(f"press {state} {ang}" if state else "release") == "ok"
            frames(n)
        assert rec.pulses() == [(1, 0, 3), (2, 1, 3), (3, -1, 3), (3, -1, 3), (2, 0, 3)]   # each press once
        assert node.core.link.rejected_total == 0
        # every press was a consistent pulse: accepted whole, none rejected, none held on
        assert node.core.check.accepted == 5 and node.core.check.rejected_total == 0
        assert node.core.check.held == 0
        # a second press while a pulse runs is refused by the client (never a split pulse)
        assert driver("press 1 0") == "ok"
        frames(1)
        assert driver("press 3 1") == "refused"
        frames(10)
        assert rec.pulses()[-1] == (1, 0, 3) and node.core.check.rejected_total == 0
        poses = [f.split() for f in feedback if f.startswith("pose")]
        assert len(poses) >= 10 and [int(p[1]) for p in poses] == sorted(int(p[1]) for p in poses)
        last = poses[-1]
        assert last[3] == "1" and float(last[4]) == 1.25 and float(last[5]) == -0.5
        assert any(f.startswith("skeleton") for f in feedback)
        status = driver(f"link {ctx.now_s():.6f}").split()
        assert status[1] == "Connected" and status[7] == "0"          # nothing rejected
        # the robot stops hearing the headset: no more feedback; after the timeout the app knows
        ctx.spin_for(cfg["health"]["disconnect_timeout_s"] + 0.5)
        driver(f"feedback {ctx.now_s():.6f}")
        assert driver(f"link {ctx.now_s() + 3.5:.6f}").split()[1] == "Lost"
    finally:
        node.destroy_node()


def arm_rig():
    """The FR3 of arm_teleop (IK path, MuJoCo inside, in-process runtime) with its stop authority;
    (cfg, ctx, node, ee positions seen on /ee_pose, packet period)."""
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)
    node = ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.vr.port": 0})
    ee = []
    probe = Node("unity_arm_probe", context=ctx)
    probe.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose", lambda m: ee.append(matrix_from_pose(m)[:3, 3]), qos=10)
    ctx.spin_for(0.2)
    return cfg, ctx, node, ee, 1.0 / cfg["teleop"]["vr"]["expected_rate_hz"]


def test_arm_follows_two_clutch_strokes(driver):
    cfg, ctx, node, ee, period_s = arm_rig()
    p0 = ee[-1].copy()
    driver(f"arm-target {node.vr_address[0]} {node.vr_address[1]}")
    hand = np.array([0.0, 1.2, 0.4])            # Unity tracking frame (x right, y up, z forward)
    t = 0.0

    def move(dx_unity, seconds, clutch):
        nonlocal t, hand
        n = int(round(seconds / period_s))
        start = hand.copy()
        for k in range(1, n + 1):
            hand = start + np.array([dx_unity * k / n, 0.0, 0.0])
            driver(f"arm {t:.4f} {hand[0]:.6f} {hand[1]:.6f} {hand[2]:.6f} 0 0 0 1 {1 if clutch else 0}")
            ctx.spin_for(period_s)
            t += period_s

    move(0.0, 0.4, clutch=False)
    move(0.0, 0.2, clutch=True)
    move(0.10, 2.0, clutch=True)             # stroke 1: 10 cm to the right (ROS -y)
    move(0.0, 0.6, clutch=False)             # release: the arm holds
    p1 = ee[-1].copy()
    move(-0.10, 1.0, clutch=False)           # re-center the hand, clutch released
    move(0.0, 0.4, clutch=False)
    assert np.allclose(ee[-1], p1, atol=0.003)                       # held while re-centering
    move(0.0, 0.2, clutch=True)
    move(0.10, 2.0, clutch=True)             # stroke 2
    move(0.0, 0.8, clutch=False)
    p2 = ee[-1].copy()
    assert p1[1] - p0[1] == pytest.approx(-0.10, abs=0.01)
    assert p2[1] - p0[1] == pytest.approx(-0.20, abs=0.015)          # two strokes add up
    assert abs(p2[0] - p0[0]) < 0.01 and abs(p2[2] - p0[2]) < 0.01
    assert node.receiver.stats.accepted >= 0.95 * (t / period_s)


def test_authenticated_pulses_are_accepted_by_a_robot_that_requires_them(driver, tmp_path, monkeypatch):
    """pulse.auth.mode: required (docs/protocols.md "Authentication", the key from HRI_VR_KEY_FILE):
    the C# PacketAuth-sealed packets are executed, an unsealed 32-byte packet is rejected
    (bad_size) and never moves."""
    import socket

    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode

    key = bytes(range(100, 132)).hex()
    (tmp_path / "vr.keys").write_text(f"9: {key}\n")
    monkeypatch.setenv("HRI_VR_AUTH", "required")
    monkeypatch.setenv("HRI_VR_KEY_FILE", str(tmp_path / "vr.keys"))
    cfg = load_robot_config("tino")["pulse"]
    assert cfg["auth"]["mode"] == "required"
    frame_s = 1.0 / cfg["health"]["expected_receive_rate_hz"]
    ctx = InprocContext(start_time_s=100.0)
    node = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0})
    rec = Recorder(cfg["topics"], context=ctx)
    try:
        driver(f"pulse-target 127.0.0.1 {node.port}")
        driver(f"auth {key} 9")
        for state, ang, n in [(0, 0, 10), (2, 1, 5), (0, 0, 10)]:
            driver(f"press {state} {ang}" if state else "release")
            for _ in range(n):
                driver("tick")
                ctx.spin_for(frame_s)
        assert rec.pulses() == [(2, 1, 3)]
        rejected = node.core.link.rejected_total
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:   # an unsealed packet, same host
            s.sendto(struct.pack("<fffiiffi", 0, 0, 0, 3, 0, 0, 0, 1000), ("127.0.0.1", node.port))
        ctx.spin_for(4 * frame_s)
        assert node.core.link.rejected_total == rejected + 1 and node.core.link.rejected["bad_size"] >= 1
        assert rec.pulses() == [(2, 1, 3)]
    finally:
        node.destroy_node()


def test_authenticated_arm_poses_and_the_attacks_the_robot_drops(driver, tmp_path, monkeypatch):
    """The C# ArmPoseSender sealed with PacketAuth (the pulse packet's framing) drives arm_teleop
    (HRI_VR_AUTH=required): the arm follows a stroke; the same stroke sealed with another key
    (bad_tag) and under an unknown key id (bad_key_id) does not move it; a datagram sent again
    (arm-resend: valid tag, old sequence) is dropped as replayed; a restarted client (new
    session, numbers from 0) is accepted at once. Counted as the node's /diagnostics show them."""
    key, other = bytes(range(32)).hex(), bytes(range(50, 82)).hex()
    (tmp_path / "vr.keys").write_text(f"3: {key}\n")
    monkeypatch.setenv("HRI_VR_AUTH", "required")
    monkeypatch.setenv("HRI_VR_KEY_FILE", str(tmp_path / "vr.keys"))
    cfg, ctx, node, ee, period_s = arm_rig()
    try:
        assert node.receiver.auth is not None
        driver(f"arm-target {node.vr_address[0]} {node.vr_address[1]}")
        t, y = [0.0], [1.2]

        def stroke(dy, n, clutch=True):
            y0 = y[0]
            for k in range(1, n + 1):
                y[0] = y0 + dy * k / n
                driver(f"arm {t[0]:.4f} 0 {y[0]:.6f} 0.4 0 0 0 1 {1 if clutch else 0}")
                ctx.spin_for(period_s)
                t[0] += period_s

        driver(f"arm-auth {key} 3")
        stroke(0.0, 10)
        stroke(0.03, 50)                                  # 3 cm up (Unity +y = base +z)
        stroke(0.0, 20)
        z1 = ee[-1][2]
        lr = node.receiver.link
        assert lr.rejected_total == 0 and lr.accepted == 80
        for _ in range(5):
            driver("arm-resend")                          # the last datagram again: a replay
            ctx.spin_for(period_s)
        driver(f"arm-auth {other} 3")                     # another key under id 3
        stroke(0.05, 25)
        driver(f"arm-auth {key} 4")                       # a key id the robot does not have
        stroke(0.05, 25)
        ctx.spin_for(0.5)
        assert abs(ee[-1][2] - z1) < 0.001
        assert (lr.rejected["replayed"], lr.rejected["bad_tag"], lr.rejected["bad_key_id"]) == (5, 25, 25)
        ctx.spin_for(cfg["teleop"]["vr"]["diagnostics_period_s"])
        vals = {kv.key: kv.value for st in node.diag.statuses() for kv in [*st.to_msg().values]}
        assert (vals["rejected_replayed"], vals["rejected_bad_tag"], vals["rejected_bad_key_id"]) == ("5", "25", "25")
        # the app restarts: a new session with its numbers from 0 -- accepted, the arm follows
        driver(f"arm-auth {key} 3")
        driver("arm-restart")
        stroke(0.0, 10, clutch=False)                     # the hand is elsewhere now: released, then
        stroke(0.0, 10)                                   # the clutch re-engages there
        stroke(-0.02, 50)
        stroke(0.0, 20)
        assert ee[-1][2] - z1 == pytest.approx(-0.02, abs=0.003)
        assert lr.rejected["restart_pending"] == 0
    finally:
        node.destroy_node()
