"""The link policies of ``VrCommandCore`` without a socket: kernel flood filter, safe-stop and
stop-request outputs, feedback addressing, status."""
import struct

from hri_pulse.core import PulseConfig, VrCommandCore
from hri_pulse.core.flood import FloodFilter

HEADSET, STRANGER = ("127.0.0.1", 40000), ("127.0.0.2", 40001)


def raw(seq, state=0):
    return struct.pack("<fffiiffi", 0.0, 0.0, 0.0, state, 0, 50.0, 0.0, seq)


class KernelFilter:
    """The carrier side: records what the policy asked for; ``refuse`` = the OS says no."""

    def __init__(self, refuse=False):
        self.calls, self.refuse = [], refuse

    def __call__(self, host):
        self.calls.append(host)
        return not (self.refuse and host is not None)


def core_with(section, clock, kf, period=0.1):
    return VrCommandCore(PulseConfig.from_config(section), clock, stop_request_period_s=period, host_filter=kf)


def connect(core, clock, n=5):
    for s in range(n):
        core.on_datagram(raw(s), HEADSET)
        clock.advance(0.005)
        core.tick()
        core.flood_check(clock())


def test_flood_engages_for_the_hold_time_then_releases(pulse_section, clock):
    kf = KernelFilter()
    core = core_with(pulse_section, clock, kf)
    connect(core, clock)
    lk = pulse_section["link"]
    per_tick = int(lk["flood_filter_min_pps"] * 0.005) + 1
    for i in range(per_tick):                     # one tick's worth of foreign datagrams
        assert core.on_datagram(raw(1000 + i), STRANGER) is None
    clock.advance(0.005)
    core.flood_check(clock())
    assert kf.calls == ["127.0.0.1"] and core.flood.host == "127.0.0.1"
    t_release = clock() + lk["flood_filter_hold_s"]
    seq = 5
    while clock() < t_release - 1e-9:             # the headset keeps the link alive
        core.on_datagram(raw(seq), HEADSET)
        seq += 1
        clock.advance(0.04)
        core.tick()
        core.flood_check(clock())
    assert kf.calls == ["127.0.0.1", None] and core.flood.host is None
    assert core.status(clock())[1]["kernel_filter_engagements"] == 1


def test_below_the_flood_rate_or_refused_by_the_os_nothing_is_engaged(pulse_section, clock):
    kf = KernelFilter(refuse=True)
    core = core_with(pulse_section, clock, kf)
    connect(core, clock)
    core.on_datagram(raw(999), STRANGER)          # one stray datagram: no flood
    clock.advance(0.005)
    core.flood_check(clock())
    assert kf.calls == []
    for i in range(int(pulse_section["link"]["flood_filter_min_pps"])):
        core.on_datagram(raw(1000 + i), STRANGER)
    clock.advance(0.005)
    core.flood_check(clock())
    assert kf.calls == ["127.0.0.1"] and core.flood.host is None and core.flood.engagements == 0


def test_switching_the_filter_off_releases_at_once(pulse_section, clock):
    kf = KernelFilter()
    f = FloodFilter(100.0, 2.0, True, kf)
    f.update(0.0, 0, True, HEADSET)
    f.update(0.01, 5, True, HEADSET)
    assert f.host == "127.0.0.1"
    f.set_enabled(False)
    assert kf.calls == ["127.0.0.1", None] and f.host is None
    f.update(0.02, 100, True, HEADSET)
    assert kf.calls == ["127.0.0.1", None]        # off: never engaged again
    assert not FloodFilter(100.0, 2.0, True, None).enabled   # no kernel filter on this carrier


def test_link_loss_gives_one_safe_stop_edge_and_periodic_stop_requests(pulse_section, clock):
    core = core_with(pulse_section, clock, None, period=0.1)
    r = core.tick()
    assert r.safe_stop is None and not r.stop_request          # never connected: silent
    core.on_datagram(raw(0), HEADSET)
    assert core.tick().safe_stop is False                      # connected: published once
    assert core.tick().safe_stop is None
    edges, requests = [], []
    for _ in range(int((pulse_section["health"]["disconnect_timeout_s"] + 1.0) / 0.005)):
        clock.advance(0.005)
        r = core.tick()
        if r.safe_stop is not None:
            edges.append(r.safe_stop)
        if r.stop_request:
            requests.append(clock())
    assert edges == [True]
    assert len(requests) >= 9 and all(abs(b - a - 0.1) < 1e-6 for a, b in zip(requests, requests[1:]))
    assert core.stop_requests == len(requests)
    core.on_datagram(raw(0), HEADSET)                          # back: released, requests end
    r = core.tick()
    assert r.safe_stop is False and not r.stop_request


def test_feedback_goes_to_the_connected_peer_only(pulse_section, clock):
    core = core_with(pulse_section, clock, None)
    assert core.feedback("pose", clock()) is None
    core.on_datagram(raw(0), HEADSET)
    assert core.feedback("pose", clock()) == (HEADSET, 1)
    assert core.feedback("pose", clock()) == (HEADSET, 2)
    assert core.feedback("skeleton", clock()) == (HEADSET, 1)
    rep, vals = core.status(clock())
    assert rep.connected and vals["peer"] == HEADSET and vals["accepted"] == 1


def test_link_state_is_logged_on_change_only(pulse_section, clock):
    core = core_with(pulse_section, clock, None)
    lines = []
    for _ in range(60):                                        # a minute without a headset
        clock.advance(1.0)
        rep, vals = core.status(clock())
        line = core.log_line(clock(), rep, vals)
        if line is not None:
            lines.append(line)
    assert len(lines) == 1 and lines[0][0] == 1 and "waiting for the headset" in lines[0][1]
