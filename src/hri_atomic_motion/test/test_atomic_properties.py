"""Property tests: random pulse streams never break the atomic guarantees."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hri_runtime.config.tree import load_robot_config

from hri_atomic_motion.core import AtomicController, AtomicParams

PARAMS = AtomicParams.from_config(load_robot_config("tino")["atomic"])

event = st.tuples(st.integers(0, 400),                       # ms until the message
                  st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0, -1.0, 1.5, float("nan")]),
                  st.sampled_from([0.0, 1.0, -1.0, 2.0]))


@settings(max_examples=60, deadline=None)
@given(st.lists(event, max_size=25), st.integers(0, 3))
def test_random_pulse_streams(events, depth):
    from dataclasses import replace

    ctrl = AtomicController(replace(PARAMS, queue_depth=depth))
    ticks, t_ms = 0.0, 0
    k = 25.0 * 4096 / 60 / 10 / 1000          # ticks per ms per (RPM/25) of the ideal leg
    schedule = {}
    acc = 0
    for dt, s, d in events:
        acc += dt
        schedule.setdefault(acc, []).append((s, d))
    accepted = 0
    end = acc + 12000
    for t_ms in range(0, end, 2):
        t = t_ms / 1000.0
        for s, d in schedule.get(t_ms, []) + schedule.get(t_ms - 1, []):
            r = ctrl.on_pulse(s, d, t)
            accepted += r in ("started", "queued")
        assert len(ctrl.queue) <= depth
        out = ctrl.step(t, int(round(ticks)), ticks <= 5)
        ticks += out.leg_rpm * k / 25.0 * 2
        # while locked, the running command is the last one started
        if ctrl.locked:
            assert ctrl.current is ctrl.started[-1]
        if ctrl.fault is not None:
            assert (out.leg_rpm, out.linear_m_s, out.angular_rad_s) == (0.0, 0.0, 0.0)
    assert ctrl.movements == accepted or ctrl.fault is not None
    assert not ctrl.locked                      # everything queued has completed
    # movements never overlap: consecutive starts are at least the shortest movement apart
    shortest_s = min(PARAMS.leg.push_duration_s, PARAMS.base.coordination_s, PARAMS.base.move_s)
    starts = [c.t_s for c in ctrl.started]
    assert all(b - a >= shortest_s - 1e-9 for a, b in zip(starts, starts[1:]))
