import pytest
from hri_pulse.core import Command, PulseGenerator, PulseParams, RisingEdge


@pytest.fixture
def gen(pulse_section):
    return PulseGenerator(PulseParams.from_config(pulse_section["pulse"]), start_s=0.0)


def run(gen, t_end, dt=0.005, t0=0.0):
    out, k = [], 0
    while True:
        t = t0 + k * dt
        if t > t_end + 1e-12:
            break
        out += gen.due(t)
        k += 1
    return out


def test_three_messages_at_0_40_80_then_idle_at_120_ms(gen):
    gen.due(0.995)
    assert gen.request(Command(2, 1, (0.1, 0.2, 0.3)), 1.0)
    em = run(gen, 1.3, t0=1.0)
    pulse = [e for e in em if e.state != 0]
    assert [round(e.t_s - 1.0, 6) for e in pulse] == [0.0, 0.04, 0.08]
    assert all((e.state, e.direction) == (2, 1) for e in pulse)
    assert all(e.command.head_rad == (0.1, 0.2, 0.3) for e in pulse)
    idle = [e for e in em if e.state == 0]
    assert round(idle[0].t_s - 1.0, 6) == 0.12
    # then one idle message every 40 ms
    assert [round(e.t_s - 1.0, 6) for e in idle[:4]] == [0.12, 0.16, 0.2, 0.24]


def test_one_press_one_pulse_whatever_the_hold(pulse_section):
    gen = PulseGenerator(PulseParams.from_config(pulse_section["pulse"]), start_s=0.0)
    edge = RisingEdge()
    fired = 0
    for k in range(250):                      # button held 10 s at 25 Hz
        if edge.update(3, -1):
            fired += gen.request(Command(3, -1), k * 0.04)
    em = run(gen, 10.0)
    assert fired == 1
    assert sum(e.state == 3 for e in em) == 3


def test_rising_edge():
    e = RisingEdge()
    seq = [(0, 0), (1, 0), (1, 0), (0, 0), (1, 0), (2, 0), (2, 1), (0, 1), (0, 0)]
    assert [e.update(*v) for v in seq] == [False, True, False, False, True, True, True, False, False]


def test_debounce_200_ms(gen):
    assert gen.request(Command(1, 0), 0.0)
    em = run(gen, 0.195)
    assert not gen.request(Command(2, 0), 0.199)
    assert gen.debounced == 1
    assert gen.request(Command(2, 0), 0.2)       # exactly 200 ms later is allowed
    em += run(gen, 0.5, t0=0.2)
    assert [e.state for e in em if e.state] == [1, 1, 1, 2, 2, 2]


def test_cancel_goes_idle_immediately(gen):
    gen.request(Command(3, 0), 0.0)
    assert [e.state for e in gen.due(0.0)] == [3]
    gen.cancel(0.01)
    em = gen.due(0.01)
    assert [(e.state, round(e.t_s, 6)) for e in em] == [(0, 0.01)]
    assert all(e.state == 0 for e in run(gen, 0.5, t0=0.015))


def test_idle_backlog_collapses_but_pulse_messages_never_skip(gen):
    assert len(gen.due(10.0)) == 1              # 250 missed idle periods -> one message
    gen.request(Command(1, 0), 10.001)
    em = gen.due(10.5)                          # caller stalled 0.5 s
    assert [e.state for e in em] == [1, 1, 1, 0]


def test_idle_command_cancels(gen):
    gen.request(Command(2, 0), 0.0)
    gen.due(0.0)
    assert gen.request(Command(0, 0), 0.05)
    assert all(e.state == 0 for e in run(gen, 0.3, t0=0.05))


def test_without_idle_stream_one_idle_after_each_pulse(pulse_section):
    import dataclasses
    gen = PulseGenerator(dataclasses.replace(PulseParams.from_config(pulse_section["pulse"]), idle_stream=False), 0.0)
    assert gen.request(Command(2, 0), 0.0)
    em = run(gen, 1.0)
    assert [(round(e.t_s, 6), e.state) for e in em] == [(0.0, 2), (0.04, 2), (0.08, 2), (0.12, 0)]
    assert gen.request(Command(1, 0), 1.0)
    em = run(gen, 2.0, t0=1.0)
    assert [(round(e.t_s, 6), e.state) for e in em] == [(1.0, 1), (1.04, 1), (1.08, 1), (1.12, 0)]
    gen.request(Command(3, 0), 2.0)
    gen.due(2.0)
    gen.cancel(2.01)
    assert [(round(e.t_s, 6), e.state) for e in run(gen, 3.0, t0=2.01)] == [(2.01, 0)]
