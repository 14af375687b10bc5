"""hri_interfaces: the no-ROS runtime reads src/hri_interfaces/*.msg|srv and computes the same
RIHS01 type hashes as rosidl. GOLDEN: recorded from `share/hri_interfaces/<kind>/<X>.json` of a
colcon build of hri_interfaces on ROS 2 Jazzy (rosidl_generator_type_description; see
docs/ros2-interop.md "Verified on a real ROS 2") or of `make ros2-ci`'s rosidl build against the
Jazzy wheels (`.venv-ros2/share/hri_interfaces/...`). A changed or new .msg/.srv needs its value
re-recorded from such a build (tests/ros2/ compares them live on ROS 2)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from hri_runtime import msgs
from hri_runtime.impl import wire

PKG = Path(__file__).resolve().parents[2] / "hri_interfaces"

GOLDEN = {
    "hri_interfaces/msg/AtomicState":
        "RIHS01_ef34a6de7f96c57b44d5e020091f883b6853c4a8b122f98bd7526c016b6a72f0",
    "hri_interfaces/msg/Count":
        "RIHS01_ad6d5310f98cf908fc95995c65e166b8722338de57ded299967b38f11c337ff5",
    "hri_interfaces/msg/InteractionState":
        "RIHS01_252993acdaeb7434327cf81985e388a8bef6d65e9e75f41e84b814ba83369ad0",
    "hri_interfaces/msg/JointGains":
        "RIHS01_55f80e2726ffbf26dea9f089afc7c9358e23d728b5f5f240dfd9eec7251bcfab",
    "hri_interfaces/msg/PidTuningStatus":
        "RIHS01_87887b0f263652e05169a2457cd7a65e5449fd6e418a3708a69497ecd3a1a2e2",
    "hri_interfaces/msg/SafetyStop":
        "RIHS01_6e5cd04f7e988ac1d030e780960f1bf3393ba2fe498c12133b253a5efb039c26",
    "hri_interfaces/msg/StopRequest":
        "RIHS01_6a0c192220f84407ab899deb9620385277b78383837e5d0b85af9e3cd45c064c",
    "hri_interfaces/msg/TeleopMode":
        "RIHS01_f851c242c5115e6154291c34da3631eeae96763bb5a347c1e5b12f1d380a37de",
    "hri_interfaces/msg/TuningProgress":
        "RIHS01_ed9c8eabcda6a1f33b8942f425aab5d790be6a3fb6e2a7cb1501fe690a6a561f",
    "hri_interfaces/srv/Tune":
        "RIHS01_a45dd9d239a7ae160de977c42f6e6ee9f91e616a779d3d5a6b0d442a5785ced8",
}


def _types() -> list[str]:
    return sorted([f"hri_interfaces/msg/{p.stem}" for p in PKG.glob("msg/*.msg")]
                  + [f"hri_interfaces/srv/{p.stem}" for p in PKG.glob("srv/*.srv")])


def test_every_interface_file_has_a_golden_hash():
    missing = sorted(set(_types()) - set(GOLDEN))
    assert not missing, f"record the rosidl RIHS01 of {missing} (colcon build hri_interfaces on ROS 2)"


@pytest.mark.parametrize("type_name", sorted(GOLDEN))
def test_rihs01_equals_rosidl(type_name):
    assert msgs.rihs01(type_name) == GOLDEN[type_name], \
        f"{type_name}: the .msg/.srv changed since its rosidl hash was recorded, or the hash is wrong"
    assert wire.type_hash(type_name, msgs.typestore()) == GOLDEN[type_name]


def test_nested_types_load_with_their_parent_and_round_trip():
    m = msgs.new("hri_interfaces/msg/PidTuningStatus", robot="humanoid_arm", joints=["hand"],
                 gains=[msgs.new("hri_interfaces/msg/JointGains", joint="hand", kp=2.0, ki=0.5, kd=0.05,
                                 acknowledged=True)],
                 rejected=[msgs.new("hri_interfaces/msg/Count", name="non_finite", count=3)])
    back = msgs.deserialize(msgs.serialize(m), "hri_interfaces/msg/PidTuningStatus")
    assert back.gains[0].joint == "hand" and back.gains[0].kp == 2.0 and back.rejected[0].count == 3
    st = msgs.new("hri_interfaces/msg/InteractionState", period_p99_us=math.nan, flags=["hold"])
    back = msgs.deserialize(msgs.serialize(st), "hri_interfaces/msg/InteractionState")
    assert math.isnan(back.period_p99_us) and list(back.flags) == ["hold"]
    req, resp = msgs.srv_types("hri_interfaces/srv/Tune")
    r = msgs.deserialize(msgs.serialize(msgs.new(req, joint="hand", gains=[1.0, 0.0, 0.1])), req)
    assert r.joint == "hand" and list(r.gains) == [1.0, 0.0, 0.1]
