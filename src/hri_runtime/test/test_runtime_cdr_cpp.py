"""The C++ CDR codec (hri_runtime._cdr, plans from hri_runtime.impl.cdr_plan) against rosbags.

rosbags' generated codec is the reference: for every message type of the store, random valid
messages serialize to the same bytes, decode to the same values (both endiannesses); malformed
payloads raise msgs.DecodeError (never another exception, never a crash) exactly when rosbags
rejects them; bad messages raise msgs.EncodeError naming the field.
"""
from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest
from rosbags.interfaces import Nodetype

from hri_runtime import msgs

from hri_runtime import _cdr as cdr
from hri_runtime.impl import cdr_plan  # noqa: E402  (needs the extension)

STORE = msgs.typestore()
SEED = 20261123  # fixed: the corpus is reproducible

_INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "byte": (-2**7, 2**7 - 1), "uint8": (0, 255), "char": (0, 255),
    "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1), "int32": (-2**31, 2**31 - 1),
    "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
}
_F32_MAX = float(np.finfo(np.float32).max)
_FLOATS = [0.0, -0.0, 1.5, -2.25, math.nan, math.inf, -math.inf, 1e-300, 5e-324, 1.7976931348623157e308]
_F32S = [0.0, -0.0, 1.5, -2.25, math.nan, math.inf, -math.inf, _F32_MAX, -_F32_MAX, 1e-45]
_STRINGS = ["", "a", "hello", "héllo wörld", "日本語", "emoji 🤖", "x" * 37, "tab\tand\nnewline"]


def all_types() -> list[str]:
    return sorted(STORE.fielddefs)


def _prim(rng: random.Random, prim: str):
    if prim == "bool":
        return rng.random() < 0.5
    if prim in _INT_RANGES:
        lo, hi = _INT_RANGES[prim]
        return rng.choice([lo, hi, 0, rng.randint(lo, hi)])
    if prim == "float64":
        return rng.choice(_FLOATS + [rng.uniform(-1e6, 1e6)])
    if prim == "float32":
        return rng.choice(_F32S + [float(np.float32(rng.uniform(-1e6, 1e6)))])
    if prim == "string":
        return rng.choice(_STRINGS)
    raise AssertionError(prim)


def _prim_array(rng: random.Random, prim: str, n: int) -> np.ndarray:
    return np.array([_prim(rng, prim) for _ in range(n)], dtype=cdr_plan._DTYPES[prim])  # rosbags' dtypes (byte: int8)


def _value(rng: random.Random, desc, depth: int):
    kind, rest = desc
    if kind == Nodetype.BASE:
        return _prim(rng, rest[0])
    if kind == Nodetype.NAME:
        return random_msg(rng, rest, depth + 1)
    if kind == Nodetype.ARRAY:
        sub, n = rest
    else:
        sub, n = rest[0], rng.choice([0, 0, 1, 3] if depth < 3 else [0])
    if sub[0] == Nodetype.BASE and sub[1][0] != "string":
        return _prim_array(rng, sub[1][0], n)
    return [_value(rng, sub, depth) for _ in range(n)]


def random_msg(rng: random.Random, t: str, depth: int = 0):
    cls = STORE.types[t]
    fields = STORE.get_msgdef(t).fields
    return cls(*[_value(rng, desc, depth) for _, desc in fields])


def ref_bytes(msg, t: str, little: bool = True) -> bytes:
    return bytes(STORE.serialize_cdr(msg, t, little_endian=little))


def ref_decode(data: bytes, t: str):
    return STORE.deserialize_cdr(data, t)


def same(a, b, path="") -> None:
    """Deep equality, bit exact for floats (NaN == NaN), dtypes of arrays included."""
    if hasattr(a, "__msgtype__"):
        assert type(a) is type(b), path
        for k in a.__dataclass_fields__:
            if k != "__msgtype__":
                same(getattr(a, k), getattr(b, k), f"{path}.{k}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, path
        if a.dtype == np.bool_:
            assert a.tolist() == b.tolist(), path
        else:
            assert a.tobytes() == b.tobytes(), path
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert isinstance(b, float), path
        assert (math.isnan(a) and math.isnan(b)) or struct.pack("<d", a) == struct.pack("<d", b), path
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


def plan(t: str):
    p = msgs._codec(t)[2]
    assert p is not None, f"{t} has no C++ plan"
    return p


# ----------------------------------------------------------------------------- every type


def test_every_type_has_a_cpp_plan():
    types = all_types()
    assert len(types) > 150
    assert "std_srvs/srv/SetBool_Request" in types and "example_interfaces/srv/AddTwoInts_Response" in types
    missing = [t for t in types if msgs.codec_backend(t) != "cpp"]
    assert missing == []


@pytest.mark.parametrize("t", all_types())
def test_random_messages_bytes_equal_rosbags_and_decode_equal(t):
    rng = random.Random(f"{SEED}:{t}")
    p = plan(t)
    for i in range(6):
        msg = random_msg(rng, t) if i else msgs.new(t)
        want = ref_bytes(msg, t)
        got = cdr.serialize(p, msg)
        assert got == want, f"{t} sample {i}: {got.hex()} != {want.hex()}"
        assert msgs.serialize(msg, t) == want
        back = cdr.deserialize(p, want)
        same(ref_decode(want, t), back, t)
        be = ref_bytes(msg, t, little=False)
        assert be[:2] == b"\x00\x00"
        same(back, msgs.deserialize(be, t), t + "(BE)")


def test_decoded_arrays_own_their_data_with_rosbags_dtypes():
    js = msgs.new("sensor_msgs/msg/JointState", name=["a", "b"], position=[1.0, 2.0])
    back = msgs.deserialize(msgs.serialize(js), "sensor_msgs/msg/JointState")
    assert back.position.dtype == np.float64 and back.position.flags.owndata and back.position.flags.writeable
    back.position[0] = 5.0                          # writable, independent of the payload
    assert back.name == ["a", "b"] and back.header.stamp.sec == 0
    img = msgs.new("sensor_msgs/msg/Image", data=np.arange(5, dtype=np.uint8))
    data = msgs.deserialize(msgs.serialize(img), "sensor_msgs/msg/Image").data
    assert data.dtype == np.uint8 and data.tolist() == [0, 1, 2, 3, 4]
    assert "position=array([5., 2.])" in repr(back)   # the store's dataclass, repr works
    assert type(back) is msgs.get("sensor_msgs/msg/JointState")


def test_decode_accepts_bytearray_and_memoryview():
    b = msgs.serialize(msgs.new("std_msgs/msg/String", data="héllo"))
    class Payload:                                  # no buffer protocol, only __bytes__
        def __bytes__(self):
            return b

    strided = memoryview(bytes(x for c in b for x in (c, 0)))[::2]   # non-contiguous view
    for data in (bytearray(b), memoryview(b), memoryview(b"xx" + b)[2:], Payload(), strided):
        assert msgs.deserialize(data, "std_msgs/msg/String").data == "héllo"


def test_golden_string_and_backend():
    assert msgs.codec_backend("std_msgs/msg/String") == "cpp"
    assert msgs.serialize(msgs.new("std_msgs/msg/String", data="hello")).hex() == "000100000600000068656c6c6f00"
    assert msgs.serialize(msgs.new("std_msgs/msg/Empty")) == bytes.fromhex("0001000000")


def test_lists_tuples_and_dicts_are_accepted_like_the_rosbags_path():
    t = "sensor_msgs/msg/JointState"
    ref = msgs.serialize(msgs.new(t, name=["a", "b"], position=[1.0, 2.0], velocity=[0.5, 0.25]))
    js = msgs.new(t)
    js.name, js.position, js.velocity = ("a", "b"), [1.0, 2.0], (0.5, 0.25)
    assert msgs.serialize(js) == ref
    js.position = np.array([1, 2], dtype=np.int64)   # other dtype: converted as np.asarray does
    js.velocity = np.array([0.5, 0.25], dtype=np.float32)
    assert msgs.serialize(js) == ref
    ps = msgs.new("geometry_msgs/msg/PoseStamped")
    ps.pose = {"position": {"x": 1.0}}                # dict for a nested message: coerced
    assert msgs.deserialize(msgs.serialize(ps), "geometry_msgs/msg/PoseStamped").pose.position.x == 1.0
    # byte arrays: uint8 (msgs.new) and int8 (rosbags decode) are the same bytes
    a = msgs.new("std_msgs/msg/ByteMultiArray", data=[1, 255])
    b = msgs.new("std_msgs/msg/ByteMultiArray")
    b.data = np.array([1, -1], dtype=np.int8)
    assert msgs.serialize(a) == msgs.serialize(b)


def test_keyword_calls_and_threads_with_cache_clears():
    import threading

    t = "sensor_msgs/msg/JointState"
    js = msgs.new(t, name=["a", "b", "c"], position=[1.0, 2.0, 3.0])
    want = ref_bytes(js, t)
    assert msgs.serialize(msg=js, type_name=t) == want
    assert msgs.deserialize(data=want, type_name=t).name == ["a", "b", "c"]
    bad: list = []
    stop = threading.Event()

    def work():
        for _ in range(3000):
            if msgs.serialize(js, t) != want or msgs.deserialize(want, t).position.tolist() != [1.0, 2.0, 3.0]:
                bad.append(1)

    def clear():
        while not stop.is_set():
            msgs._clear_codecs()                       # plans dropped while calls run

    workers = [threading.Thread(target=work) for _ in range(3)]
    cl = threading.Thread(target=clear)
    cl.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    cl.join()
    assert bad == []


def test_rosbags_fallback_still_works(monkeypatch):
    monkeypatch.setattr(msgs, "_compile_cpp_plan", lambda t: None)
    msgs._clear_codecs()
    try:
        assert msgs.codec_backend("std_msgs/msg/String") == "rosbags"
        b = msgs.serialize(msgs.new("std_msgs/msg/String", data="hello"))
        assert b.hex() == "000100000600000068656c6c6f00"
        assert msgs.deserialize(b, "std_msgs/msg/String").data == "hello"
        with pytest.raises(msgs.DecodeError):
            msgs.deserialize(b[:-1], "std_msgs/msg/String")
    finally:
        msgs._clear_codecs()
    monkeypatch.undo()
    assert msgs.codec_backend("std_msgs/msg/String") == "cpp"


def test_without_the_extension_msgs_uses_rosbags():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['hri_runtime._cdr'] = None\n"   # extension not importable
        "from hri_runtime import msgs\n"
        "b = msgs.serialize(msgs.new('std_msgs/msg/String', data='hello'))\n"
        "assert b.hex() == '000100000600000068656c6c6f00', b.hex()\n"
        "assert msgs.deserialize(b, 'std_msgs/msg/String').data == 'hello'\n"
        "assert msgs.codec_backend('std_msgs/msg/String') == 'rosbags'\n"
        "assert msgs.serialize is msgs._serialize_py\n"
        "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_registered_type_gets_a_plan_after_register_msg():
    t = "hri_cdr_test/msg/Mixed"
    msgs.register_msg(t, "uint8 a\nfloat64[] b\nstring[2] s\nint16 c\ngeometry_msgs/Point[<=3] pts\nbool[] f\n")
    assert msgs.codec_backend(t) == "cpp"
    rng = random.Random(SEED)
    for _ in range(20):
        m = random_msg(rng, t)
        b = ref_bytes(m, t)
        assert msgs.serialize(m) == b
        same(ref_decode(b, t), msgs.deserialize(b, t))


# ----------------------------------------------------------------------------- malformed

MALFORMED_TYPES = [
    "std_msgs/msg/String", "sensor_msgs/msg/JointState", "geometry_msgs/msg/PoseStamped",
    "std_msgs/msg/Float64MultiArray", "tf2_msgs/msg/TFMessage", "diagnostic_msgs/msg/DiagnosticArray",
    "sensor_msgs/msg/PointCloud2", "visualization_msgs/msg/MarkerArray",
]


def _valid_payloads(t: str, count: int = 3) -> list[bytes]:
    rng = random.Random(f"{SEED}:payload:{t}")
    out = []
    while len(out) < count:
        b = ref_bytes(random_msg(rng, t), t)
        if len(b) < 4000:
            out.append(b)
    return out


def _outcome(fn, data, t):
    """('ok', msg) or ('err', None); DecodeError is the only accepted exception."""
    try:
        return "ok", fn(data, t)
    except msgs.DecodeError:
        return "err", None


def _rosbags_outcome(data, t):
    try:
        if len(data) < 4 or data[0] != 0 or data[1] not in (0, 1):
            return "err", None
        return "ok", ref_decode(data, t)
    except Exception:  # noqa: BLE001  (SerdeError, struct.error, ...)
        return "err", None


def _agree(data: bytes, t: str) -> None:
    got, msg = _outcome(msgs.deserialize, data, t)
    want, ref = _rosbags_outcome(data, t)
    assert got == want, f"{t}: C++ {got}, rosbags {want} on {data.hex()}"
    if got == "ok":
        same(ref, msg, t)


@pytest.mark.parametrize("t", MALFORMED_TYPES)
def test_every_truncation_is_a_decode_error(t):
    for b in _valid_payloads(t):
        for n in range(len(b)):
            with pytest.raises(msgs.DecodeError):
                msgs.deserialize(b[:n], t)


@pytest.mark.parametrize("t", MALFORMED_TYPES)
def test_byte_flips_and_huge_lengths_agree_with_rosbags(t):
    rng = random.Random(f"{SEED}:flip:{t}")
    for b in _valid_payloads(t):
        for _ in range(150):
            d = bytearray(b)
            for _ in range(rng.choice([1, 1, 2, 4])):
                d[rng.randrange(4, len(d))] = rng.randrange(256)
            _agree(bytes(d), t)
        for off in range(4, len(b) - 3, 4 if len(b) < 600 else 12):
            d = bytearray(b)
            d[off:off + 4] = b"\xff\xff\xff\xff"        # a length field past the end
            _agree(bytes(d), t)
            d[off:off + 4] = b"\x00\x00\x00\x80"
            _agree(bytes(d), t)
        _agree(b + b"\x00" * 3, t)                      # 3 trailing padding bytes: accepted
        _agree(b + b"\x00" * 4, t)                      # 4: rejected


def test_bad_headers_and_utf8_and_terminator():
    t = "std_msgs/msg/String"
    ok = bytes.fromhex("000100000600000068656c6c6f00")
    for bad in (b"", b"\x00\x01\x00", bytes.fromhex("0101000006000000"), bytes.fromhex("0002000006000000"),
                ok[:-1] + b"x",                                   # no NUL
                bytes.fromhex("0001000003000000ff0000"),          # not UTF-8
                bytes.fromhex("0001000003000000eda08000"),        # a surrogate (not UTF-8)
                bytes.fromhex("0001000000000000")):               # length 0 (needs the NUL)
        with pytest.raises(msgs.DecodeError):
            msgs.deserialize(bad, t)
    assert msgs.deserialize(bytes.fromhex("000000000000000668656c6c6f00"), t).data == "hello"  # BE


def test_fuzz_100k_random_inputs_never_crash():
    rng = random.Random(SEED)
    types = MALFORMED_TYPES + ["sensor_msgs/msg/Imu", "std_msgs/msg/Empty", "builtin_interfaces/msg/Time"]
    seeds = {t: _valid_payloads(t, 1)[0] for t in types}
    ok = 0
    for i in range(100_000):
        t = types[i % len(types)]
        mode = i % 3
        if mode == 0:                                   # random bytes behind a valid header
            data = rng.choice([b"\x00\x01\x00\x00", b"\x00\x00\x00\x00"]) + rng.randbytes(rng.randrange(0, 48))
        elif mode == 1:                                 # mutated valid payload
            d = bytearray(seeds[t])
            for _ in range(rng.randrange(1, 6)):
                d[rng.randrange(len(d))] = rng.randrange(256)
            data = bytes(d[:rng.randrange(len(d) + 1)] if rng.random() < 0.3 else d)
        else:                                           # anything
            data = rng.randbytes(rng.randrange(0, 24))
        try:
            msgs.deserialize(data, t)
            ok += 1
        except msgs.DecodeError:
            pass
    assert 0 < ok < 100_000


# ----------------------------------------------------------------------------- encode errors


def _encode_error(msg, t=None) -> str:
    with pytest.raises(msgs.EncodeError) as e:
        msgs.serialize(msg, t)
    return str(e.value)


def test_encode_errors_name_the_field():
    ps = msgs.new("geometry_msgs/msg/PoseStamped")
    ps.header.stamp.sec = 2**31
    assert "header.stamp.sec" in _encode_error(ps) and "out of range" in _encode_error(ps)
    ps.header.stamp.sec = 1.5
    assert "header.stamp.sec" in _encode_error(ps)
    ps.header.stamp.sec = 0
    ps.header.frame_id = 5
    assert "header.frame_id" in _encode_error(ps)
    ps.header.frame_id = "map"
    ps.pose.position.x = "1.0"
    assert "pose.position.x" in _encode_error(ps)
    ps.pose.position.x = 1.0
    ps.pose = msgs.new("geometry_msgs/msg/Twist")     # nested message of the wrong type
    assert "pose" in _encode_error(ps) and "geometry_msgs/msg/Pose" in _encode_error(ps)

    assert "expected std_msgs/msg/String" in _encode_error(msgs.new("geometry_msgs/msg/Twist"), "std_msgs/msg/String")

    js = msgs.new("sensor_msgs/msg/JointState", name=["a"])
    js.name = ["a", 3]
    assert "name[1]" in _encode_error(js)
    js.name = ["a"]
    js.position = ["x"]
    assert "position" in _encode_error(js)

    imu = msgs.new("sensor_msgs/msg/Imu")
    imu.orientation_covariance = np.zeros(8)
    assert "orientation_covariance" in _encode_error(imu) and "length 9" in _encode_error(imu)

    for t, field, bad in [("std_msgs/msg/UInt8", "data", 256), ("std_msgs/msg/UInt8", "data", -1),
                          ("std_msgs/msg/UInt64", "data", -1), ("std_msgs/msg/UInt64", "data", 2**64),
                          ("std_msgs/msg/Int64", "data", 2**63), ("std_msgs/msg/Int8", "data", 128),
                          ("std_msgs/msg/Float32", "data", 1e39), ("std_msgs/msg/Bool", "data", "yes"),
                          ("std_msgs/msg/Bool", "data", 2), ("std_msgs/msg/String", "data", b"bytes"),
                          ("std_msgs/msg/String", "data", "\ud800")]:
        m = msgs.new(t)
        setattr(m, field, bad)
        assert f"{t}.{field}" in _encode_error(m), (t, bad)

    tf = msgs.new("tf2_msgs/msg/TFMessage", transforms=[msgs.new("geometry_msgs/msg/TransformStamped")])
    tf.transforms[0].transform.rotation.w = None
    assert "transforms[0].transform.rotation.w" in _encode_error(tf)


def test_extreme_values_roundtrip():
    for t, v in [("std_msgs/msg/UInt64", 2**64 - 1), ("std_msgs/msg/Int64", -2**63), ("std_msgs/msg/Int8", -128),
                 ("std_msgs/msg/Float32", _F32_MAX), ("std_msgs/msg/Bool", np.bool_(True)),
                 ("std_msgs/msg/Int32", np.int32(-7)), ("std_msgs/msg/Float64", np.float32(0.5)),
                 ("std_msgs/msg/Float64", 3), ("std_msgs/msg/Byte", -1), ("std_msgs/msg/Char", 255)]:
        m = msgs.new(t, data=v)
        b = msgs.serialize(m)
        assert b == ref_bytes(m, t)
        assert msgs.deserialize(b, t).data == v


def test_repeated_short_strings_are_shared_and_every_string_stays_exact():
    """Decoded short strings come from a small cache (joint names repeat in every message): the
    same bytes give the same str object, and 3000 distinct strings (cache slots overwritten
    many times, lengths around the 64-byte limit, non-ASCII) still decode exactly."""
    import random

    t = "sensor_msgs/msg/JointState"
    names = [f"fr3_joint{k}" for k in range(7)]
    data = msgs.serialize(msgs.new(t, name=names), t)
    a, b = msgs.deserialize(data, t), msgs.deserialize(data, t)
    assert a.name == names and all(x is y for x, y in zip(a.name, b.name))
    rng = random.Random(7)
    alphabet = "abcxyz_0123456789äöü€漢"
    for i in range(3000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 5, 20, 40, 63, 64, 65, 90])))
        got = msgs.deserialize(msgs.serialize(msgs.new("std_msgs/msg/String", data=s), "std_msgs/msg/String"),
                               "std_msgs/msg/String").data
        assert got == s, (i, s, got)


def test_encoding_after_a_larger_a_smaller_and_an_equal_message_is_exact():
    """The encoder allocates the size of the plan's last message (public C API only: a bytes
    object filled before it is shared); a message of that size is returned as is, a larger one
    moves to a bigger object, a shorter one is copied to its length. Every path gives rosbags'
    bytes, and a returned bytes object is never written again."""
    t = "std_msgs/msg/String"
    p = plan(t)
    out = []
    for n in (3, 3, 5000, 1, 0, 1, 70000, 70000, 7, 300):
        m = msgs.new(t, data="x" * n)
        b = cdr.serialize(p, m)
        assert b == ref_bytes(m, t)
        out.append((b, bytearray(b)))              # a copy of its content
    assert all(b == copy for b, copy in out)       # no returned object changed by a later encode
