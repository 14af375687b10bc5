"""The pulse consistency check end to end (docs/protocols.md "Pulse consistency"): headset
datagrams over a real loopback UDP socket -> vr_interface_node -> atomic_node -> tino_sim
(MuJoCo), the chain of launch/tino.launch.yaml (``hri_atomic_motion.e2e``, simulated clock).

Pulses with a corrupted middle message, a corrupted last message, 2 of 3 and 1 of 3 messages never
start a movement (the simulated robot does not move), each is counted by cause and logged in one
line; the good pulse after them is exactly one movement."""
from __future__ import annotations

import pytest
from hri_pulse import emulator
from hri_runtime.config import load_robot_config

from hri_atomic_motion.e2e import build


@pytest.fixture
def rig():
    cfg = load_robot_config("tino")
    chain = build(cfg)
    yield cfg, chain
    chain.close()


def test_inconsistent_pulses_never_move_tino_and_the_next_good_one_moves_it_once(rig, caplog):
    cfg, chain = rig
    vr, sim, at, mon = chain.vr, chain.sim, chain.atomic, chain.watch
    n = cfg["pulse"]["check"]["messages"]
    sc = {"duration_s": 12.5,
          "actions": [{"at_s": 0.5, "state": 3, "angular": 1},                # middle state corrupted
                      {"at_s": 2.5, "state": 2},                              # last direction corrupted
                      {"at_s": 4.5, "state": 3, "angular": -1, "packets": 2},  # 2 of 3
                      {"at_s": 6.5, "state": 1, "packets": 1},                # 1 of 3
                      {"at_s": 8.5, "state": 3, "angular": 1}]}               # good
    plan = emulator.plan(sc, cfg["pulse"]["emulator"], seed=3)
    plan.corrupt(0, 1, base_state=2)
    plan.corrupt(1, n - 1, base_angular=1)
    assert plan.delivered_actions() == [0, 1, 2, 3, 4] and plan.executed_actions(n) == [4]
    hs = chain.headset(plan)
    pose0, ticks0 = sim.sim.base_pose(), sim.sim.leg_ticks()
    with caplog.at_level("WARNING"):
        hs.run(8.45)                                   # every bad pulse sent and decided
        assert mon.movements() == [] and len(at.ctrl.started) == 0
        assert sim.sim.base_pose() == pytest.approx(pose0, abs=1e-4)
        assert abs(sim.sim.leg_ticks() - ticks0) <= cfg["atomic"]["leg"]["tolerance_ticks"]
        hs.run(4.0)                                    # the good pulse: one state-3 right turn
    assert mon.movements() == [3]
    assert [(c.state, c.direction) for c in at.ctrl.started] == [(3, 1)]
    b = cfg["atomic"]["base"]
    assert sim.sim.base_pose()[2] - pose0[2] == pytest.approx(-b["move_angular_rad_s"] * b["move_s"], rel=0.03)
    chk = vr.core.check
    assert chk.rejected == {"state_mismatch": 1, "direction_mismatch": 1, "incomplete": 2}
    assert chk.accepted == 1
    lines = [r.getMessage() for r in caplog.records if "pulse rejected" in r.getMessage()]
    assert len(lines) == 4                              # one line per rejected pulse
    assert [c for c in ("state_mismatch", "direction_mismatch", "incomplete") if any(c in x for x in lines)] == \
        ["state_mismatch", "direction_mismatch", "incomplete"]
