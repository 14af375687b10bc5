"""Optional packet authentication (docs/protocols.md "Authentication"): 32-byte packet + 20-byte
trailer (auth_version 1, key_id, reserved 0, HMAC-SHA256(key, bytes 0..35)[:16]). With
``pulse.auth.mode: required`` only valid 52-byte datagrams are decoded; a forged sequence jump
from a host without the key never reaches the sequence tracker."""
import hashlib
import hmac
import struct

import pytest

from hri_pulse.core import PacketParams
from hri_pulse.core.codec import AUTH_SIZE, AuthParams, PacketAuth, PacketRejected, UnityCodec, UnityPacket
from hri_pulse.core.vr import PulseConfig, VrCommandCore

KEY = bytes(range(32))
A = ("127.0.0.1", 40000)


def pkt(seq, state=0, ang=0):
    return UnityCodec.encode(UnityPacket(1.0, 2.0, 3.0, state, ang, 50.0, 0.0, seq))


def test_golden_vector_layout(pulse_section):
    """The exact bytes a Unity client must produce (C#: HMACSHA256 over bytes 0..35, first 16)."""
    auth = PacketAuth(KEY, 7)
    d = auth.seal(pkt(42, 2, -1))
    assert len(d) == AUTH_SIZE == 52
    assert d[:32] == struct.pack("<fffiiffi", 1.0, 2.0, 3.0, 2, -1, 50.0, 0.0, 42)
    assert d[32:36] == bytes([1, 7, 0, 0])
    assert d[36:] == hmac.new(KEY, d[:36], hashlib.sha256).digest()[:16]
    assert d.hex() == ("0000803f000000400000404002000000ffffffff00004842000000002a000000"   # docs/protocols.md
                       "01070000" "a671cf7d00d0e36963a7d8403f003afc")
    codec = UnityCodec(PacketParams.from_config(pulse_section["packet"]), auth)
    assert codec.decode(d).message_order == 42


@pytest.mark.parametrize("mutate,cause", [
    (lambda d: d[:32], "bad_size"),                                   # unauthenticated packet
    (lambda d: d + b"\0", "bad_size"),
    (lambda d: d[:32] + bytes([2]) + d[33:], "bad_auth_version"),
    (lambda d: d[:34] + b"\1\0" + d[36:], "bad_auth_version"),        # reserved != 0
    (lambda d: d[:33] + bytes([8]) + d[34:], "bad_key_id"),
    (lambda d: d[:51] + bytes([d[51] ^ 1]), "bad_tag"),
    (lambda d: d[:28] + struct.pack("<i", 100042) + d[32:], "bad_tag"),  # the forged jump
    (lambda d: PacketAuth(bytes(32), 7).seal(d[:32]), "bad_tag"),     # another key
])
def test_forged_or_corrupted_datagrams_are_refused(pulse_section, mutate, cause):
    codec = UnityCodec(PacketParams.from_config(pulse_section["packet"]), PacketAuth(KEY, 7))
    with pytest.raises(PacketRejected) as exc:
        codec.decode(mutate(PacketAuth(KEY, 7).seal(pkt(42))))
    assert exc.value.cause == cause


def test_without_auth_a_52_byte_datagram_is_refused(pulse_section):
    with pytest.raises(PacketRejected, match="bad_size"):
        UnityCodec(PacketParams.from_config(pulse_section["packet"])).decode(PacketAuth(KEY, 1).seal(pkt(1)))


def test_key_file_from_config(pulse_section, tmp_path):
    f = tmp_path / "pulse.key"
    f.write_text(KEY.hex()[:32] + "\n" + KEY.hex()[32:] + "\n")
    sec = {"mode": "required", "key_file": str(f), "key_id": 3}
    assert PacketAuth.from_params(AuthParams.from_config(sec)) == PacketAuth(KEY, 3)
    assert PacketAuth.from_params(AuthParams.from_config(pulse_section["auth"])) is None   # default: off
    for text, why in (("abcd", "at least 16"), ("zz" * 20, "not a readable hex key")):
        f.write_text(text)
        with pytest.raises(ValueError, match=why):
            PacketAuth.from_params(AuthParams.from_config(sec))
    with pytest.raises(ValueError, match="not a readable hex key"):
        PacketAuth.from_params(AuthParams.from_config(dict(sec, key_file=str(tmp_path / "absent"))))
    with pytest.raises(ValueError, match="not a readable hex key"):          # the core reads it at start
        VrCommandCore(PulseConfig.from_config(dict(pulse_section, auth=dict(sec, key_file=str(tmp_path / "absent")))),
                      clock=lambda: 0.0)


def test_forged_jump_from_a_host_without_the_key_never_commands(pulse_section, tmp_path):
    """Even N consecutive forged numbers (which pass the re-synchronisation rule) are refused."""
    f = tmp_path / "pulse.key"
    f.write_text(KEY.hex())
    cfg = PulseConfig.from_config(dict(pulse_section, auth={"mode": "required", "key_file": str(f), "key_id": 1}))
    t = [100.0]
    core = VrCommandCore(cfg, clock=lambda: t[0])
    seal = core.auth.seal
    for s in range(50):
        assert core.on_datagram(seal(pkt(s)), A, t[0]) is not None
        t[0] += 0.04
    for k in range(10):                                   # forged: right layout, no key
        assert core.on_datagram(PacketAuth(b"x" * 32, 1).seal(pkt(100000 + k, 2)), A, t[0]) is None
    emitted = []
    for s in range(50, 80):
        assert core.on_datagram(seal(pkt(s)), A, t[0]) is not None
        emitted += [e.state for e in core.tick(t[0]).emissions]
        t[0] += 0.04
    assert not any(emitted) and core.link.rejected["bad_tag"] == 10 and core.commands == 0


def test_vr_emulate_seals_its_packets_when_the_config_requires_it(tmp_path, monkeypatch):
    """`hri vr-emulate` with a config whose pulse.auth.mode is required sends 52-byte datagrams
    that the robot's codec accepts (a copy of the config tree, real UDP on loopback)."""
    import shutil
    import socket
    from pathlib import Path

    from hri_pulse import emulator
    from hri_runtime.config import find_config_root, load_robot_config

    root = tmp_path / "config"
    shutil.copytree(find_config_root(Path(__file__)), root)
    key = tmp_path / "pulse.key"
    key.write_text(KEY.hex())
    with open(root / "robots" / "tino.yaml", "a") as f:
        f.write(f"\npulse:\n  auth: {{mode: required, key_file: '{key}', key_id: 5}}\n")
    monkeypatch.setenv("HRI_CONFIG_ROOT", str(root))
    cfg = load_robot_config("tino")["pulse"]
    auth = PacketAuth.from_params(AuthParams.from_config(cfg["auth"]))
    codec = UnityCodec(PacketParams.from_config(cfg["packet"]), auth)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(10.0)
    try:
        assert emulator.main(["--host", "127.0.0.1", "--port", str(rx.getsockname()[1]),
                              "--duration", "0.3", "--every", "0.1", "--speed", "3"]) == 0
        got = [rx.recv(2048)]
        rx.settimeout(0.5)
        while True:
            try:
                got.append(rx.recv(2048))
            except socket.timeout:
                break
    finally:
        rx.close()
    assert got and all(len(d) == 52 for d in got)
    assert [codec.decode(d).message_order for d in got] == list(range(len(got)))
