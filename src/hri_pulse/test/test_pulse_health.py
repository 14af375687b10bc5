import pytest
from hri_pulse.core import HealthMonitor, HealthParams, RateWindow
from hri_pulse.core.health import ERROR, OK, WARN


@pytest.fixture
def hp(pulse_section):
    return HealthParams.from_config(pulse_section["health"])


def feed(h, t0, t1, rate, pose_rate=10.0, skel_rate=10.0):
    """Receive at ``rate`` and send pose/skeleton at their rates from t0 to t1."""
    events = []
    for stream, r in (("pose", pose_rate), ("skeleton", skel_rate)):
        n = int(round((t1 - t0) * r))
        for k in range(n):
            h.on_send(stream, t0 + k / r)
    n = int(round((t1 - t0) * rate))
    for k in range(n):
        ev = h.on_receive(t0 + k / rate)
        if ev:
            events.append(ev)
    return events


def test_defaults_from_the_tino_vr_design(hp):
    assert (hp.expected_receive_rate_hz, hp.pose_send_rate_hz, hp.skeleton_send_rate_hz) == (25.0, 10.0, 10.0)
    assert (hp.window_s, hp.disconnect_timeout_s) == (10.0, 3.0)
    assert (hp.in_warn_deviation, hp.out_warn_deviation) == (0.2, 0.1)


def test_rate_window_is_bounded_and_slides():
    w = RateWindow(10.0, 50)
    for k in range(250):
        w.add(k * 0.04)
    assert w.rate_hz(10.0) == pytest.approx(25.0, rel=0.02)
    assert len(w.counts) == 50
    assert w.rate_hz(30.0) == 0.0           # slid out completely


@pytest.mark.parametrize("rate,level", [(25.0, OK), (21.0, OK), (19.0, WARN), (31.0, WARN), (10.0, ERROR)])
def test_graduated_incoming_levels(hp, rate, level):
    h = HealthMonitor(hp, start_s=0.0)
    feed(h, 0.0, 10.0, rate)
    r = h.report(10.0)
    assert r.streams["receive"].level == level
    assert r.level == level


@pytest.mark.parametrize("pose_rate,level", [(10.0, OK), (8.5, WARN), (5.0, ERROR)])
def test_graduated_outgoing_levels(hp, pose_rate, level):
    h = HealthMonitor(hp, start_s=0.0)
    feed(h, 0.0, 10.0, 25.0, pose_rate=pose_rate)
    assert h.report(10.0).streams["pose"].level == level


def test_not_judged_before_min_span(hp):
    h = HealthMonitor(hp, start_s=0.0)
    feed(h, 0.0, 1.0, 5.0)
    r = h.report(1.0)
    assert r.connected and not r.streams["receive"].judged and r.level == OK


def test_disconnect_after_timeout_then_reconnect(hp):
    h = HealthMonitor(hp, start_s=0.0)
    assert h.report(0.0).level == WARN      # waiting for the headset
    assert h.on_receive(1.0) == "connected"
    assert h.update(4.0) is None            # exactly 3 s: still connected
    assert h.update(4.001) == "disconnected"
    assert h.update(5.0) is None            # once
    assert h.report(5.0).level == ERROR
    assert h.on_receive(6.0) == "reconnected"
    assert h.reconnections == 1 and h.disconnections == 1


def test_link_state_logged_on_change_only(hp):
    """Healthy: a summary every log_period_s; degraded: one line per change of level, never a
    WARN/ERROR repeated every few seconds on an idle stack."""
    h = HealthMonitor(hp, start_s=0.0)
    assert h.log_due(0.0, OK)
    assert not h.log_due(hp.log_period_s - 0.1, OK)
    assert h.log_due(hp.log_period_s - 0.05, WARN)                   # change: at once
    assert not any(h.log_due(t, WARN) for t in range(11, 600))     # unchanged: never again
    assert h.log_due(600.0, ERROR)
    assert not h.log_due(601.0, ERROR)
    assert h.log_due(602.0, OK) and not h.log_due(603.0, OK)
    assert h.log_due(602.0 + hp.log_period_s, OK)
