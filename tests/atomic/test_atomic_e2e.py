"""End to end, deterministic: emulator plan (`hri vr-emulate`'s generator) over a real UDP socket ->
vr_interface_node (hri_pulse) -> atomic_node (driver ``topic``) -> tino_sim node (MuJoCo), i.e. the
three nodes of launch/tino.launch.yaml, on the in-process runtime (simulated clock, spins of
atomic.node.period_s).

Checks: every delivered pulse gives exactly one movement and the simulated robot does it (yaw /
distance of state 3, extension of state 2); when the link dies the link_safe_stop fault latches, the
robot stops (leg motor 0, base still) and stays stopped for new pulses until /atomic/reset; a
pulse whose three packets disagree or are incomplete never moves the robot."""
from __future__ import annotations

import math

import pytest
from hri_pulse import emulator
from hri_runtime import msgs
from hri_runtime.config.tree import load_robot_config

from hri_atomic_motion.e2e import build


@pytest.fixture
def rig():
    cfg = load_robot_config("tino")
    chain = build(cfg)
    yield cfg, chain
    chain.close()


def test_vr_emulator_to_simulated_tino_one_movement_per_pulse_then_safe_stop(rig):
    cfg, chain = rig
    ctx, vr, sim, at, mon = chain.ctx, chain.vr, chain.sim, chain.atomic, chain.watch
    a = cfg["atomic"]
    # 3 right, 3 forward, 1, 2 (leg held extended), then the headset dies at 11 s; duplicated packets
    sc = {"duration_s": 12.0,
          "actions": [{"at_s": 0.5, "state": 3, "angular": 1}, {"at_s": 3.0, "state": 3, "angular": 0},
                      {"at_s": 5.5, "state": 1}, {"at_s": 8.0, "state": 2}],
          "impairments": {"duplicate": 0.3, "stop_at_s": 11.0}}
    plan = emulator.plan(sc, cfg["pulse"]["emulator"], seed=5)
    assert plan.delivered_actions() == [0, 1, 2, 3]
    hs = chain.headset(plan)     # spins of atomic.node.period_s
    hs.run(2.8)
    x0, y0, yaw_right = sim.sim.base_pose()
    assert yaw_right == pytest.approx(-a["base"]["move_angular_rad_s"] * a["base"]["move_s"], rel=0.03)
    hs.run(2.6)           # state 3 forward along the new heading
    x1, y1, yaw1 = sim.sim.base_pose()
    assert math.hypot(x1 - x0, y1 - y0) == pytest.approx(a["base"]["move_linear_m_s"] * a["base"]["move_s"],
                                                         rel=0.03)
    assert yaw1 == pytest.approx(yaw_right, abs=0.01)
    hs.run(4.0)           # state 1 nudge, then state 2 extension + hold
    assert abs(sim.sim.leg_ticks() - a["leg"]["max_extension_ticks"]) <= 10
    assert mon.movements() == [3, 3, 1, 2]   # one movement per pulse (3 messages + duplicates each)
    assert [(c.state, c.direction) for c in at.ctrl.started] == [(3, 1), (3, 0), (1, 0), (2, 0)]
    assert at.ctrl.fault is None
    # the link dies at 11 s: safe stop after pulse.health.disconnect_timeout_s, fault latched, robot stops
    hs.run(3.4 + cfg["pulse"]["health"]["disconnect_timeout_s"])
    assert at.ctrl.fault is not None and at.ctrl.fault.value == "link_safe_stop"
    assert mon.states[-1]["fault"] == "link_safe_stop" and mon.states[-1]["state"] == 0
    diag = [s for d in mon.diags for s in d.status if s.name.startswith("atomic")][-1]
    assert diag.level == 2 and "link_safe_stop" in diag.message
    assert sim.sim.leg_rpm_cmd == 0.0 and sim.sim.base_twist() == pytest.approx((0.0, 0.0), abs=1e-3)
    # the headset comes back: the pulse reaches atomic but is refused (latched), the robot stays still
    pose = sim.sim.base_pose()
    plan2 = emulator.plan({"duration_s": 3.0, "actions": [{"at_s": 0.5, "state": 3, "angular": -1}]},
                          cfg["pulse"]["emulator"], seed=6)
    hs2 = chain.headset(plan2)
    hs2.run(3.0)
    assert len(at.ctrl.started) == 4 and at.ctrl.counts["rejected_fault"] >= 1
    assert sim.sim.base_pose() == pytest.approx(pose, abs=1e-4)
    # explicit reset (the atomic fault and the system stop), then the next pulse moves the robot again
    mon.reset_pub.publish(msgs.new("std_msgs/msg/Bool", data=True))
    reset = mon.create_client("std_srvs/srv/Trigger", "/safety/reset")
    assert reset.call(msgs.new("std_srvs/srv/Trigger_Request"), timeout_s=1.0).success
    ctx.spin_for(0.1)
    assert at.ctrl.fault is None
    plan3 = emulator.plan({"duration_s": 2.5, "actions": [{"at_s": 0.2, "state": 3, "angular": -1}]},
                          cfg["pulse"]["emulator"], seed=7)
    hs3 = chain.headset(plan3)
    hs3.run(2.5)
    assert [(c.state, c.direction) for c in at.ctrl.started][-1] == (3, -1)
    assert sim.sim.base_pose()[2] - pose[2] == pytest.approx(
        a["base"]["move_angular_rad_s"] * a["base"]["move_s"], rel=0.03)


def test_demo_chain_of_make_run_with_recording(tmp_path, capsys):
    """`hri atomic demo` (chain vr, the README's `make run`): N pulses -> N movements, then the link
    dies -> fault, robot still; the MCAP it writes is what `hri atomic plot` reads."""
    from hri_atomic_motion import cli
    from hri_atomic_motion.plot import read_mcap
    cfg = load_robot_config("tino")
    assert cli.main(["demo", "--sequence", "1,3r", "--gap-s", "2.2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "pulses 2, movements 2 [(1, 0), (3, 1)], fault link_safe_stop" in out
    assert "motor 0 RPM, base twist 0.000 m/s" in out
    assert (tmp_path / "timeline.png").stat().st_size > 1000
    s = read_mcap(tmp_path / "run.mcap", cfg["atomic"]["topics"])
    assert set(s["state"][:, 1]) == {0.0, 1.0, 3.0} and len(s["ticks"]) > 100
    assert s["angular_rad_s"][:, 1].min() == pytest.approx(-cfg["atomic"]["base"]["move_angular_rad_s"])


def test_an_authenticated_headset_drives_the_chain(vr_keys):
    """HRI_VR_AUTH=required with the key in HRI_VR_KEY_FILE (docs/protocols.md "Authentication"):
    the chain's headset seals its plan (a new session per headset) and the pulses are executed."""
    from hri_atomic_motion.e2e import run_sequence

    cfg = load_robot_config("tino")
    assert cfg["pulse"]["auth"]["mode"] == "required"
    r = run_sequence(cfg, [(2, 1), (3, -1)], 2.5, link_dies=False)
    assert r["started"] == [(2, 1), (3, -1)] and r["fault"] is None


# The pulse consistency check end to end (docs/protocols.md "Pulse consistency"): pulses with a
# corrupted middle message, a corrupted last message, 2 of 3 and 1 of 3 messages never start a
# movement (the simulated robot does not move), each is counted by cause and logged in one line;
# the good pulse after them is exactly one movement.
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
