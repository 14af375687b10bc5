"""Golden vectors of the rmw_zenoh wire format (ros2-wire.md: rmw_zenoh design.md, issue #643,
attachment_helpers.cpp, rosidl type hashes). Every expected string/byte here is copied from
the spec, never computed by the code under test."""
import time

import pytest

from hri_runtime import msgs
from hri_runtime.impl import wire

STRING_HASH = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
LOG_HASH = "RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac"
ADD_TWO_INTS_HASH = "RIHS01_e118de6bf5eeb66a2491b5bda11202e7b68f198d6f67922cf30364858239c81a"

# ros2-wire.md appendix (String, Log and AddTwoInts also published by rmw_zenoh itself)
GOLDEN_HASHES = {
    "std_msgs/msg/String": STRING_HASH,
    "std_msgs/msg/Empty": "RIHS01_20b625256f32d5dbc0d04fee44f43c41e51c70d3502f84b4a08e7a9c26a96312",
    "geometry_msgs/msg/Twist": "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a",
    "geometry_msgs/msg/PoseStamped": "RIHS01_10f3786d7d40fd2b54367835614bff85d4ad3b5dab62bf8bca0cc232d73b4cd8",
    "geometry_msgs/msg/WrenchStamped": "RIHS01_8dc3deaf06b2ab281f9f9a742a8961c328ca7cec16e3fd6586d3a5c83fa78f77",
    "sensor_msgs/msg/JointState": "RIHS01_a13ee3a330e346c9d87b5aa18d24e11690752bd33a0350f11c5882bc9179260e",
    "sensor_msgs/msg/Joy": "RIHS01_0d356c79cad3401e35ffeb75a96a96e08be3ef896b8b83841d73e890989372c5",
    "diagnostic_msgs/msg/DiagnosticArray": "RIHS01_5a8a36efb05fb25070fa0fb3810290c0e6cd4862b54a8fb975a1ee8dc55a333e",
    "rosgraph_msgs/msg/Clock": "RIHS01_692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564",
    "rcl_interfaces/msg/Log": LOG_HASH,
    "example_interfaces/srv/AddTwoInts": ADD_TWO_INTS_HASH,
}


@pytest.fixture(scope="module")
def store():
    return msgs.typestore()


@pytest.mark.parametrize("type_name,expected", sorted(GOLDEN_HASHES.items()))
def test_type_hash_matches_golden(store, type_name, expected):
    assert wire.type_hash(type_name, store) == expected


def test_humble_mode_uses_literal_instead_of_hash(store):
    assert wire.type_hash("std_msgs/msg/String", store, humble=True) == "TypeHashNotSupported"
    assert (wire.topic_keyexpr(0, "/chatter", "std_msgs/msg/String", "TypeHashNotSupported")
            == "0/chatter/std_msgs::msg::dds_::String_/TypeHashNotSupported")


def test_service_hash_is_not_the_request_hash(store):
    assert wire.message_type_hash("example_interfaces/srv/AddTwoInts_Request", store) != ADD_TWO_INTS_HASH


def test_char_fields_hash_as_uint8():
    """ROS 2 .msg 'char' is uint8 (type id 3): ServiceEventInfo.client_gid must be uint8[16]
    (type id 51) for the AddTwoInts golden hash to come out (checked above); here directly."""
    from rosbags.typesys.base import Nodetype
    fd, _ = wire._field_description("client_gid", (Nodetype.ARRAY, ((Nodetype.BASE, ("char", 0)), 16)), None)
    assert fd["type"] == {"type_id": 51, "capacity": 16, "string_capacity": 0, "nested_type_name": ""}


def test_unknown_type_hash_is_refused(store):
    with pytest.raises(wire.TypeHashError) as e:
        wire.type_hash("nope_msgs/msg/Nothing", store)
    assert e.value.cause == "unknown_type"
    with pytest.raises(wire.WireError):
        wire.type_hash("not a type", store)


# ---- data keys (design.md)
def test_data_keys_golden():
    assert (wire.topic_keyexpr(0, "/chatter", "std_msgs/msg/String", STRING_HASH)
            == "0/chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18")
    assert (wire.topic_keyexpr(0, "/robot1/chatter", "std_msgs/msg/String", STRING_HASH)
            == "0/robot1/chatter/std_msgs::msg::dds_::String_/" + STRING_HASH)
    assert (wire.topic_keyexpr(2, "/add_two_ints", "example_interfaces/srv/AddTwoInts", ADD_TWO_INTS_HASH)
            == "2/add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/RIHS01_e118de6bf5eeb66a2491b5bda11202e7b68f198d6f67922cf30364858239c81a")


def test_dds_type_names_roundtrip():
    assert wire.dds_type_name("geometry_msgs/msg/Twist") == "geometry_msgs::msg::dds_::Twist_"
    assert wire.ros_type_name("example_interfaces::srv::dds_::AddTwoInts_") == "example_interfaces/srv/AddTwoInts"
    for bad in ("Twist", "geometry_msgs/Twist", "a/b/c/d", ""):
        with pytest.raises(wire.WireError):
            wire.dds_type_name(bad)


def test_key_refuses_relative_name_and_bad_domain():
    with pytest.raises(wire.WireError):
        wire.topic_keyexpr(0, "chatter", "std_msgs/msg/String", STRING_HASH)
    with pytest.raises(wire.WireError):
        wire.topic_keyexpr(-1, "/chatter", "std_msgs/msg/String", STRING_HASH)


# ---- liveliness tokens (design.md, rmw_zenoh issue #643)
def test_node_token_golden():
    assert (wire.node_token(2, "aac3178e146ba6f1fc6e6a4085e77f21", 0, "/", "listener")
            == "@ros2_lv/2/aac3178e146ba6f1fc6e6a4085e77f21/0/0/NN/%/%/listener")


def test_publisher_token_golden():
    assert (wire.endpoint_token(2, "8b20917502ee955ac4476e0266340d5c", 0, 10, "MP", "/", "talker",
                                "/chatter", "std_msgs/msg/String", STRING_HASH, 7)
            == "@ros2_lv/2/8b20917502ee955ac4476e0266340d5c/0/10/MP/%/%/talker/%chatter/"
               "std_msgs::msg::dds_::String_/" + STRING_HASH + "/::,7:,:,:,,")


def test_rosout_token_golden_issue_643():
    qos = wire.QoSProfile(durability="transient_local", depth=1000, lifespan_s=10.0)
    assert (wire.endpoint_token(0, "999bf91283606d2068c7524e5badfa6c", 0, 1, wire.EntityKind.PUBLISHER,
                                "/robot1", "talker", "/rosout", "rcl_interfaces/msg/Log", LOG_HASH, qos)
            == "@ros2_lv/0/999bf91283606d2068c7524e5badfa6c/0/1/MP/%/%robot1/talker/%rosout/"
               "rcl_interfaces::msg::dds_::Log_/RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac/"
               ":1:,1000:,:10,0:,,")


def test_parse_token_roundtrip():
    tok = ("@ros2_lv/0/999bf91283606d2068c7524e5badfa6c/0/1/MP/%/%robot1/talker/%rosout/"
           "rcl_interfaces::msg::dds_::Log_/" + LOG_HASH + "/:1:,1000:,:10,0:,,")
    e = wire.parse_token(tok)
    assert (e.domain_id, e.kind, e.namespace, e.node_name, e.topic) == (0, wire.EntityKind.PUBLISHER, "/robot1", "talker", "/rosout")
    assert e.node_fqn == "/robot1/talker" and e.type_name == "rcl_interfaces/msg/Log" and e.type_hash == LOG_HASH
    assert (e.qos.durability, e.qos.depth, e.qos.lifespan_s, e.qos.reliability) == ("transient_local", 1000, 10.0, "reliable")
    assert wire.qos_to_keyexpr(e.qos) == ":1:,1000:,:10,0:,,"
    n = wire.parse_token("@ros2_lv/2/aac3178e146ba6f1fc6e6a4085e77f21/0/0/NN/%/%/listener")
    assert n.kind is wire.EntityKind.NODE and n.node_fqn == "/listener" and n.topic is None


@pytest.mark.parametrize("bad,cause", [
    ("@ros2_lv/0/abc/0/0/NN/%/%", "bad_token"),                                   # too few parts
    ("@other/0/abc/0/0/NN/%/%/n", "bad_token"),
    ("@ros2_lv/0/abc/0/0/XX/%/%/n", "bad_token"),
    ("@ros2_lv/0/abc/0/1/MP/%/%/n/%t/std_msgs::msg::dds_::String_/" + STRING_HASH + "/::,10", "bad_qos"),
    ("@ros2_lv/0/abc/0/1/MP/%/%/n/%t/std_msgs::msg::dds_::String_/" + STRING_HASH + "/9::,10:,:,:,,", "bad_qos"),
    ("@ros2_lv/0/abc/0/1/MP/%/%/n/%t", "bad_token"),
])
def test_parse_token_rejects_what_rmw_zenoh_rejects(bad, cause):
    with pytest.raises(wire.TokenError) as e:
        wire.parse_token(bad)
    assert e.value.cause == cause


def test_token_refuses_bad_parts():
    with pytest.raises(wire.TokenError):
        wire.node_token(0, "XYZ", 0, "/", "n")
    with pytest.raises(wire.TokenError):
        wire.node_token(0, "abc", 0, "ns", "n")
    with pytest.raises(wire.TokenError):
        wire.node_token(0, "abc", 0, "/", "a/b")


# ---- QoS strings
@pytest.mark.parametrize("qos,expected", [
    (10, "::,10:,:,:,,"),                                              # rclpy default, depth 10
    (7, "::,7:,:,:,,"),
    (0, "::,:,:,:,,"),                                                 # depth 0 -> 42 -> elided
    (42, "::,:,:,:,,"),
    ({"reliability": "best_effort", "depth": 5}, "2::,5:,:,:,,"),     # sensor data
    ({"durability": "transient_local", "depth": 1}, ":1:,1:,:,:,,"),
    ({"history": "keep_all"}, "::2,10:,:,:,,"),
    ({"deadline_s": 0.5, "depth": 10}, "::,10:0,500000000:,:,,"),
    ({"liveliness": "manual_by_topic", "liveliness_lease_s": 2.0}, "::,10:,:,:3,2,0"),
    ({"reliability": "system_default", "durability": "system_default"}, "::,10:,:,:,,"),
])
def test_qos_strings(qos, expected):
    s = wire.qos_to_keyexpr(qos)
    assert s == expected
    assert len(s.split(":")) == 6
    assert wire.qos_to_keyexpr(wire.keyexpr_to_qos(s)) == s


def test_qos_refuses_nonsense():
    for bad in ({"reliability": "sometimes"}, {"depth": -1}, {"depth": 1.5}, {"colour": 1}, True, "10"):
        with pytest.raises(wire.WireError):
            wire.qos_to_keyexpr(bad)


# ---- attachment
GOLDEN_ATTACHMENT = bytes.fromhex("0100000000000000" "0807060504030201" "10" "000102030405060708090a0b0c0d0e0f")


def test_attachment_golden():
    a = wire.pack_attachment(1, 0x0102030405060708, bytes(range(16)))
    assert a == GOLDEN_ATTACHMENT and len(a) == 33
    assert wire.unpack_attachment(GOLDEN_ATTACHMENT) == (1, 0x0102030405060708, bytes(range(16)))


def test_attachment_equals_zenoh_ext_serializer():
    """Cross-check with zenoh's own serializer (what zenoh-cpp's ext::Serializer writes)."""
    from zenoh import ext
    ref = ext.z_serialize((ext.Int64(7), ext.Int64(1_700_000_000_123_456_789), bytes(range(100, 116))))
    assert wire.pack_attachment(7, 1_700_000_000_123_456_789, bytes(range(100, 116))) == ref.to_bytes()


@pytest.mark.parametrize("data,cause", [
    (None, "no_attachment"),
    (b"", "bad_attachment"),
    (GOLDEN_ATTACHMENT[:-1], "bad_attachment"),
    (GOLDEN_ATTACHMENT + b"\x00", "bad_attachment"),
    (GOLDEN_ATTACHMENT[:16] + b"\x18" + GOLDEN_ATTACHMENT[17:], "bad_attachment"),
])
def test_attachment_rejects_malformed(data, cause):
    with pytest.raises(wire.AttachmentError) as e:
        wire.unpack_attachment(data)
    assert e.value.cause == cause
    with pytest.raises(wire.AttachmentError) as e:          # the receive fast path: same causes
        wire.message_info(data, "0/t/T/H")
    assert e.value.cause == cause


def test_message_info_is_the_unpacked_attachment_plus_key():
    info = wire.message_info(GOLDEN_ATTACHMENT, "0/chatter/std_msgs::msg::dds_::String_/RIHS01_x")
    assert info == (1, 0x0102030405060708, bytes(range(16)), "0/chatter/std_msgs::msg::dds_::String_/RIHS01_x")
    assert info.publisher_gid == wire.unpack_attachment(GOLDEN_ATTACHMENT).gid


def test_attachment_refuses_short_gid():
    with pytest.raises(wire.AttachmentError):
        wire.pack_attachment(1, 0, b"\x00" * 24)


# ---- the Zenoh backend's per-message path in C (hri_runtime._cdr.Putter / SampleGate)
def test_putter_writes_the_attachment_of_pack_attachment():
    from hri_runtime import _cdr
    puts = []
    putter = _cdr.Putter(lambda data, attachment: puts.append((data, attachment)), bytes(range(16)),
                         "publisher on /chatter was destroyed")
    t0 = time.time_ns()
    putter(b"\x00\x01\x00\x00a")
    putter(b"\x00\x01\x00\x00b")
    t1 = time.time_ns()
    assert [d for d, _ in puts] == [b"\x00\x01\x00\x00a", b"\x00\x01\x00\x00b"]
    for seq, (_, att) in enumerate(puts, start=1):
        a = wire.unpack_attachment(att)
        assert a.sequence_number == seq and t0 <= a.source_timestamp_ns <= t1
        assert att == wire.pack_attachment(seq, a.source_timestamp_ns, bytes(range(16)))
    assert putter.published == 2 and putter.sequence_number == 2
    with pytest.raises(TypeError):
        putter("not bytes")
    putter(bytearray(b"\x00\x01\x00\x00d"))                    # copied to bytes
    putter(memoryview(b"\x00\x01\x00\x00e"))
    assert [d for d, _ in puts[2:]] == [b"\x00\x01\x00\x00d", b"\x00\x01\x00\x00e"]
    # with the node layer's serializer: a message is serialized and put in the same call
    from hri_runtime import msgs
    putter.serialize_with(msgs.serialize, "std_msgs/msg/String")
    putter(msgs.new("std_msgs/msg/String", data="hi"))
    assert puts[-1][0] == msgs.serialize(msgs.new("std_msgs/msg/String", data="hi"))
    with pytest.raises(msgs.EncodeError):                           # serialize's error, as it is
        putter(msgs.new("std_msgs/msg/Bool", data=True))
    assert putter.published == 5 and putter.sequence_number == 5
    putter.close()
    with pytest.raises(RuntimeError, match="destroyed"):
        putter(b"\x00\x01\x00\x00c")
    with pytest.raises(ValueError):
        _cdr.Putter(print, bytes(15), "x")


class _Z:
    def __init__(self, b):
        self._b = b

    def to_bytes(self):
        return self._b


class _Sample:
    def __init__(self, payload, att, key):
        self.payload, self.attachment, self.key_expr = _Z(payload), None if att is None else _Z(att), key


def test_sample_gate_delivers_valid_samples_and_routes_the_rest_to_the_full_checks():
    from hri_runtime import _cdr
    delivered, checked, errors = [], [], []
    key = "0/t/std_msgs::msg::dds_::String_/RIHS01_x"

    def full_checks(sample, k, att, payload):
        checked.append(payload)
        assert k == key
        try:
            wire.unpack_attachment(att)
            wire.check_cdr_payload(payload)
        except wire.WireError:
            return False
        return True

    gate = _cdr.SampleGate(key, lambda data, meta: delivered.append((data, meta)), full_checks,
                           lambda cause, e: errors.append((cause, type(e).__name__)))
    ok = b"\x00\x01\x00\x00\x01"
    gate(_Sample(ok, GOLDEN_ATTACHMENT, key))                      # byte tests pass: delivered
    gate(_Sample(b"\x00\x00\x00\x00\x01", GOLDEN_ATTACHMENT, key))   # big endian: fine
    for payload, att in ((ok, None), (ok, GOLDEN_ATTACHMENT[:-1]), (b"\x00\x01\x00\x00", GOLDEN_ATTACHMENT),
                         (b"\x01\x01\x00\x00\x01", GOLDEN_ATTACHMENT),
                         (ok, GOLDEN_ATTACHMENT[:16] + b"\x18" + GOLDEN_ATTACHMENT[17:])):
        gate(_Sample(payload, att, key))                          # each fails a byte test: full checks
    assert len(delivered) == 2 and gate.received == 2
    assert delivered[0] == (ok, (GOLDEN_ATTACHMENT, key))
    assert len(checked) == 5
    gate.deliver = lambda data, meta: 1 / 0                    # nothing raises into Zenoh's thread
    gate(_Sample(ok, GOLDEN_ATTACHMENT, key))
    gate(object())
    assert errors == [("deliver_failed", "ZeroDivisionError"), ("internal", "AttributeError")]
    gate.close()
    gate(_Sample(ok, GOLDEN_ATTACHMENT, key))
    assert gate.received == 3 and len(errors) == 2
