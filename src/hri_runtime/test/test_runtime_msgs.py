"""msgs: the rosbags Jazzy store, zero defaults, CDR exactly as rmw writes it."""
import numpy as np
import pytest

from hri_runtime import msgs


def test_string_hello_golden_bytes():
    b = msgs.serialize(msgs.new("std_msgs/msg/String", data="hello"), "std_msgs/msg/String")
    assert b.hex() == "000100000600000068656c6c6f00"        # header, len 6, 'hello\0', no padding
    assert msgs.deserialize(b, "std_msgs/String").data == "hello"


def test_empty_carries_one_dummy_byte():
    assert msgs.serialize(msgs.new("std_msgs/msg/Empty")) == bytes.fromhex("0001000000")


def test_twist_is_52_bytes_and_field_order():
    b = msgs.serialize(msgs.new("geometry_msgs/Twist", linear={"x": 1.0}, angular={"z": -0.5}))
    assert len(b) == 52 and b[:4] == msgs.CDR_LE_HEADER
    assert np.frombuffer(b[4:], "<f8").tolist() == [1.0, 0, 0, 0, 0, -0.5]


def test_add_two_ints_request_golden():
    b = msgs.serialize(msgs.new("example_interfaces/srv/AddTwoInts_Request", a=2, b=3))
    assert b.hex() == "00010000" + "0200000000000000" + "0300000000000000"


def test_zero_defaults_are_recursive_and_lists_become_arrays():
    js = msgs.new("sensor_msgs/JointState", name=["j1"], position=[1.5])
    assert js.header.stamp.sec == 0 and js.header.frame_id == ""
    assert isinstance(js.position, np.ndarray) and js.position.dtype == np.float64
    assert js.velocity.size == 0 and js.effort.size == 0
    assert msgs.new("geometry_msgs/msg/PoseWithCovariance").covariance.shape == (36,)
    back = msgs.deserialize(msgs.serialize(js), "sensor_msgs/msg/JointState")
    assert list(back.name) == ["j1"] and back.position.tolist() == [1.5]


def test_fields_assigned_as_lists_after_new_still_serialize():
    js = msgs.new("sensor_msgs/msg/JointState")
    js.position = [1.0, 2.0]
    assert msgs.deserialize(msgs.serialize(js), "sensor_msgs/msg/JointState").position.tolist() == [1.0, 2.0]


def test_type_names_and_errors():
    assert msgs.normalize("std_msgs/String") == "std_msgs/msg/String"
    assert msgs.normalize("std_msgs::msg::dds_::String_") == "std_msgs/msg/String"
    assert msgs.get("std_msgs/String") is msgs.get("std_msgs/msg/String")
    with pytest.raises(msgs.UnknownTypeError, match="unknown message type"):
        msgs.get("nope_msgs/msg/Nothing")
    with pytest.raises(TypeError, match="no field"):
        msgs.new("std_msgs/msg/String", text="x")
    with pytest.raises(msgs.EncodeError, match="expected std_msgs/msg/String"):
        msgs.serialize(msgs.new("std_msgs/msg/Bool"), "std_msgs/msg/String")


@pytest.mark.parametrize("payload", [b"", b"\x00\x01", b"\x07\x07\x00\x00hello",
                                     b"\x00\x01\x00\x00\xff\xff\xff\x7f",
                                     b"\x00\x01\x00\x00\x05\x00\x00\x00hel"])
def test_malformed_cdr_raises_decode_error(payload):
    with pytest.raises(msgs.DecodeError):
        msgs.deserialize(payload, "std_msgs/msg/String")


def test_big_endian_payload_is_accepted():
    be = bytes.fromhex("00000000" "00000006") + b"hello\x00"
    assert msgs.deserialize(be, "std_msgs/msg/String").data == "hello"


def test_services_and_definitions():
    assert msgs.srv_types("std_srvs/srv/Trigger") == ("std_srvs/srv/Trigger_Request", "std_srvs/srv/Trigger_Response")
    assert msgs.is_srv("std_srvs/srv/SetBool") and not msgs.is_srv("std_msgs/msg/Bool")
    assert "bool success" in msgs.definition("std_srvs/srv/Trigger")
    d = msgs.definition("geometry_msgs/msg/PoseStamped")
    assert d.startswith("std_msgs/Header header") and "MSG: geometry_msgs/Pose" in d
    assert msgs.rihs01("std_msgs/msg/String") == \
        "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
    msgs.register_srv("hri_test/srv/Scale", "float64 x\n---\nfloat64 y\n")
    assert msgs.new("hri_test/srv/Scale_Response", y=2.0).y == 2.0


def test_msg_file_defaults_and_dict_roundtrip():
    q = msgs.new("geometry_msgs/msg/Quaternion")
    assert (q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.0, 1.0)            # as rclpy: 'float64 w 1'
    p = msgs.from_dict("geometry_msgs/msg/PoseStamped", {"header": {"frame_id": "w"}, "pose": {"position": {"x": 1.0}}})
    d = msgs.to_dict(p)
    assert d["header"]["frame_id"] == "w" and d["pose"]["position"]["x"] == 1.0 and d["pose"]["orientation"]["w"] == 1.0
    assert "frame_id: w" in msgs.to_yaml(p)
    with pytest.raises(TypeError, match="no field"):
        msgs.from_dict("std_msgs/msg/String", {"date": "x"})


def test_interfaces_load_from_the_package_share_directory(tmp_path, monkeypatch):
    share = tmp_path / "share" / "hri_demo_ifaces"
    (share / "msg").mkdir(parents=True)
    (share / "srv").mkdir()
    (share / "package.xml").write_text("<package><name>hri_demo_ifaces</name></package>")
    (share / "msg" / "Bar.msg").write_text("float64 x  # metres\n")
    (share / "msg" / "Foo.msg").write_text("# a foo\nBar[] bars\nstd_msgs/Header header\nint32 N=3\n")
    (share / "srv" / "Do.srv").write_text("Bar goal\n---\nbool ok\n")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    foo = msgs.new("hri_demo_ifaces/msg/Foo", bars=[{"x": 1.5}])
    assert msgs.deserialize(msgs.serialize(foo), "hri_demo_ifaces/Foo").bars[0].x == 1.5
    req_t, resp_t = msgs.srv_types("hri_demo_ifaces/srv/Do")
    assert msgs.new(req_t, goal={"x": 2.0}).goal.x == 2.0 and msgs.new(resp_t, ok=True).ok
    with pytest.raises(msgs.UnknownTypeError):
        msgs.get("hri_demo_ifaces/msg/Missing")
