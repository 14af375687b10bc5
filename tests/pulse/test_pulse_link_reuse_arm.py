"""hri_pulse's LinkReceiver runs the arm teleop's controller-pose packet unchanged (one receiver for both):
its codec object plugs in as is (``decode``/``sequence``/``causes``, rejecting with ``PacketRejected``), with the arm's own rate and
timeout from its config section."""
import dataclasses

from hri_arm_teleop.core import vr_packet as vp
from hri_pulse.core import HealthParams, LinkParams, LinkReceiver, SequenceParams
from hri_runtime.config.tree import load_robot_config


def test_arm_codec_in_pulse_link_receiver():
    cfg = load_robot_config("fr3")
    vr = cfg["teleop"]["vr"]
    health = dataclasses.replace(HealthParams.from_config(cfg["pulse"]["health"]),
                                 expected_receive_rate_hz=vr["expected_rate_hz"],
                                 disconnect_timeout_s=vr["disconnect_timeout_s"])
    t = [0.0]
    lr = LinkReceiver(vp.ControllerPoseCodec(), lambda: t[0], SequenceParams.from_config(cfg["pulse"]["sequence"]),
                      health, LinkParams.from_config(cfg["pulse"]["link"]), name="arm_vr")
    peer = ("127.0.0.1", 6000)

    def pose(seq):
        return vp.encode(vp.ControllerPose(seq, 0.0, (0.1, 1.0, 0.3), (0.0, 0.0, 0.0, 1.0)))

    got = []
    for seq in [0, 1, 1, 3, 2, 4]:                     # duplicate, gap, stale
        t[0] += 1.0 / vr["expected_rate_hz"]
        p = lr.handle(pose(seq), peer)
        got.append(None if p is None else p.sequence)
    assert got == [0, 1, None, 3, None, 4]
    assert lr.handle(b"HRAC" + bytes(52), peer) is None     # bad version, rejected by the arm's codec
    assert lr.rejected["bad_version"] == 1 and lr.rejected["duplicate"] == 1 and lr.rejected["stale"] == 1
    assert lr.tracker.c.gaps_minor == 1
    t[0] += vr["disconnect_timeout_s"] + 0.01
    assert lr.update() == "disconnected"
