"""Authenticated controller-pose packets (docs/protocols.md "Authentication": the pulse packet's
framing, hri_pulse.core.auth) on the real arm_teleop node over real UDP, the key from
HRI_VR_KEY_FILE with HRI_VR_AUTH=required: sealed strokes move the FR3; forged tags, another key
under the same id, an unknown key id, unauthenticated packets and replays (a valid tag with an old
sequence number, also after the disconnection timeout) are dropped, counted in /diagnostics and
never move it; the bind rule at run time; `hri arm-emulate` seals with the key (the node
executable's refusal off loopback: tests/pulse/test_pulse_auth_udp.py)."""
from __future__ import annotations

import socket

import numpy as np
import pytest

from hri_arm_teleop.core import vr_packet as vp
from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
from hri_pulse.core.auth import Sealer
from hri_runtime.security.bind import StartupRefused
from hri_runtime.config.tree import load_robot_config
from hri_runtime.geometry import matrix_from_pose
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node
from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

SESSION = 1767225600000
PERIOD_S = 0.02


class Probe(Node):
    def __init__(self, **kw):
        super().__init__("arm_auth_probe", **kw)
        self.ee, self.diag = [], []
        self.create_subscription("geometry_msgs/msg/PoseStamped", "/ee_pose",
                                 lambda m: self.ee.append(matrix_from_pose(m)[:3, 3]), qos=10)
        self.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self.diag.append, qos=100)

    def link(self) -> dict:
        for arr in reversed(self.diag):
            for st in arr.status:
                if st.name == "hri_arm_teleop: vr link":
                    return {kv.key: kv.value for kv in st.values}
        raise AssertionError("no 'hri_arm_teleop: vr link' diagnostics")


class Hand:
    """A headset's controller: numbered poses (Unity frame), sealed by ``auth``, over real UDP."""

    def __init__(self, ctx, address, auth):
        self.ctx, self.address, self.auth = ctx, address, auth
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.seq, self.t, self.y = 0, 0.0, 1.2
        self.sent: list[bytes] = []

    def packet(self, clutch: bool) -> bytes:
        pose = vp.ControllerPose(self.seq, self.t, (0.0, self.y, 0.4), (0, 0, 0, 1), clutch=clutch)
        self.seq += 1
        return vp.encode(pose)

    def move(self, dy: float, seconds: float, clutch: bool, seal=None, extra=None) -> None:
        """Move the hand by ``dy`` (Unity +y: the arm's +z) in ``seconds``; each packet sealed by
        ``seal`` (default: this hand's key) and followed by ``extra(packet)`` datagrams if given."""
        n = int(round(seconds / PERIOD_S))
        y0 = self.y
        for k in range(1, n + 1):
            self.y = y0 + dy * k / n
            body = self.packet(clutch)
            data = (seal or self.auth.seal)(body)
            self.sent.append(data)
            self.sock.sendto(data, self.address)
            for e in (extra(body) if extra else ()):
                self.sock.sendto(e, self.address)
            self.ctx.spin_for(PERIOD_S)
            self.t += PERIOD_S


def test_only_authentic_fresh_packets_move_the_arm(vr_keys):
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)
    cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])
    assert cfg["pulse"]["auth"]["mode"] == "required"
    node = ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.vr.port": 0})
    probe = Probe(context=ctx)
    hand = Hand(ctx, node.vr_address, Sealer(vr_keys[1], 1, SESSION))
    try:
        ctx.spin_for(0.2)
        z0 = probe.ee[-1][2]
        hand.move(0.0, 0.2, clutch=True)
        hand.move(0.03, 1.0, clutch=True)                  # an authentic stroke: 3 cm up
        hand.move(0.0, 0.4, clutch=True)
        z1 = probe.ee[-1][2]
        assert z1 - z0 == pytest.approx(0.03, abs=0.003)
        lr = node.receiver.link
        assert lr.rejected_total == 0 and lr.accepted == len(hand.sent)
        recorded = list(hand.sent)

        # attacks while the hand holds the clutch still: 5 cm strokes the arm must not follow
        fake = Hand(ctx, node.vr_address, Sealer(vr_keys[2], 1, SESSION))            # another key, id 1
        fake.seq, fake.t, fake.y = hand.seq + 1000, hand.t, hand.y
        fake.move(0.05, 0.5, clutch=True, extra=lambda body: [
            Sealer(vr_keys[1], 9, SESSION).seal(body),                               # unknown key id
            Sealer(vr_keys[1], 1, SESSION).seal(body)[:-1] + b"\0",                  # forged tag
            body])                                                             # unauthenticated
        for data in recorded[10:60]:                                           # a replayed stroke
            hand.sock.sendto(data, node.vr_address)
            ctx.spin_for(PERIOD_S)
        ctx.spin_for(0.5)
        assert abs(probe.ee[-1][2] - z1) < 0.001
        n = 25
        assert lr.rejected["bad_tag"] == 2 * n and lr.rejected["bad_key_id"] == n and lr.rejected["bad_size"] == n
        assert lr.rejected["replayed"] == 50

        # the link times out (HOLD, the tracker forgets the stream); the recording, replayed again,
        # is still refused: the window never reopens
        ctx.spin_for(cfg["teleop"]["vr"]["disconnect_timeout_s"] + 0.5)
        assert lr.tracker.last is None
        for data in recorded:
            hand.sock.sendto(data, node.vr_address)
            ctx.spin_for(PERIOD_S)
        ctx.spin_for(0.5)
        assert abs(probe.ee[-1][2] - z1) < 0.001 and lr.rejected["replayed"] == 50 + len(recorded)
        ctx.spin_for(cfg["teleop"]["vr"]["diagnostics_period_s"])
        vals = probe.link()                                                    # what an operator sees
        assert vals["authenticated"] == "True"
        assert {k: int(vals[f"rejected_{k}"]) for k in ("bad_tag", "bad_key_id", "bad_size", "replayed")} == {
            "bad_tag": 2 * n, "bad_key_id": n, "bad_size": n, "replayed": 50 + len(recorded)}

        # the headset app restarts with the rotated key 2: a new session, numbers from 0, accepted
        hand = Hand(ctx, node.vr_address, Sealer(vr_keys[2], 2, SESSION + 60_000))
        hand.move(0.0, 0.2, clutch=False)
        hand.move(0.0, 0.2, clutch=True)
        hand.move(-0.02, 1.0, clutch=True)
        hand.move(0.0, 0.4, clutch=True)
        assert probe.ee[-1][2] - z1 == pytest.approx(-0.02, abs=0.003)
    finally:
        node.destroy_node()


def test_bind_rule_at_run_time_and_with_a_key(vr_keys, monkeypatch, tmp_path):
    """With the key a LAN bind is fine; teleop.vr.enabled set at run time re-checks the rule; a
    missing key file is one config error."""
    from hri_runtime.parameter import Parameter

    cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])
    node = ArmTeleopNode(cfg=cfg, context=InprocContext(),
                         parameters={"teleop.vr.bind_address": "0.0.0.0", "teleop.vr.port": 0})
    node.destroy_node()
    plain = load_robot_config("fr3", overrides=["teleop.output=joint", "pulse.auth.mode='off'"])
    with pytest.raises(StartupRefused, match="teleop.vr.bind_address '10.0.0.7' is not loopback"):
        ArmTeleopNode(cfg=plain, context=InprocContext(), parameters={"teleop.vr.bind_address": "10.0.0.7"})
    node = ArmTeleopNode(cfg=plain, context=InprocContext(),
                         parameters={"teleop.vr.bind_address": "0.0.0.0", "teleop.vr.enabled": False})
    [r] = node.set_parameters([Parameter("teleop.vr.enabled", True)])
    assert not r.successful and "is not loopback" in r.reason and node.receiver is None
    node.destroy_node()
    from hri_runtime.config.tree import ConfigError

    with pytest.raises(ConfigError, match="not a readable hex key"):
        ArmTeleopNode(cfg=cfg, context=InprocContext(),
                      parameters={"teleop.vr.port": 0, "pulse.auth.key_file": str(tmp_path / "absent")})


def test_arm_emulate_seals_with_the_key_of_the_environment(vr_keys):
    """`hri arm-emulate` (HRI_VR_AUTH=required, HRI_VR_KEY_FILE): 84-byte sealed datagrams, one
    session per run, every one accepted by the robot's receiver (real UDP on loopback)."""
    from hri_arm_teleop.emulate import main as emulate
    from hri_arm_teleop.vr_link import ArmVrReceiver

    cfg = load_robot_config("fr3")
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    receiver = ArmVrReceiver(rx, lambda: 0.0, cfg)
    try:
        for _ in range(2):                               # two runs: the second is a new session
            assert emulate(["--host", "127.0.0.1", "--port", str(rx.getsockname()[1]), "--seconds", "0.3"]) == 0
            got = receiver.poll()
            assert len(got) >= 10 and got[0].sequence == 0
        lr = receiver.link
        assert lr.rejected_total == 0 and lr.accepted == lr.received and len(receiver.auth.windows[1]) == 2
        assert lr.tracker.c.resets == 1                  # the second run re-based the tracker at once
    finally:
        receiver.close()
    assert np.isfinite(lr.accepted)
