"""The array and buffer arguments of hri_runtime._cdr (the C++ CDR codec and the Zenoh putter).

Array fields of a message (float64[] sequences, fixed float64[9], uint8[] data, bool[]) and the
payload buffers of deserialize / Putter get non-contiguous, Fortran, byte-swapped, misaligned,
read-only, list and other-dtype inputs. Values that are the same numbers give the same bytes as the
canonical input; anything else (complex, object, strings, dates, wrong shapes) is msgs.EncodeError / DecodeError / TypeError / ValueError, never a
crash or another exception. `make asan` runs this file against the -fsanitize=address,undefined
build of the extension.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from hri_runtime import _cdr, msgs

ERRORS = (msgs.EncodeError, msgs.DecodeError, TypeError, ValueError, OverflowError)


def _noncontig(a):
    b = np.zeros(a.shape + (2,), a.dtype)
    b[..., 0] = a
    return b[..., 0]


def _misaligned(a):
    raw = np.zeros(a.nbytes + 1, np.uint8)
    v = np.frombuffer(raw.data, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    raw[1:] = np.frombuffer(np.ascontiguousarray(a).tobytes(), np.uint8)
    return v


def _readonly(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


FIELDS = {  # (type, field) -> canonical value
    ("sensor_msgs/msg/JointState", "position"): np.array([0.5, -1.25, 3.0, 1e-300, -0.0]),
    ("sensor_msgs/msg/Imu", "orientation_covariance"): np.arange(9, dtype=float) / 7,
    ("sensor_msgs/msg/Image", "data"): np.arange(12, dtype=np.uint8),
    ("std_msgs/msg/Float32MultiArray", "data"): np.array([1.5, -2.25, 3.0], np.float32),
    ("std_msgs/msg/Int64MultiArray", "data"): np.array([-2**62, 5, 2**40], np.int64),
}


def _encode(t, field, value):
    m = msgs.new(t)
    setattr(m, field, value)
    return msgs.serialize(m, t)


def _outcome(f, *args):
    try:
        return "ok", f(*args)
    except ERRORS as e:
        return type(e), str(e)


@pytest.mark.parametrize("t,field", list(FIELDS))
def test_array_fields_in_any_layout_encode_the_same_bytes(t, field):
    a = FIELDS[t, field]
    want = _encode(t, field, a)
    same = {"non-contiguous": _noncontig(a), "misaligned": _misaligned(a), "byte-swapped": a.astype(a.dtype.newbyteorder(">")),
            "read-only": _readonly(a), "list": a.tolist(), "tuple": tuple(a.tolist())}
    for label, v in same.items():
        assert _encode(t, field, v) == want, f"{t}.{field} as {label}"
    assert msgs.serialize(msgs.deserialize(want, t), t) == want


@pytest.mark.parametrize("t,field", list(FIELDS))
def test_array_fields_of_the_wrong_kind_are_an_encode_error(t, field):
    a = FIELDS[t, field]
    bad = {"complex": a.astype(complex), "datetime": np.zeros(len(a), "datetime64[s]"),
           "2-D": np.stack([a, a]), "0-d": np.float64(1.0), "str": "abc", "None": None, "dict": {"a": 1},
           "object": np.array([object()] * len(a)), "strings": np.array(["x"] * len(a)), "ragged": [[1.0], [1.0, 2.0]]}
    if field == "orientation_covariance":
        bad |= {"8 long": a[:8], "10 long": np.resize(a, 10), "empty": np.zeros(0)}
    for label, v in bad.items():
        kind, msg = _outcome(_encode, t, field, v)
        assert kind in ERRORS, f"{t}.{field} as {label}: {kind}"
        assert "\n" not in msg


def test_buffers_in_any_layout_decode_the_same_message():
    t = "sensor_msgs/msg/JointState"
    payload = _encode(t, "position", FIELDS[t, "position"])
    want = msgs.serialize(msgs.deserialize(payload, t), t)
    raw = np.frombuffer(payload, np.uint8)
    for label, v in {"bytearray": bytearray(payload), "memoryview": memoryview(payload),
                     "uint8 array": raw.copy(), "non-contiguous": _noncontig(raw),
                     "non-contiguous memoryview": memoryview(_noncontig(raw)), "misaligned": _misaligned(raw),
                     "read-only": _readonly(raw)}.items():
        assert msgs.serialize(msgs.deserialize(v, t), t) == want, label
    for label, v in {"str": payload.decode("latin-1"), "None": None, "int": 7, "float": 1.5,
                     "float array": np.zeros(3), "2-D": np.stack([raw, raw])}.items():
        kind, _ = _outcome(msgs.deserialize, v, t)
        assert kind in ERRORS or kind == "ok", f"{label}: {kind}"


def test_putter_takes_only_a_16_byte_gid_and_bytes_like_payloads():
    puts = []

    def put(data, attachment):
        puts.append((data, attachment))

    for gid in (bytes(range(16)), bytearray(16), memoryview(bytes(16)), np.zeros(2, np.float64)):
        _cdr.Putter(put, gid, "x")
    for gid in (bytes(15), bytes(17), b"", "0123456789abcdef", None, 16, memoryview(np.zeros(32, np.uint8))[::2]):
        with pytest.raises((TypeError, ValueError, BufferError)):
            _cdr.Putter(put, gid, "x")
    p = _cdr.Putter(put, bytes(16), "x")
    body = b"\x00\x01\x00\x00" + bytes(range(20))
    nc = np.frombuffer(body, np.uint8)
    for v in (body, bytearray(body), memoryview(body), memoryview(_noncontig(nc)), memoryview(_misaligned(nc))):
        p(v)
    assert [d for d, _ in puts] == [body] * 5
    for v in (None, "str", 5, np.zeros(3)):
        with pytest.raises(TypeError):
            p(v)


_DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.uint8, ">f8", np.complex128, np.bool_])


@st.composite
def any_array(draw):
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3, 8, 9, 10, 64]), max_size=2)))
    a = draw(hnp.arrays(np.dtype(draw(_DTYPES)), shape))
    layout = draw(st.sampled_from(["c", "f", "noncontig", "misaligned", "readonly"]))
    return {"c": a, "f": np.asfortranarray(a), "noncontig": _noncontig(a),
            "misaligned": _misaligned(a) if a.dtype.itemsize > 1 else a, "readonly": _readonly(a)}[layout]


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(key=st.sampled_from(list(FIELDS)), value=any_array())
def test_random_arrays_in_array_fields_never_crash(key, value):
    t, field = key
    kind, out = _outcome(_encode, t, field, value)
    assert kind == "ok" or kind in ERRORS
    if value.dtype.kind == "c":
        assert kind is msgs.EncodeError, "a complex array is refused, not cast"
    if kind == "ok":
        back = getattr(msgs.deserialize(out, t), field)
        assert back.shape == (value.size,) if value.ndim <= 1 else True


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(t=st.sampled_from(["sensor_msgs/msg/JointState", "sensor_msgs/msg/Image", "std_msgs/msg/String"]),
       data=st.binary(max_size=80), offset=st.integers(0, 7), step=st.sampled_from([1, 2, 3]))
def test_random_buffers_in_any_layout_never_crash(t, data, offset, step):
    buf = np.zeros(offset + len(data) * step, np.uint8)
    view = buf[offset:][::step]
    view[:] = np.frombuffer(data, np.uint8)
    got = _outcome(msgs.deserialize, view, t)
    want = _outcome(msgs.deserialize, data, t)
    assert got[0] == want[0]
