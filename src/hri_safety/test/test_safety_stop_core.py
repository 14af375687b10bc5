"""The latch and the actuator-side watchdog (pure logic, simulated time)."""
from __future__ import annotations

import pytest

from hri_safety.core.stop import HEARTBEAT_TIMEOUT, NO_HEARTBEAT, StopLatch, StopParams, StopWatch, sanitize_source

P = StopParams(heartbeat_hz=10.0, timeout_s=0.5)


def test_params_from_config_and_bound():
    from hri_runtime.config.tree import load_robot_config

    for robot in ("tino", "fr3"):
        p = StopParams.from_config(load_robot_config(robot)["safety"]["stop"])
        assert p.timeout_s > p.period_s
        assert p.bound_s == pytest.approx(p.timeout_s + p.period_s)


@pytest.mark.parametrize("hz,timeout", [(10.0, 0.1), (10.0, 0.05), (0.0, 1.0), (5.0, -1.0)])
def test_params_refuse_a_timeout_within_one_period(hz, timeout):
    with pytest.raises(ValueError):
        StopParams(heartbeat_hz=hz, timeout_s=timeout)


def test_latch_holds_every_source_until_an_explicit_reset():
    lt = StopLatch(P)
    assert not lt.stopped and lt.reason == ""
    assert lt.request("console", "SAFE STOP", 1.0)
    assert not lt.request("console", "again", 1.1)           # a repeat changes nothing
    assert lt.request("link_loss", "headset silent", 1.2)
    assert lt.stopped and lt.sources == ["console", "link_loss"]
    assert lt.reason == "console: SAFE STOP"                  # the first cause stays the reason
    for t in range(100):                                      # time alone never releases
        assert lt.stopped, t
    ok, line = lt.reset(5.0)
    assert ok and "console" in line and "link_loss" in line
    assert not lt.stopped and lt.reset_count == 1
    lt.reset(6.0)                                             # a reset when nothing is latched still counts
    assert lt.reset_count == 2


def test_reset_is_refused_while_a_source_is_still_requested():
    lt = StopLatch(P)
    lt.request("link_loss", "headset silent", 0.0)
    for k in range(1, 11):                     # re-requested every period while the link is lost
        lt.request("link_loss", "headset silent", k * P.period_s)
    ok, line = lt.reset(1.0 + P.period_s / 2)
    assert not ok and "link_loss" in line and lt.stopped and lt.reset_count == 0 and lt.refused_resets == 1
    ok, _ = lt.reset(1.0 + 2.5 * P.period_s)   # the requests ended over two periods ago: the cause is gone
    assert ok and not lt.stopped and lt.reset_count == 1


@pytest.mark.parametrize("bad", ["", "Console!", "x" * 40, None, 42, "../etc", "a b"])
def test_a_malformed_request_still_stops(bad):
    lt = StopLatch(P)
    assert lt.request(bad, "\n".join(["line"] * 100), 0.0)
    assert lt.stopped and lt.sources == ["unknown"]
    assert "\n" not in lt.reason and len(lt.reason) <= 240
    assert sanitize_source("serial_fault") == "serial_fault"


def test_latch_is_bounded():
    lt = StopLatch(StopParams(10.0, 0.5, max_sources=4))
    for i in range(100):
        lt.request(f"s{i}", "", 0.0)
    assert lt.stopped and len(lt.sources) == 4 and lt.sources[-1] == "other" and lt.folded == 97


def _beat(w: StopWatch, t: float, seq: int, stopped=False, reason="", rc=0) -> bool:
    return w.on_state(stopped, reason, ["console"] if stopped else [], seq, rc, t)


def test_watch_is_stopped_before_the_first_heartbeat_but_not_latched():
    w = StopWatch(P)
    assert w.stopped and w.reason == NO_HEARTBEAT
    assert not w.check(10.0)                     # no heartbeat ever: stays stopped, no timeout latch
    assert w.stopped and w.timeouts == 0
    assert _beat(w, 10.0, 0)                     # the supervisor appears: free to move
    assert not w.stopped and w.reason == ""


def test_watch_follows_the_supervisor():
    w = StopWatch(P)
    _beat(w, 0.0, 0)
    assert _beat(w, 0.1, 1, stopped=True, reason="console: SAFE STOP")
    assert w.stopped and w.reason == "console: SAFE STOP"
    assert _beat(w, 0.2, 2, stopped=False, rc=1)
    assert not w.stopped


def test_silence_stops_within_timeout_plus_one_period_and_latches():
    """Heartbeats every period until t = 1.0, then silence; checks every period (the listener's
    timer): stopped at the first check later than timeout_s after the last heartbeat."""
    w = StopWatch(P)
    t, seq = 0.0, 0
    stop_t = None
    dt = P.period_s
    for k in range(60):
        t = k * dt
        if t <= 1.0 + 1e-9:
            _beat(w, t, seq)
            seq += 1
        w.check(t)
        if w.stopped and stop_t is None:
            stop_t = t
    assert stop_t is not None
    assert 1.0 + P.timeout_s < stop_t <= 1.0 + P.bound_s + 1e-9
    assert w.reason == HEARTBEAT_TIMEOUT and w.timeouts == 1
    # the link comes back with a running supervisor (same reset count): still stopped
    assert not _beat(w, 8.0, seq + 50)
    w.check(8.05)
    assert w.stopped and w.reason == HEARTBEAT_TIMEOUT
    # a re-delivered latched sample (same seq) is no heartbeat
    _beat(w, 8.1, seq + 50)
    assert w.duplicates == 1
    # only a reset made after the silence (new reset_count) releases
    assert _beat(w, 8.2, seq + 51, rc=1)
    assert not w.stopped


def test_a_redelivered_sample_does_not_refresh_the_heartbeat():
    w = StopWatch(P)
    _beat(w, 0.0, 7)
    for k in range(1, 20):                       # the same sample again and again (a cache)
        _beat(w, k * 0.1, 7)
        w.check(k * 0.1)
    assert w.stopped and w.reason == HEARTBEAT_TIMEOUT


def test_link_safe_stop_latches_and_its_release_is_ignored():
    latch = StopLatch(P)
    assert not latch.on_link_safe_stop(False, 0.0) and not latch.stopped     # the link is fine
    assert latch.on_link_safe_stop(True, 1.0) and latch.sources == ["link_safe_stop"]
    assert not latch.on_link_safe_stop(True, 1.1)                             # repeated: already latched
    assert not latch.on_link_safe_stop(False, 2.0) and latch.stopped          # back: still stopped
    st = latch.status()
    assert st["stopped"] and st["sources"] == "link_safe_stop" and st["ignored_releases"] == 2
    assert latch.reset(3.0)[0] and latch.status()["sources"] == "-"
