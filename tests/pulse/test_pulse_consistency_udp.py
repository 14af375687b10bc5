"""The pulse consistency check over real UDP (docs/protocols.md "Pulse consistency"): a headset
pulse whose messages disagree (state, direction), break the sequence run or arrive incomplete is
rejected -- no /base_cmd command --, counted by cause (core counter and /diagnostics) and logged
in one line; a good pulse right after it is one command of three messages."""
import pytest
from hri_pulse import emulator

BAD, GOOD = (2, 1), (3, -1)


def _drop(plan, message):
    """The ``message``-th packet of action 0 lost in transit (every copy of it)."""
    seq = plan.actions[0].seqs[message]
    plan.datagrams = [d for d in plan.datagrams if not (d.action == 0 and d.seq == seq)]

# name -> (Plan edit on action 0, per-action packets, expected cause)
CASES = {
    "middle state corrupted": (lambda p: p.corrupt(0, 1, base_state=3), 0, "state_mismatch"),
    "last state corrupted": (lambda p: p.corrupt(0, 2, base_state=1), 0, "state_mismatch"),
    "middle direction corrupted": (lambda p: p.corrupt(0, 1, base_angular=-1), 0, "direction_mismatch"),
    "last direction corrupted": (lambda p: p.corrupt(0, 2, base_angular=0), 0, "direction_mismatch"),
    "last turned idle": (lambda p: p.corrupt(0, 2, base_state=0, base_angular=0), 0, "incomplete"),
    # a message_order 4 ahead is a minor gap the link accepts; the real last message is then stale
    "middle message_order corrupted": (lambda p: p.corrupt(0, 1, message_order=p.actions[0].seqs[1] + 4),
                                       0, "incomplete"),
    "opening lost": (lambda p: _drop(p, 0), 0, "incomplete"),
    "middle and last lost": (lambda p: (_drop(p, 1), _drop(p, 2)), 0, "incomplete"),
    "1 of 3 sent": (None, 1, "incomplete"),
    "2 of 3 sent": (None, 2, "incomplete"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_pulse_rejected_counted_logged_once_then_good_pulse_runs(rig, pulse_cfg, send_plan, caplog, case):
    ctx, node, rec, hs = rig
    edit, packets, cause = CASES[case]
    n = pulse_cfg["check"]["messages"]
    sc = {"duration_s": 2.5, "actions": [{"at_s": 0.5, "state": BAD[0], "angular": BAD[1], "packets": packets},
                                         {"at_s": 1.5, "state": GOOD[0], "angular": GOOD[1]}]}
    plan = emulator.plan(sc, pulse_cfg["emulator"], seed=11)
    if edit is not None:
        edit(plan)
    assert plan.executed_actions(n) == [1]
    with caplog.at_level("INFO"):
        send_plan(ctx, node, hs, plan, 3.0)
    pulses = rec.pulses()
    assert [p[1:] for p in pulses] == [(*GOOD, n)]                   # only the good one, 3 messages
    assert not any((s, d) == BAD for _, s, d in rec.cmd)
    chk = node.core.check
    assert chk.rejected[cause] == 1 and chk.rejected_total == 1 and chk.accepted == 1
    vals = {kv.key: kv.value for kv in rec.diag[-1].status[0].values}
    assert vals[f"pulses_rejected_{cause}"] == "1" and vals["pulses_accepted"] == "1"
    assert vals["commands"] == "1"
    lines = [r.getMessage() for r in caplog.records if "pulse rejected" in r.getMessage()]
    assert len(lines) == 1 and f"({cause})" in lines[0] and "state 2 direction 1" in lines[0]


# One transmission of the three lost (or made unreadable): the two that agree still deliver the
# command (the Tino VR design: "the remaining cycles ensure command delivery"; pulse.check.min_messages).
LOSSY = {
    "middle lost": lambda p: _drop(p, 1),
    "last lost": lambda p: _drop(p, 2),
    # a message_order far ahead is held back by the link (jump_pending): the last slot stays empty
    "last message_order corrupted": lambda p: p.corrupt(0, 2, message_order=p.actions[0].seqs[2] + 100000),
}


@pytest.mark.parametrize("case", list(LOSSY))
def test_a_pulse_with_one_message_lost_is_still_one_command(rig, pulse_cfg, send_plan, caplog, case):
    ctx, node, rec, hs = rig
    n = pulse_cfg["check"]["messages"]
    sc = {"duration_s": 2.5, "actions": [{"at_s": 0.5, "state": BAD[0], "angular": BAD[1]},
                                         {"at_s": 1.5, "state": GOOD[0], "angular": GOOD[1]}]}
    plan = emulator.plan(sc, pulse_cfg["emulator"], seed=11)
    LOSSY[case](plan)
    with caplog.at_level("INFO"):
        send_plan(ctx, node, hs, plan, 3.0)
    assert [p[1:] for p in rec.pulses()] == [(*BAD, n), (*GOOD, n)]  # each one command of n messages
    chk = node.core.check
    assert chk.accepted == 2 and chk.rejected_total == 0
    assert not [r for r in caplog.records if "pulse rejected" in r.getMessage()]


def test_a_good_pulse_waits_for_its_last_message(rig, pulse_cfg, send_plan):
    """The design's latency decision: the command starts when the third message is in, (n - 1)
    packet periods after the first (80 ms at 25 Hz), never on the first."""
    ctx, node, rec, hs = rig
    n = pulse_cfg["check"]["messages"]
    plan = emulator.plan({"duration_s": 1.5, "actions": [{"at_s": 0.5, "state": 1}]}, pulse_cfg["emulator"], seed=1)
    t0 = ctx.now_s()
    send_plan(ctx, node, hs, plan, 1.5)
    first = next(d.t_s for d in plan.datagrams if d.action == 0)
    (t_cmd, s, d, k), = rec.pulses()
    assert (s, d, k) == (1, 0, n)
    step = pulse_cfg["node"]["tick_period_s"]                        # the node drains once per tick
    assert (n - 1) / plan.rate_hz - 1e-6 <= t_cmd - t0 - first <= (n - 1) / plan.rate_hz + step + 1e-6
