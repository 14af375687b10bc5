"""MCAP: ROS 2 profile/schemas/CDR as rosbag2 writes them, reading back, record and replay on
the in-process backend (fake clock: replay timing is exact)."""
import pytest
from rosbags.typesys import get_types_from_msg

from hri_runtime import msgs
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node
from hri_runtime.bag.recording import McapReader, McapWriter, Player, Recorder, RecordingParams


def test_file_is_ros2_mcap_with_ros2msg_schemas_and_cdr(tmp_path):
    from mcap.reader import make_reader

    p = tmp_path / "a.mcap"
    with McapWriter(p) as w:
        w.write("/chatter", msgs.new("std_msgs/msg/String", data="hello"), t_s=1.5)
        w.write("/pose", msgs.new("geometry_msgs/msg/PoseStamped", header={"frame_id": "world"}), t_s=1.6)
        w.write("/chatter", bytes.fromhex("000100000300000068690000"), t_s=2.0)   # raw CDR 'hi'
    with open(p, "rb") as fh:
        r = make_reader(fh)
        assert r.get_header().profile == "ros2"
        rows = list(r.iter_messages())
    sch, ch, m = rows[0]
    assert (sch.name, sch.encoding, ch.message_encoding) == ("std_msgs/msg/String", "ros2msg", "cdr")
    assert m.data.hex() == "000100000600000068656c6c6f00" and m.log_time == 1_500_000_000
    pose_schema = rows[1][0].data.decode()
    # what Foxglove/ros2 bag do with the schema: parse it back to the same field definitions
    assert get_types_from_msg(pose_schema.split("=" * 80)[0], "geometry_msgs/msg/PoseStamped")[
        "geometry_msgs/msg/PoseStamped"][1] == msgs.typestore().fielddefs["geometry_msgs/msg/PoseStamped"][1]
    rd = McapReader(p)
    assert rd.topics() == {"/chatter": "std_msgs/msg/String", "/pose": "geometry_msgs/msg/PoseStamped"}
    assert rd.message_counts() == {"/chatter": 2, "/pose": 1}
    got = [(m.topic, m.t_s) for m in rd.messages()]
    assert got == [("/chatter", 1.5), ("/pose", 1.6), ("/chatter", 2.0)]
    assert [m.msg.data for m in rd.messages(["/chatter"])] == ["hello", "hi"]
    assert next(rd.messages(["/pose"])).msg.header.frame_id == "world"


def test_writer_refuses_type_change_and_untyped_bytes(tmp_path):
    with McapWriter(tmp_path / "b.mcap") as w:
        w.write("/x", msgs.new("std_msgs/msg/Bool", data=True), t_s=0.0)
        with pytest.raises(ValueError, match="already recorded as std_msgs/msg/Bool"):
            w.write("/x", msgs.new("std_msgs/msg/String"), t_s=0.1)
        with pytest.raises(ValueError, match="needs type_name"):
            w.write("/y", b"\x00\x01\x00\x00\x00", t_s=0.1)


def test_unknown_type_in_a_foreign_file_is_learned_from_its_schema(tmp_path):
    from mcap.writer import Writer

    p = tmp_path / "foreign.mcap"
    text = "float64 celsius\nstring where\n"
    with open(p, "wb") as fh:
        w = Writer(fh)
        w.start(profile="ros2", library="other")
        sid = w.register_schema(name="lab_msgs/msg/Temp", encoding="ros2msg", data=text.encode())
        cid = w.register_channel(topic="/temp", message_encoding="cdr", schema_id=sid)
        w.add_message(channel_id=cid, log_time=5, publish_time=5,
                      data=bytes.fromhex("00010000") +
                      bytes.fromhex("0000000000803540") + bytes.fromhex("0400000061626300"))
        w.finish()
    m = next(McapReader(p).messages())
    assert m.type_name == "lab_msgs/msg/Temp" and m.msg.celsius == 21.5 and m.msg.where == "abc"


def test_record_then_replay_on_the_fake_clock(tmp_path):
    ctx = InprocContext(start_time_s=100.0)
    talker = Node("talker", context=ctx)
    pub = talker.create_publisher("std_msgs/msg/String", "/chatter")
    jpub = talker.create_publisher("sensor_msgs/msg/JointState", "/joint_states")
    k = [0]

    def tick():
        k[0] += 1
        pub.publish(msgs.new("std_msgs/msg/String", data=f"m{k[0]}"))
        jpub.publish(msgs.new("sensor_msgs/msg/JointState", name=["j"], position=[k[0] * 0.1]))

    talker.create_timer(0.1, tick)
    path = tmp_path / "run.mcap"
    rec_node = Node("rec", context=ctx)
    params = RecordingParams(compression="lz4", discovery_period_s=0.05, queue_depth=100, play_tick_s=0.01)
    with McapWriter(path, params=params) as w:
        rec = Recorder(rec_node, w, ["/chatter", "/joint_states"])
        ctx.spin_for(1.0)
        rec.stop()
    rd = McapReader(path)
    assert rd.message_counts() == {"/chatter": 10, "/joint_states": 10}
    ts = [m.t_s for m in rd.messages(["/chatter"])]
    assert ts == pytest.approx([100.0 + 0.1 * i for i in range(1, 11)])
    # replay at 2x into a fresh context: same bytes, half the spacing
    ctx2 = InprocContext()
    lis = Node("lis", context=ctx2)
    got = []
    lis.create_subscription("std_msgs/msg/String", "/chatter",
                            lambda m: got.append((m.data, round(ctx2.now_s(), 6))), qos=100)
    player = Player(Node("play", context=ctx2), rd, rate=2.0, params=params)
    assert ctx2.spin_until(lambda: player.done, timeout_s=10.0)
    ctx2.spin_for(0.0)                     # deliver the last publish
    assert [g[0] for g in got] == [f"m{i}" for i in range(1, 11)]
    # first one on the first tick (0.01 s), then every 0.1 s / 2 on the tick grid
    assert [g[1] for g in got] == pytest.approx([0.01] + [0.05 * i for i in range(1, 10)], abs=1e-9)
    assert player.published == 20
