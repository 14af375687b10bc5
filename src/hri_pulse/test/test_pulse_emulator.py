import struct

from hri_pulse import emulator


def unpack(d):
    return struct.unpack("<fffiiffi", d.data)


def test_plan_is_deterministic_and_streams_at_rate(pulse_section):
    sc = {"duration_s": 2.0, "actions": [{"at_s": 0.5, "state": 2, "angular": 1, "head_deg": [1, 2, 3]}]}
    p1 = emulator.plan(sc, pulse_section["emulator"], seed=3)
    p2 = emulator.plan(sc, pulse_section["emulator"], seed=3)
    assert [d.data for d in p1.datagrams] == [d.data for d in p2.datagrams]
    rate = pulse_section["emulator"]["rate_hz"]
    assert len(p1.datagrams) == int(2.0 * rate)
    held = [unpack(d) for d in p1.datagrams if unpack(d)[3] == 2]
    assert len(held) == pulse_section["emulator"]["press_packets"]
    assert held[0][:5] == (1.0, 2.0, 3.0, 2, 1)
    assert [unpack(d)[7] for d in p1.datagrams] == list(range(len(p1.datagrams)))


def test_impairments(pulse_section):
    sc = {"duration_s": 20.0, "every_s": 0.5,
          "impairments": {"loss": 0.3, "duplicate": 0.1, "reorder": 0.1, "garbage": 0.1,
                          "restart_at_s": [10.0], "stop_at_s": 18.0}}
    p = emulator.plan(sc, pulse_section["emulator"], seed=9)
    kinds = [d.kind for d in p.datagrams]
    n_slots = 20.0 * pulse_section["emulator"]["rate_hz"]
    assert 0.55 * n_slots < kinds.count("stream") < 0.75 * n_slots
    assert kinds.count("duplicate") > 0 and kinds.count("garbage") > 0
    seqs = [d.seq for d in p.datagrams if d.kind == "stream"]
    assert any(b < a for a, b in zip(seqs, seqs[1:]))            # reordered
    assert min(d.seq for d in p.datagrams if d.kind == "stream" and d.epoch == 1) < 10   # restarted
    assert max(d.t_s for d in p.datagrams if d.kind == "stream") < 18.1
    delivered = p.delivered_actions()
    assert 0 < len(delivered) < len(p.actions)


def test_delivered_actions_ignores_overtaken_packets(pulse_section):
    sc = {"duration_s": 1.0, "actions": [{"at_s": 0.2, "state": 1}]}
    p = emulator.plan(sc, pulse_section["emulator"], seed=0)
    act = p.actions[0]
    # keep only the action's packets, and send them after a newer idle packet
    newer = [d for d in p.datagrams if d.seq == act.seqs[-1] + 1]
    own = [d for d in p.datagrams if d.action == 0]
    p.datagrams = newer + own
    assert p.delivered_actions() == []
    p.datagrams = own + newer
    assert p.delivered_actions() == [0]


def test_cli_dry_run(capsys):
    assert emulator.main(["--dry-run", "--loss", "0.3", "--duplicate", "0.1", "--every", "0.7",
                          "--restart-at", "5"]) == 0
    out = capsys.readouterr().out
    assert "actions the robot can see" in out


def test_send_plan_over_real_udp_and_count_feedback(pulse_section):
    """The real-time sender of `hri vr-emulate`: every datagram arrives, feedback is counted."""
    import socket
    import threading
    from hri_pulse.core.feedback import encode_pose

    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.2)
    got = []

    def serve():
        while True:
            try:
                data, peer = rx.recvfrom(2048)
            except (socket.timeout, OSError):
                return
            got.append(data)
            rx.sendto(encode_pose(len(got), 0.0, (0, 0, 0), (0, 0, 0, 1)), peer)

    th = threading.Thread(target=serve)
    th.start()
    p = emulator.plan({"duration_s": 1.0, "every_s": 0.3, "first_s": 0.1}, pulse_section["emulator"], seed=1)
    fb = emulator.send_plan(p, "127.0.0.1", rx.getsockname()[1], speed=10.0)
    th.join()
    rx.close()
    assert got == [d.data for d in p.datagrams]
    assert fb.counts.get("TNPO") == len(p.datagrams)


def test_executed_actions_need_every_packet_of_the_pulse(pulse_section):
    """Ground truth of the pulse check: an action commands only when its first
    pulse.check.messages packets are all accepted (none lost, overtaken or corrupted)."""
    n = pulse_section["check"]["messages"]
    sc = {"duration_s": 3.0, "actions": [{"at_s": 0.2, "state": 1}, {"at_s": 1.0, "state": 2},
                                         {"at_s": 2.0, "state": 3, "angular": 1}]}
    p = emulator.plan(sc, pulse_section["emulator"], seed=0)
    assert p.executed_actions(n) == [0, 1, 2]
    lost = p.actions[1].seqs[1]
    p.datagrams = [d for d in p.datagrams if d.seq != lost]          # action 1 loses its middle packet
    p.corrupt(2, n - 1, base_state=1)                               # action 2: its last packet altered
    assert p.delivered_actions() == [0, 1, 2] and p.executed_actions(n) == [0]
    last = [unpack(d) for d in p.datagrams if d.action == 2]
    assert [v[3] for v in last] == [3] * (n - 1) + [1] and [v[7] for v in last] == p.actions[2].seqs
    short = emulator.plan(dict(sc, press_packets=n - 1), pulse_section["emulator"], seed=0)
    assert short.executed_actions(n) == [] and short.delivered_actions() == [0, 1, 2]
