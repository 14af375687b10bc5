"""Packet authentication of the headset links (docs/protocols.md "Authentication"): packet + 28-byte
trailer (auth_version 2, key_id, reserved 0, session u64, HMAC-SHA256(key, packet + trailer bytes
0..11)[:16]), one framing (``hri_pulse.core.auth``) for the pulse packet and the arm's
controller-pose packet. With ``pulse.auth.mode: required`` only authentic, fresh datagrams are
decoded: a forged or replayed packet never reaches the sequence tracker or the pulse logic."""
import hashlib
import hmac
import struct

import pytest

from hri_pulse.core import PacketParams
from hri_pulse.core.auth import (TRAILER_BYTES, AuthParams, Authenticator, Sealer, keys_from_params, new_session,
                                 read_keys)
from hri_pulse.core.codec import PacketRejected, UnityCodec, UnityPacket
from hri_pulse.core.vr import PulseConfig, VrCommandCore

KEY = bytes(range(32))
SESSION = 1767225600000          # 2026-01-01T00:00:00Z in ms, the documented golden vector's session
A = ("127.0.0.1", 40000)


def pkt(seq, state=0, ang=0):
    return UnityCodec.encode(UnityPacket(1.0, 2.0, 3.0, state, ang, 50.0, 0.0, seq))


def core_with(pulse_section, tmp_path, text=None, key_id=1):
    f = tmp_path / "vr.key"
    f.write_text(text if text is not None else KEY.hex())
    t = [100.0]
    cfg = PulseConfig.from_config(dict(pulse_section, auth={"mode": "required", "key_file": str(f), "key_id": key_id}))
    return VrCommandCore(cfg, clock=lambda: t[0]), t


def test_golden_vector_layout(pulse_section):
    """The exact bytes a Unity client must produce (C#: HMACSHA256 over bytes 0..43, first 16)."""
    d = Sealer(KEY, 7, SESSION).seal(pkt(42, 2, -1))
    assert len(d) == 32 + TRAILER_BYTES == 60
    assert d[:32] == struct.pack("<fffiiffi", 1.0, 2.0, 3.0, 2, -1, 50.0, 0.0, 42)
    assert d[32:44] == struct.pack("<BBHQ", 2, 7, 0, SESSION)
    assert d[44:] == hmac.new(KEY, d[:44], hashlib.sha256).digest()[:16]
    assert d.hex() == ("0000803f000000400000404002000000ffffffff00004842000000002a000000"   # docs/protocols.md
                       "0207000000a8da769b010000" "c1ffd40f383c24da87b6f33bf2f07f6c")
    auth = Authenticator({7: KEY}, UnityCodec.size)
    body, key_id, session = auth.open(d)
    assert (UnityCodec(PacketParams.from_config(pulse_section["packet"])).decode(body).message_order, key_id,
            session) == (42, 7, SESSION)


@pytest.mark.parametrize("mutate,cause", [
    (lambda d: d[:32], "bad_size"),                                   # unauthenticated packet
    (lambda d: d + b"\0", "bad_size"),
    (lambda d: d[:52], "bad_size"),                                   # the 52-byte auth version 1 length
    (lambda d: d[:32] + bytes([1]) + d[33:], "bad_auth_version"),
    (lambda d: d[:34] + b"\1\0" + d[36:], "bad_auth_version"),        # reserved != 0
    (lambda d: d[:33] + bytes([8]) + d[34:], "bad_key_id"),           # a key id the robot has no key for
    (lambda d: d[:59] + bytes([d[59] ^ 1]), "bad_tag"),               # forged / corrupted tag
    (lambda d: d[:28] + struct.pack("<i", 100042) + d[32:], "bad_tag"),  # the forged jump
    (lambda d: d[:36] + struct.pack("<Q", SESSION + 1) + d[44:], "bad_tag"),  # a forged new session
    (lambda d: Sealer(bytes(32), 7, SESSION).seal(d[:32]), "bad_tag"),  # another key, same id
])
def test_forged_or_corrupted_datagrams_are_refused(mutate, cause):
    auth = Authenticator({7: KEY}, UnityCodec.size)
    with pytest.raises(PacketRejected) as exc:
        auth.open(mutate(Sealer(KEY, 7, SESSION).seal(pkt(42))))
    assert exc.value.cause == cause


def test_replay_window_is_strictly_increasing_per_key_id():
    auth = Authenticator({1: KEY, 2: bytes(range(1, 33))}, UnityCodec.size)
    assert auth.admit(1, SESSION, 5) is False          # the first packet of a key
    auth.admit(1, SESSION, 6)
    for session, seq in ((SESSION, 6), (SESSION, 3), (SESSION - 1, 1000)):
        with pytest.raises(PacketRejected, match="replayed"):
            auth.admit(1, session, seq)
    assert auth.admit(2, SESSION - 5, 0) is False      # another key id: its own window
    assert auth.admit(1, SESSION + 1, 0) is True       # a new session (the sender restarted)
    with pytest.raises(PacketRejected, match="replayed"):
        auth.admit(1, SESSION, 7)                      # the old session is over
    assert auth.windows == {1: (SESSION + 1, 0), 2: (SESSION - 5, 0)}


def test_without_auth_a_sealed_datagram_is_refused(pulse_section):
    with pytest.raises(PacketRejected, match="bad_size"):
        UnityCodec(PacketParams.from_config(pulse_section["packet"])).decode(Sealer(KEY, 1, 1).seal(pkt(1)))


def test_key_file_single_key_and_key_ring(tmp_path, pulse_section):
    f = tmp_path / "vr.key"
    f.write_text(KEY.hex()[:32] + "\n" + KEY.hex()[32:] + "\n")        # whitespace ignored
    sec = {"mode": "required", "key_file": str(f), "key_id": 3}
    assert keys_from_params(AuthParams.from_config(sec)) == {3: KEY}
    assert keys_from_params(AuthParams.from_config(pulse_section["auth"])) is None   # default: off
    f.write_text(f"# rotation: 3 is the new key\n2: {bytes(range(1, 33)).hex()}\n3: {KEY.hex()}  # since May\n")
    assert read_keys(str(f), 9) == {2: bytes(range(1, 33)), 3: KEY}
    s = Sealer.from_params(AuthParams.from_config(sec))
    assert (s.key, s.key_id) == (KEY, 3) and s.session > SESSION
    with pytest.raises(ValueError, match="no key with pulse.auth.key_id 4"):
        Sealer.from_params(AuthParams.from_config(dict(sec, key_id=4)))
    for text, why in (("abcd", "at least 16"), ("zz" * 20, "not a readable hex key"),
                      (f"1: {KEY.hex()}\n1: {KEY.hex()}", "once"), (f"300: {KEY.hex()}", "0..255"),
                      (f"1: {KEY.hex()}\n2: abcd", "key 2 has 2 bytes")):
        f.write_text(text)
        with pytest.raises(ValueError, match=why):
            keys_from_params(AuthParams.from_config(sec))
    with pytest.raises(ValueError, match="not a readable hex key"):
        keys_from_params(AuthParams.from_config(dict(sec, key_file=str(tmp_path / "absent"))))
    with pytest.raises(ValueError, match="key_file is empty"):
        keys_from_params(AuthParams.from_config(dict(sec, key_file="")))
    with pytest.raises(ValueError, match="not a readable hex key"):          # the core reads it at start
        VrCommandCore(PulseConfig.from_config(dict(pulse_section, auth=dict(sec, key_file=str(tmp_path / "absent")))),
                      clock=lambda: 0.0)


def test_sessions_increase_within_a_process():
    a, b = new_session(), new_session()
    assert SESSION < a < b


def test_forged_jump_from_a_host_without_the_key_never_commands(pulse_section, tmp_path):
    """Even N consecutive forged numbers (which pass the re-synchronisation rule) are refused."""
    core, t = core_with(pulse_section, tmp_path)
    seal = Sealer(KEY, 1, SESSION).seal
    for s in range(50):
        assert core.on_datagram(seal(pkt(s)), A, t[0]) is not None
        t[0] += 0.04
    for k in range(10):                                   # forged: right layout, no key
        assert core.on_datagram(Sealer(b"x" * 32, 1, SESSION).seal(pkt(100000 + k, 2)), A, t[0]) is None
    emitted = []
    for s in range(50, 80):
        assert core.on_datagram(seal(pkt(s)), A, t[0]) is not None
        emitted += [e.state for e in core.tick(t[0]).emissions]
        t[0] += 0.04
    assert not any(emitted) and core.link.rejected["bad_tag"] == 10 and core.commands == 0


def test_a_replayed_recording_never_commands_even_after_a_disconnection(pulse_section, tmp_path):
    """A captured press (3 consecutive authentic packets: enough for the re-synchronisation rule
    without authentication) replayed later -- while the link is up and after the disconnection
    timeout reset the sequence tracker -- is dropped as ``replayed`` and commands nothing."""
    core, t = core_with(pulse_section, tmp_path)
    seal = Sealer(KEY, 1, SESSION).seal
    captured = []
    for s in range(60):
        d = seal(pkt(s, 2 if 20 <= s < 23 else 0, 1 if 20 <= s < 23 else 0))
        if 20 <= s < 23:
            captured.append(d)
        core.on_datagram(d, A, t[0])
        core.tick(t[0])
        t[0] += 0.04
    assert core.commands == 1
    for _ in range(2):
        for d in captured:
            assert core.on_datagram(d, A, t[0]) is None
        for _ in range(100):                              # 4 s of silence: disconnected, tracker reset
            core.tick(t[0])
            t[0] += 0.04
    assert core.link.tracker.c.resets >= 1
    assert core.commands == 1 and core.link.rejected["replayed"] == 6
    assert core.link.counter_values()["rejected_replayed"] == 6            # what /diagnostics shows


def test_a_restarted_sender_is_a_new_session_accepted_at_once(pulse_section, tmp_path):
    """The same key, a later session: its first packet (number 0 again) is accepted at once -- no
    restart confirmation needed, the tag proves it is the headset -- and its pulse commands."""
    core, t = core_with(pulse_section, tmp_path)
    for s in range(30):
        core.on_datagram(Sealer(KEY, 1, SESSION).seal(pkt(s)), A, t[0])
        t[0] += 0.04
    new = Sealer(KEY, 1, SESSION + 5000)
    for s in range(pulse_section["check"]["messages"]):      # one pulse of the new session
        assert core.on_datagram(new.seal(pkt(s, 1)), A, t[0]) is not None
        t[0] += 0.04
    assert core.commands == 1 and core.link.rejected["restart_pending"] == 0
    assert core.on_datagram(Sealer(KEY, 1, SESSION).seal(pkt(31)), A, t[0]) is None   # the old one: over
    assert core.link.rejected["replayed"] == 1


def test_vr_emulate_seals_its_packets_with_the_key_from_the_environment(tmp_path, monkeypatch, pulse_section):
    """`hri vr-emulate` with HRI_VR_AUTH=required HRI_VR_KEY_FILE=<file> (the documented way; the
    repository's config holds no key) sends 60-byte datagrams the robot accepts; an emulated
    app restart is a new session (real UDP on loopback)."""
    import socket

    from hri_pulse import emulator
    from hri_runtime.config.tree import load_robot_config

    key = tmp_path / "vr.key"
    key.write_text(KEY.hex() + "\n")
    monkeypatch.setenv("HRI_VR_AUTH", "required")
    monkeypatch.setenv("HRI_VR_KEY_FILE", str(key))
    cfg = load_robot_config("tino")["pulse"]
    assert cfg["auth"]["mode"] == "required" and cfg["auth"]["key_file"] == str(key)
    auth = Authenticator(keys_from_params(AuthParams.from_config(cfg["auth"])), UnityCodec.size)
    codec = UnityCodec(PacketParams.from_config(cfg["packet"]))
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(10.0)
    (tmp_path / "sc.yaml").write_text("duration_s: 0.6\nevery_s: 0.2\nimpairments: {restart_at_s: [0.3], "
                                      "restart_gap_s: 0.04}\n")
    try:
        assert emulator.main(["--host", "127.0.0.1", "--port", str(rx.getsockname()[1]), "--scenario",
                              str(tmp_path / "sc.yaml"), "--speed", "3"]) == 0
        got = [rx.recv(2048)]
        rx.settimeout(0.5)
        while True:
            try:
                got.append(rx.recv(2048))
            except socket.timeout:
                break
    finally:
        rx.close()
    assert got and all(len(d) == 60 for d in got)
    opened = [auth.open(d) for d in got]
    sessions = sorted({s for _, _, s in opened})
    assert len(sessions) == 2 and sessions[1] == sessions[0] + 1 and {k for _, k, _ in opened} == {1}
    seqs = [(s, codec.decode(b).message_order) for b, _, s in opened]
    assert seqs == sorted(seqs) and seqs[0][1] == 0 and [q for s, q in seqs if s == sessions[1]][0] == 0
    for b, k, s in opened:
        auth.admit(k, s, codec.decode(b).message_order)        # every one fresh, in order
