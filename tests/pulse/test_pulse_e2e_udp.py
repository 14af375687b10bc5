"""End to end over real UDP: `hri vr-emulate` plans -> real socket -> vr_interface_node (inproc
runtime, simulated clock) -> /base_cmd, /link/safe_stop, /diagnostics."""
import pytest
from hri_pulse import emulator
from hri_pulse.core.feedback import decode_pose, decode_skeleton




def expected_sequence(plan, check):
    """The actions the robot commands: those whose pulse arrived whole enough (pulse.check)."""
    ids = plan.executed_actions(check["messages"], check["min_messages"])
    return [(plan.actions[i].state, plan.actions[i].angular) for i in ids], ids


def test_loss_dup_reorder_every_complete_pulse_exactly_once(rig, pulse_cfg, send_plan):
    ctx, node, rec, hs = rig
    sc = {"duration_s": 24.0, "every_s": 0.6,
          "impairments": {"loss": 0.3, "duplicate": 0.1, "reorder": 0.1, "jitter_s": 0.01, "garbage": 0.05}}
    plan = emulator.plan(sc, pulse_cfg["emulator"], seed=7)
    send_plan(ctx, node, hs, plan, 25.0)
    exp, ids = expected_sequence(plan, pulse_cfg["check"])
    pulses = rec.pulses()
    assert len(plan.actions) >= 35
    assert 5 <= len(ids) < len(plan.delivered_actions()) < len(plan.actions)   # impairments removed some
    assert [(s, d) for _, s, d, _ in pulses] == exp    # each complete pulse once, in order
    chk = node.core.check                              # the others: rejected, none commanded
    assert chk.accepted == len(ids) and chk.rejected["incomplete"] >= len(plan.delivered_actions()) - len(ids)
    assert all(n == 3 for *_, n in pulses)             # exactly three messages per action
    lr = node.core.link
    assert lr.rejected["duplicate"] > 0 and lr.rejected["stale"] > 0 and lr.rejected["bad_size"] > 0
    assert lr.received == lr.accepted + lr.rejected_total
    # pulse timing on the simulated clock: 40 ms apart, idle after the third
    t_first = pulses[0][0]
    msgs = [m for m in rec.cmd if t_first - 1e-9 <= m[0] <= t_first + 0.125]
    assert [round(m[0] - t_first, 6) for m in msgs] == [0.0, 0.04, 0.08, 0.12]
    assert msgs[-1][1] == 0


def test_unity_restart_mid_session(rig, pulse_cfg, send_plan):
    ctx, node, rec, hs = rig
    sc = {"duration_s": 10.0, "every_s": 0.7, "impairments": {"restart_at_s": [5.0], "restart_gap_s": 0.3}}
    plan = emulator.plan(sc, pulse_cfg["emulator"], seed=1)
    send_plan(ctx, node, hs, plan, 10.5)
    exp, ids = expected_sequence(plan, pulse_cfg["check"])
    assert [(s, d) for _, s, d, _ in rec.pulses()] == exp
    assert any(plan.actions[i].epoch == 1 for i in ids)     # actions after the restart executed
    assert node.core.link.tracker.c.restarts == 1
    assert not any(v for _, v in rec.stop)                   # 0.3 s gap: no safe stop


def test_link_death_safe_stop_within_timeout_plus_one_period_then_reconnect(rig, pulse_cfg, send_plan):
    ctx, node, rec, hs = rig
    plan = emulator.plan({"duration_s": 3.0, "every_s": 0.7, "impairments": {"stop_at_s": 2.0}},
                         pulse_cfg["emulator"], seed=2)
    t0 = ctx.now_s()
    send_plan(ctx, node, hs, plan, 7.0)
    last_sent = t0 + max(d.t_s for d in plan.datagrams)
    stops = [(t, v) for t, v in rec.stop]
    assert stops[0][1] is False                               # connected
    t_stop = next(t for t, v in stops if v)
    timeout = pulse_cfg["health"]["disconnect_timeout_s"]
    period = 1.0 / pulse_cfg["pulse"]["rate_hz"]
    assert timeout < t_stop - last_sent <= timeout + period
    assert all(s == 0 for t, s, _ in rec.cmd if t >= t_stop - 1e-9)   # idle from the stop on
    diag = rec.diag[-1].status[0]
    assert diag.level == 2 and "disconnected" in diag.message
    # the headset comes back (a restarted app, counter from 0): reconnection clears the stop
    plan2 = emulator.plan({"duration_s": 2.0, "actions": [{"at_s": 0.5, "state": 3, "angular": -1}]},
                          pulse_cfg["emulator"], seed=3)
    send_plan(ctx, node, hs, plan2, 2.0)
    assert rec.stop[-1][1] is False
    assert rec.pulses()[-1][1:] == (3, -1, 3)


@pytest.mark.parametrize("rig", ["kernel filter", "user space only"], indirect=True)
def test_flood_from_another_host_does_not_block_pulses(rig, pulse_cfg, send_plan):
    """50,000 datagrams/s from another host for 1 s: every action of the headset is executed once,
    the 25 Hz stream keeps its rhythm, the flood is dropped - in the kernel (BPF source filter,
    engaged after one tick) or, with the filter off, in user space by cause."""
    ctx, node, rec, hs = rig
    sc = {"duration_s": 4.0, "every_s": 0.5,
          "impairments": {"flood": {"at_s": 1.0, "duration_s": 1.0, "rate_pps": 50000, "source": "127.0.0.2"}}}
    plan = emulator.plan(sc, pulse_cfg["emulator"], seed=4)
    n_flood = sum(d.kind == "flood" for d in plan.datagrams)
    send_plan(ctx, node, hs, plan, 4.5)
    exp, _ = expected_sequence(plan, pulse_cfg["check"])
    pulses = rec.pulses()
    assert [(s, d) for _, s, d, _ in pulses] == exp and all(n == 3 for *_, n in pulses)
    lr = node.core.link
    assert lr.owner[0] == "127.0.0.1"
    if node.core.flood.enabled:
        assert node.udp.filter_engagements == 1                # engaged once, held for the burst
        assert 0 < lr.rejected["foreign_peer"] < n_flood // 10  # the rest never reached the process
        assert node.udp.filter_host is None                    # released after flood_filter_hold_s
    else:
        assert node.udp.filter_engagements == 0
        assert lr.rejected["foreign_peer"] > n_flood // 2       # seen and counted by cause
    ts = [t for t, *_ in rec.cmd]
    assert max(b - a for a, b in zip(ts, ts[1:])) <= 0.04 + 1e-6


def test_feedback_packets_and_diagnostics(rig, pulse_cfg, send_plan):
    ctx, node, rec, hs = rig
    plan = emulator.plan({"duration_s": 3.0, "actions": []}, pulse_cfg["emulator"], seed=5)
    send_plan(ctx, node, hs, plan, 3.0)
    poses = [decode_pose(d) for d in hs.feedback if d[:4] == b"TNPO"]
    skels = [decode_skeleton(d) for d in hs.feedback if d[:4] == b"TNSK"]
    rate = pulse_cfg["health"]["pose_send_rate_hz"]
    assert abs(len(poses) - 3.0 * rate) <= 2 and abs(len(skels) - 3.0 * rate) <= 2
    assert [p[0] for p in poses] == sorted(p[0] for p in poses)
    st = rec.diag[-1].status[0]
    vals = {kv.key: kv.value for kv in st.values}
    assert st.name == "hri_pulse: vr link" and vals["connected"] == "True"
    assert float(vals["receive_rate_hz"]) > 20.0


@pytest.mark.parametrize("rate_hz,level", [(25.0, 0), (15.0, 1), (8.0, 2)])
def test_diagnostics_graduated_by_incoming_rate(rig, pulse_cfg, send_plan, rate_hz, level):
    """A headset streaming at 15 Hz (-40 %) is WARN, at 8 Hz (-68 %) ERROR, at 25 Hz OK."""
    ctx, node, rec, hs = rig
    plan = emulator.plan({"duration_s": 6.0, "rate_hz": rate_hz, "actions": []}, pulse_cfg["emulator"], seed=6)
    send_plan(ctx, node, hs, plan, 6.0)
    st = rec.diag[-1].status[0]
    vals = {kv.key: kv.value for kv in st.values}
    assert st.level == level, (st.message, vals["receive_rate_hz"])
    assert vals["pose_level"] == "OK" and vals["skeleton_level"] == "OK"


def _unity(seq, state=0, angular=0):
    from hri_pulse.core.codec import UnityCodec, UnityPacket
    return UnityCodec.encode(UnityPacket(0.0, 0.0, 0.0, state, angular, 50.0, 0.0, seq))


def _stream(ctx, node, hs, datagrams):
    """One datagram per node tick over the real socket, simulated clock."""
    import select
    step_s = node.params.node.tick_period_s
    for data in datagrams:
        hs.sock.sendto(data, hs.target)
        select.select([node.udp.sock], [], [], 0.05)
        ctx.spin_for(step_s)


def test_forged_forward_jump_never_commands_and_the_real_stream_loses_nothing(rig, pulse_cfg):
    """The issue's attack: sequence 0-49 idle, then one datagram from the same host with
    sequence +100000 and state 2: no /base_cmd command; the real stream (50-79) is accepted
    whole, and its own command afterwards is executed once."""
    ctx, node, rec, hs = rig
    _stream(ctx, node, hs, [_unity(s) for s in range(50)])
    _stream(ctx, node, hs, [_unity(49 + 100000, state=2)])
    _stream(ctx, node, hs, [_unity(s) for s in range(50, 80)])
    assert not any(s for _, s, _ in rec.cmd)                 # the forged state 2 never moved the base
    lr = node.core.link
    assert lr.rejected["jump_pending"] == 1 and lr.tracker.c.lost == 0
    assert lr.accepted == 80
    _stream(ctx, node, hs, [_unity(s, state=1, angular=1) for s in range(80, 83)] + [_unity(s) for s in range(83, 120)])
    assert rec.pulses() and [p[1:] for p in rec.pulses()] == [(1, 1, 3)]


def test_genuine_forward_jump_resumes_within_confirm_packets(rig, pulse_cfg):
    """A headset whose counter really jumped (long outage below the disconnect timeout): the
    first packets after the jump are held back, the N-th consecutive one is accepted, then
    commands flow again. A pulse caught in the held-back packets is incomplete: rejected."""
    ctx, node, rec, hs = rig
    n = pulse_cfg["sequence"]["restart_confirm_packets"]
    m = pulse_cfg["check"]["messages"]
    _stream(ctx, node, hs, [_unity(s) for s in range(20)])
    base = 500000
    _stream(ctx, node, hs, [_unity(base + k, state=3, angular=-1) for k in range(n)])
    assert node.core.link.rejected["jump_pending"] == n - 1
    assert node.core.link.accepted == 20 + 1                   # resumed on the N-th packet
    _stream(ctx, node, hs, [_unity(base + n + k) for k in range(10)])
    assert rec.pulses() == [] and node.core.check.rejected["incomplete"] == 1
    _stream(ctx, node, hs, [_unity(base + n + 10 + k, state=3, angular=-1) for k in range(m)]
            + [_unity(base + n + 10 + m + k) for k in range(30 - m)])
    assert [p[1:] for p in rec.pulses()] == [(3, -1, 3)]
    assert node.core.link.accepted == 20 + 1 + 40 and node.core.link.tracker.c.gaps_major == 1


def test_idle_node_without_a_headset_logs_the_link_state_once(rig, caplog):
    """No headset for 30 s (simulated): one WARN line ("waiting for the headset"), not one per
    diagnostics period; the /diagnostics row keeps carrying the state."""
    ctx, node, rec, hs = rig
    with caplog.at_level("INFO"):
        ctx.spin_for(30.0)
    lines = [r for r in caplog.records if "vr link" in r.getMessage() or "headset" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelname == "WARNING" and "waiting for the headset" in lines[0].getMessage()
    assert len(rec.diag) >= 29 and all(d.status[0].level == 1 for d in rec.diag)
