"""Seeded fuzz: >= 1,000,000 random and mutated datagrams through the whole VR core.

Properties: no exception escapes; every datagram is either accepted or counted under exactly one
cause; the codec causes match an independent vectorised oracle (numpy) packet for packet in
total; no command is ever started by a packet the oracle calls invalid, a duplicate or a stale one.
"""
import numpy as np
import pytest
from hri_pulse.core import PulseConfig, VrCommandCore

N_PACKETS = 1_000_000
BATCH = 50_000
DT = np.dtype([("hp", "<f4"), ("hn", "<f4"), ("ht", "<f4"), ("st", "<i4"), ("ang", "<i4"),
               ("vol", "<f4"), ("ori", "<f4"), ("seq", "<i4")])
PEER = ("127.0.0.1", 1)


def make_batch(rng, n, seq0):
    """n 32-byte rows: valid packets with increasing sequence, then mutated."""
    a = np.zeros(n, DT)
    a["hp"], a["hn"], a["ht"] = (rng.uniform(-90, 90, n) for _ in range(3))
    a["st"] = rng.integers(0, 4, n)
    a["ang"] = rng.integers(-1, 2, n)
    a["vol"] = rng.uniform(0, 100, n)
    a["ori"] = rng.uniform(-180, 180, n)
    a["seq"] = (seq0 + np.arange(n)) % (1 << 31)
    raw = a.view(np.uint8).reshape(n, 32).copy()
    kind = rng.integers(0, 10, n)
    # 0: random bytes, 1: one random byte flipped, 2: field set to a special value,
    # 3: duplicate/replayed sequence, 4..9: valid
    m = kind == 0
    raw[m] = rng.integers(0, 256, (int(m.sum()), 32), dtype=np.uint8)
    m = np.flatnonzero(kind == 1)
    raw[m, rng.integers(0, 32, m.size)] ^= rng.integers(1, 256, m.size, dtype=np.uint8)
    m = np.flatnonzero(kind == 2)
    specials = np.array([np.nan, np.inf, -np.inf, 1e30, -1e-3, 181.0, 101.0], np.float32).view(np.uint8).reshape(-1, 4)
    off = rng.choice([0, 4, 8, 20, 24], m.size)
    sp = specials[rng.integers(0, len(specials), m.size)]
    for j in range(4):
        raw[m, off + j] = sp[:, j]
    m = np.flatnonzero(kind == 3)
    back = rng.integers(0, 40, m.size).astype(np.int64)
    seqs = ((seq0 + m - back) % (1 << 31)).astype("<i4").view(np.uint8).reshape(-1, 4)
    raw[m, 28:32] = seqs
    ints = raw.copy().view(DT).reshape(n)
    return raw, ints


def oracle_causes(a):
    """Vectorised codec rules; returns an array of cause names ('' = valid)."""
    with np.errstate(invalid="ignore"):
        f = np.stack([a["hp"], a["hn"], a["ht"], a["vol"], a["ori"]]).astype(np.float64)
    cause = np.full(a.shape, "", dtype=object)
    rules = [
        ("non_finite", ~np.isfinite(f).all(axis=0)),
        ("head_out_of_range", (np.abs(f[:3]) > 180.0).any(axis=0)),
        ("bad_state", (a["st"] < 0) | (a["st"] > 3)),
        ("bad_angular", np.abs(a["ang"].astype(np.int64)) > 1),
        ("audio_out_of_range", (f[3] < 0) | (f[3] > 100.0) | (np.abs(f[4]) > 360.0)),
        ("bad_sequence", a["seq"] < 0),
    ]
    undecided = np.ones(a.shape, bool)
    for name, bad in rules:
        hit = undecided & bad
        cause[hit] = name
        undecided &= ~hit
    return cause


@pytest.mark.timeout(120)
def test_fuzz_million_packets(pulse_section):
    assert pulse_section["packet"]["head_abs_max_deg"] == 180.0
    rng = np.random.default_rng(20261123)
    t = [1000.0]
    core = VrCommandCore(PulseConfig.from_config(pulse_section), lambda: t[0])
    lr = core.link
    expected = {}
    sizes_bad = 0
    seq0 = 0
    commands_from_invalid = 0
    for b in range(N_PACKETS // BATCH):
        raw, a = make_batch(rng, BATCH, seq0)
        seq0 += BATCH
        oc = oracle_causes(a)
        u, k = np.unique(oc[oc != ""].astype(str), return_counts=True)
        for name, cnt in zip(u, k):
            expected[name] = expected.get(name, 0) + int(cnt)
        blob = raw.tobytes()
        valid = oc == ""
        # every 97th datagram gets a wrong length (truncated / extended)
        on = core.on_datagram
        for i in range(BATCH):
            d = blob[32 * i: 32 * i + 32]
            if i % 97 == 0:
                d = d[: i % 32] if (i // 97) % 2 else d + b"\x00"
                sizes_bad += 1
                ok_i = False
            else:
                ok_i = valid[i]
            before, acc = core.commands, lr.accepted
            on(d, PEER, t[0])
            if core.commands != before and (not ok_i or lr.accepted == acc):
                commands_from_invalid += 1          # invalid, duplicate or stale packet commanded
            if i % 8 == 0:
                t[0] += 0.005
                core.tick(t[0])
        # the oracle counted the bad-size rows under their content cause: move them
        for i in range(0, BATCH, 97):
            if oc[i]:
                expected[oc[i]] -= 1
    expected["bad_size"] = sizes_bad
    assert commands_from_invalid == 0
    assert lr.received == N_PACKETS
    assert lr.received == lr.accepted + lr.rejected_total
    for name, cnt in expected.items():
        assert lr.rejected[name] == cnt, name
    assert lr.rejected["duplicate"] > 0 and lr.rejected["stale"] > 0
    assert core.commands > 0 and lr.accepted > N_PACKETS // 3
