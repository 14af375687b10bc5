import struct

import pytest
from hri_pulse.core import (GamepadMapper, GamepadParams, PulseConfig, PulseGenerator,
                            PulseParams, VrCommandCore)

PEER = ("127.0.0.1", 50000)


def raw(seq, state=0, ang=0, head=(0.0, 0.0, 0.0)):
    return struct.pack("<fffiiffi", *head, state, ang, 50.0, 0.0, seq)


class Rig:
    """VR core driven like the node: one packet per 40 ms, ticks every 5 ms."""

    def __init__(self, section, clock):
        self.clock = clock
        self.core = VrCommandCore(PulseConfig.from_config(section), clock)
        self.out = []
        self.seq = 0

    def step(self, dt=0.005):
        self.clock.advance(dt)
        r = self.core.tick()
        self.out += r.emissions
        return r

    def send(self, state=0, ang=0, head=(0.0, 0.0, 0.0), seq=None):
        s = self.seq if seq is None else seq
        self.seq = s + 1
        return self.core.on_datagram(raw(s, state, ang, head), PEER)

    def stream(self, values):
        for v in values:
            self.send(*v) if isinstance(v, tuple) else self.send(v)
            for _ in range(8):
                self.step()


def test_held_vr_button_is_one_pulse_with_head_captured(pulse_section, clock):
    rig = Rig(pulse_section, clock)
    rig.stream([0] * 5)
    n = pulse_section["check"]["messages"]
    t_cmd = clock() + (n - 1) * 0.04           # decided at the pulse's last message (80 ms later)
    rig.stream([((2, 1, (10.0, -20.0, 5.0)))] + [(2, 1)] * 30 + [0] * 10)
    pulse = [e for e in rig.out if e.state]
    assert [(e.state, e.direction) for e in pulse] == [(2, 1)] * 3
    assert [round(e.t_s - t_cmd, 6) for e in pulse] == [0.0, 0.04, 0.08]
    # the head angles of the pulse's first message
    assert pulse[0].command.head_rad == pytest.approx((0.17453, -0.34907, 0.08727), abs=1e-4)
    assert rig.core.check.held == 30 + 1 - n


def test_duplicate_and_stale_packets_never_command(pulse_section, clock):
    rig = Rig(pulse_section, clock)
    rig.stream([0] * 3)                        # seq 0..2
    rig.core.on_datagram(raw(5, 3, 0), PEER)   # a pulse at seq 5..7
    rig.core.on_datagram(raw(5, 3, 0), PEER)   # duplicate
    rig.core.on_datagram(raw(4, 1, 0), PEER)   # stale command: dropped
    rig.core.on_datagram(raw(6, 3, 0), PEER)
    rig.core.on_datagram(raw(6, 2, 0), PEER)   # duplicate number, other state: dropped
    rig.core.on_datagram(raw(7, 3, 0), PEER)
    for _ in range(100):
        rig.step()
    assert [e.state for e in rig.out if e.state] == [3, 3, 3]
    assert rig.core.check.accepted == 1 and rig.core.check.rejected_total == 0


def test_link_loss_safe_stop_within_timeout_plus_one_period(pulse_section, clock):
    rig = Rig(pulse_section, clock)
    rig.stream([0] * 5)
    t_last = clock() - 8 * 0.005               # last packet time
    rig.send(1, 0)
    t_last = clock()
    stop_t = None
    for _ in range(1000):
        r = rig.step()
        if r.event == "disconnected":
            stop_t = clock()
            assert r.emissions and r.emissions[-1].state == 0    # idle published at once
            break
    timeout = pulse_section["health"]["disconnect_timeout_s"]
    period = 1.0 / pulse_section["pulse"]["rate_hz"]
    assert stop_t is not None and timeout < stop_t - t_last <= timeout + period
    assert rig.core.safe_stop
    rig.send(0)                                # reconnect clears it
    assert not rig.core.safe_stop


def test_restart_mid_session_accepts_new_app(pulse_section, clock):
    rig = Rig(pulse_section, clock)
    rig.seq = 10_000
    rig.stream([0] * 10)
    rig.seq = 0                                # Unity restarted: counter from 0, no timeout
    rig.stream([0] * 3 + [1] * 3 + [0] * 10)
    assert [e.state for e in rig.out if e.state] == [1, 1, 1]
    assert rig.core.link.tracker.c.restarts == 1


def test_gamepad_and_vr_give_identical_messages(pulse_section, clock):
    """Same press sequence through the gamepad mapper and the VR stream -> the same messages, the
    VR ones (messages - 1) packet periods later: the headset pulse is checked whole first."""
    presses = ([set(), {"x"}, {"x"}, {"x"}, set(), set(), set(), set(), set(), {"b", "rb"}, {"b", "rb"},
                {"b", "rb"}, set()] + [set()] * 10)
    gm = GamepadMapper(GamepadParams.from_config(pulse_section["gamepad"]))
    gen = PulseGenerator(PulseParams.from_config(pulse_section["pulse"]), start_s=clock())
    vr = Rig(pulse_section, clock.__class__(clock()))
    pad_out = []
    faces = {"x": 1, "y": 2, "b": 3}
    for pressed in presses:
        clock.advance(0.04)
        t = clock()
        cmd = gm.update(pressed)
        if cmd is not None:
            gen.request(cmd, t)
        pad_out += gen.due(t)
        st = max([faces[b] for b in pressed if b in faces], default=0)
        ang = 1 if "rb" in pressed else 0
        vr.clock.set_ns(clock.now_ns())
        vr.send(st, ang)
        vr.out += vr.core.tick().emissions
    lag = (pulse_section["check"]["messages"] - 1) * 0.04
    strip = lambda em, dt=0.0: [(round(e.t_s + dt, 6), e.state, e.direction) for e in em if e.state]
    assert strip(pad_out, lag) == strip(vr.out)
    assert [s for _, s, _ in strip(pad_out)] == [1, 1, 1, 3, 3, 3]


def test_audio_and_head_of_a_packet_in_radians_and_the_report_with_the_nodes_values(pulse_section, clock):
    import math

    rig = Rig(pulse_section, clock)
    pkt = rig.core.on_datagram(struct.pack("<fffiiffi", 90.0, -45.0, 0.0, 0, 0, 0.5, 30.0, 0), PEER)
    assert rig.core.head_rad(pkt) == pytest.approx((math.pi / 2, -math.pi / 4, 0.0))
    assert rig.core.audio(pkt) == pytest.approx((0.5, math.pi / 6))
    rep, vals, line = rig.core.report(clock(), tx_active=False, flood_budget_hits=3)
    assert vals["flood_budget_hits"] == 3 and vals["accepted"] == 1 and vals["connected"] == rep.connected
    assert line is not None and line[1].startswith("vr link")       # the first report is logged
    assert rig.core.report(clock(), tx_active=False)[2] is None       # no change: not again
