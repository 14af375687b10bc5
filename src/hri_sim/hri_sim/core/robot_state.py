"""robot_state_publisher's semantics as pure logic: a URDF and joint positions -> transforms.

``UrdfTree.parse(urdf)`` reads the joints of a URDF (the one of :mod:`hri_sim.core.urdf`, or any
URDF with revolute, continuous, prismatic and fixed joints). As robot_state_publisher does:

- ``static_transforms()``: every ``fixed`` joint, parent -> child (for ``/tf_static``, latched);
- ``moving_transforms(positions)``: every movable joint whose position is given, parent -> child
  at that position (for ``/tf``, stamped with the joint state's stamp); joints without a position
  are left out (robot_state_publisher publishes only what it knows);
- ``joint_positions(names, positions)``: a joint state's positions of this tree's movable joints,
  or why it is refused (mismatched lengths, a non-finite position, no joint of the tree);
- ``link_pose(link, positions)``: the link's pose in the root link (forward kinematics through
  the tree; the tests compare it with MuJoCo and the C++ core).

Transforms are 4x4 homogeneous matrices; ``transform_tuple`` gives (xyz, quaternion x y z w) as a
``geometry_msgs/Transform`` wants it. No middleware, no clock.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np

__all__ = ["UrdfJoint", "UrdfTree", "UrdfError", "rpy_to_matrix", "transform_tuple"]


class UrdfError(ValueError):
    """A URDF this module cannot use (one line: what and where)."""


def rpy_to_matrix(r: float, p: float, y: float) -> np.ndarray:
    """R = Rz(y) Ry(p) Rx(r) (URDF's fixed-axis roll, pitch, yaw)."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _floats(text: Optional[str], n: int, what: str) -> np.ndarray:
    vals = (text or " ".join(["0"] * n)).split()
    try:
        out = np.array([float(v) for v in vals])
    except ValueError:
        raise UrdfError(f"{what}: not numbers: {text!r}") from None
    if out.shape != (n,) or not np.all(np.isfinite(out)):
        raise UrdfError(f"{what}: expected {n} finite numbers, got {text!r}")
    return out


@dataclass(frozen=True)
class UrdfJoint:
    name: str
    kind: str                 # revolute | continuous | prismatic | fixed
    parent: str
    child: str
    origin: np.ndarray        # 4x4, parent -> joint frame at zero position
    axis: np.ndarray          # unit axis in the joint frame

    def transform(self, q: float = 0.0) -> np.ndarray:
        """parent -> child at position ``q`` (rad or m)."""
        if self.kind == "fixed" or q == 0.0:
            return self.origin.copy()
        motion = np.eye(4)
        if self.kind == "prismatic":
            motion[:3, 3] = self.axis * q
        else:
            a = self.axis
            k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
            motion[:3, :3] = np.eye(3) + math.sin(q) * k + (1 - math.cos(q)) * (k @ k)
        return self.origin @ motion


class UrdfTree:
    KINDS = ("revolute", "continuous", "prismatic", "fixed")

    def __init__(self, name: str, root: str, joints: list[UrdfJoint]):
        self.name = name
        self.root = root
        self.joints = joints
        self.by_child = {j.child: j for j in joints}
        self.movable = [j for j in joints if j.kind != "fixed"]

    @classmethod
    def parse(cls, urdf: str) -> "UrdfTree":
        try:
            robot = ET.fromstring(urdf)
        except ET.ParseError as exc:
            raise UrdfError(f"URDF is not XML: {exc}") from None
        if robot.tag != "robot":
            raise UrdfError(f"URDF root element is <{robot.tag}>, not <robot>")
        links = [l.get("name") for l in robot.findall("link")]
        joints = []
        for el in robot.findall("joint"):
            name, kind = el.get("name"), el.get("type")
            if kind not in cls.KINDS:
                raise UrdfError(f"joint {name!r}: type {kind!r} not supported ({', '.join(cls.KINDS)})")
            parent, child = el.find("parent"), el.find("child")
            if parent is None or child is None:
                raise UrdfError(f"joint {name!r}: needs <parent> and <child>")
            o = el.find("origin")
            t = np.eye(4)
            if o is not None:
                t[:3, :3] = rpy_to_matrix(*_floats(o.get("rpy"), 3, f"joint {name!r} origin rpy"))
                t[:3, 3] = _floats(o.get("xyz"), 3, f"joint {name!r} origin xyz")
            ax = el.find("axis")
            axis = _floats(ax.get("xyz") if ax is not None else "1 0 0", 3, f"joint {name!r} axis")
            if kind != "fixed":
                norm = float(np.linalg.norm(axis))
                if norm == 0.0:
                    raise UrdfError(f"joint {name!r}: zero axis")
                axis = axis / norm
            joints.append(UrdfJoint(name, kind, parent.get("link"), child.get("link"), t, axis))
        children = {j.child for j in joints}
        roots = [l for l in links if l not in children]
        if len(roots) != 1:
            raise UrdfError(f"URDF must have exactly one root link, has {roots}")
        return cls(robot.get("name", ""), roots[0], joints)

    def joint_positions(self, names: Sequence[str], positions: Sequence[float]
                        ) -> tuple[Optional[dict[str, float]], Optional[tuple[str, str]]]:
        """``({joint: position}, None)`` for the movable joints of this tree named in a joint
        state (others ignored), or ``(None, (cause, detail))``: ``length_mismatch``,
        ``not_finite`` (any position), ``unknown_joints`` (none is a joint of the tree)."""
        names, pos = list(names), np.asarray(positions, float)
        if len(names) != len(pos):
            return None, ("length_mismatch", f"{len(names)} names, {len(pos)} positions")
        if not np.all(np.isfinite(pos)):
            return None, ("not_finite", "a position is NaN or infinite")
        known = {j.name for j in self.movable}
        out = {n: float(q) for n, q in zip(names, pos) if n in known}
        if not out:
            return None, ("unknown_joints", f"none of {names[:4]} is a joint of the URDF")
        return out, None

    def static_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        return [(j.parent, j.child, j.origin.copy()) for j in self.joints if j.kind == "fixed"]

    def moving_transforms(self, positions: Mapping[str, float]) -> list[tuple[str, str, np.ndarray]]:
        return [(j.parent, j.child, j.transform(float(positions[j.name])))
                for j in self.movable if j.name in positions]

    def link_pose(self, link: str, positions: Mapping[str, float]) -> np.ndarray:
        """root -> ``link`` (movable joints without a position at 0)."""
        t = np.eye(4)
        while link != self.root:
            j = self.by_child.get(link)
            if j is None:
                raise UrdfError(f"link {link!r} is not in the tree")
            t = j.transform(float(positions.get(j.name, 0.0))) @ t
            link = j.parent
        return t


def transform_tuple(t: np.ndarray) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
    """(translation xyz, rotation quaternion x, y, z, w) of a 4x4 transform."""
    r = t[:3, :3]
    tr = r[0, 0] + r[1, 1] + r[2, 2]
    if tr > 0:
        s = math.sqrt(tr + 1.0) * 2
        w, x, y, z = 0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2]) * 2
        w, x, y, z = (r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s
    elif r[1, 1] > r[2, 2]:
        s = math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2]) * 2
        w, x, y, z = (r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s
    else:
        s = math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1]) * 2
        w, x, y, z = (r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s
    return (float(t[0, 3]), float(t[1, 3]), float(t[2, 3])), (float(x), float(y), float(z), float(w))
