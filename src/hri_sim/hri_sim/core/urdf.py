"""A URDF of a compiled MuJoCo model (the model the simulation steps), for ``/robot_description``.

Pure: in a ``mujoco.MjModel`` (plus names and limits from the config), out a URDF string. No
middleware, no clock. What maps to what:

- MuJoCo's world body -> the root link ``root_link`` (the robot's base frame, ``frames.base``);
  every other body -> a link of the same name, with its inertia (mass, COM ``body_ipos`` and
  principal axes ``body_iquat``, principal moments ``body_inertia``; massless bodies get none).
- A body's hinge / slide joint -> a ``revolute`` / ``prismatic`` joint (origin = the body's pose in
  its parent ``body_pos``/``body_quat``, axis ``jnt_axis``; an anchor ``jnt_pos`` off the body
  origin adds a ``<body>__anchor`` link: origin · Trans(p) · motion · Trans(-p), exactly MuJoCo's
  motion); position limits = ``jnt_range``; velocity and effort limits from the config (MJCF has no
  velocity limit). A joint not in ``movable`` (e.g. the FR3's fingers, which no node commands) is
  ``fixed`` at ``qpos0``. A body without joint -> a ``fixed`` joint.
- A mobile robot (``root_body``, e.g. Tino's planar base): that body is the root link
  ``root_link`` (with its inertia and geoms); its own joints (the planar x/y/yaw of the base) are
  not in the URDF: the base's pose is ``odom -> root_link``, published from the odometry (as a
  diff-drive controller does). Bodies outside its subtree (the floor) are left out.
- The EE site (if any) -> a fixed link ``ee_link`` (``frames.ee``) on the site's body.
- Geoms -> ``<visual>`` (every geom) and ``<collision>`` (geoms with contype or conaffinity):
  meshes by ``mesh_uri(absolute file path)`` at the file's frame (MuJoCo moves a mesh to its
  inertial frame when compiling: the file frame is the compiled geom pose · (mesh_pos,
  mesh_quat)⁻¹), boxes, spheres, cylinders; a capsule as a cylinder with two spheres.

Numbers are written with ``repr`` (17 significant digits), so the URDF's kinematics equal the
model's to rounding (checked to 1e-9 against MuJoCo and the C++ core in the tests).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional
from xml.sax.saxutils import quoteattr

import numpy as np

__all__ = ["urdf_from_mujoco", "quat_to_matrix", "rpy_from_matrix"]


MESH_PACKAGE = "hri_sim"      # package://hri_sim/meshes/<robot>/<path under the model's asset root>


def mesh_uri_function(robot: str, mode: str, asset_root: Path) -> Callable[[str], str]:
    """absolute mesh path -> URI for ``robot_state.mesh_uri``: ``package`` (under
    ``package://hri_sim/meshes/<robot>/``, the path below ``asset_root``) or ``file``."""
    root = Path(asset_root).resolve()
    if mode == "package":
        return lambda p: f"package://{MESH_PACKAGE}/meshes/{robot}/{Path(p).resolve().relative_to(root).as_posix()}"
    return lambda p: Path(p).resolve().as_uri()


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix of a unit quaternion (w, x, y, z) (MuJoCo's order)."""
    w, x, y, z = (float(v) for v in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rpy_from_matrix(r: np.ndarray) -> tuple[float, float, float]:
    """URDF's fixed-axis roll, pitch, yaw of R = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = math.atan2(-r[2, 0], math.hypot(r[0, 0], r[1, 0]))
    if math.hypot(r[0, 0], r[1, 0]) < 1e-12:        # gimbal lock: fold yaw into roll
        return math.atan2(-r[1, 2], r[1, 1]), pitch, 0.0
    return math.atan2(r[2, 1], r[2, 2]), pitch, math.atan2(r[1, 0], r[0, 0])


def _num(v: float) -> str:
    v = float(v)
    return "0" if v == 0.0 else repr(v)


def _vec(v: Iterable[float]) -> str:
    return " ".join(_num(x) for x in v)


def _origin(t: np.ndarray) -> str:
    return f'<origin xyz="{_vec(t[:3, 3])}" rpy="{_vec(rpy_from_matrix(t[:3, :3]))}"/>'


def _pose(pos, quat) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = quat_to_matrix(quat)
    t[:3, 3] = np.asarray(pos, float)
    return t


def _inv(t: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = t[:3, :3].T
    out[:3, 3] = -t[:3, :3].T @ t[:3, 3]
    return out


def _name(model, kind: str, i: int) -> str:
    return getattr(model, kind)(i).name


def urdf_from_mujoco(model, *, robot_name: str, root_link: str, ee_site: Optional[str], ee_link: str,
                     movable: Mapping[str, tuple[float, float]],
                     mesh_uri: Callable[[str], str], root_body: Optional[str] = None,
                     ros2_control: Optional[str] = None) -> str:
    """The URDF of ``model``.

    ``movable``: joint name -> (velocity limit [rad/s or m/s], effort limit [N·m or N]) for the
    joints that move (every other hinge/slide is fixed at qpos0); ``mesh_uri``: absolute mesh file
    path -> the URI written in the URDF. Raises ValueError for a model it cannot express (a free or
    ball joint, several joints on one body, a movable joint missing from the model, the EE site or
    a link name missing or clashing). ``ee_site`` None: no EE link. ``root_body``: the body that is
    the root link (a mobile base; default the world body). ``ros2_control``: a ``<ros2_control>``
    tag (hri_sim.core.ros2_control.ros2_control_xml) placed before ``</robot>``."""
    import mujoco

    jt = mujoco.mjtJoint
    names = {_name(model, "body", b) for b in range(1, model.nbody)} - {root_body}
    for clash in (root_link, ee_link):
        if clash in names:
            raise ValueError(f"link name {clash!r} is already a body of the model")
    known = {_name(model, "joint", j) for j in range(model.njnt)}
    missing = [j for j in movable if j not in known]
    if missing:
        raise ValueError(f"movable joints not in the model: {missing}")
    site = -1
    if ee_site is not None:
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, ee_site)
        if site < 0:
            raise ValueError(f"EE site {ee_site!r} not in the model")
    root = 0
    if root_body is not None:
        root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, root_body)
        if root <= 0:
            raise ValueError(f"root body {root_body!r} not in the model")

    def in_subtree(b: int) -> bool:
        while b != root and b != 0:
            b = int(model.body_parentid[b])
        return b == root

    link_of = lambda b: root_link if b == root else _name(model, "body", b)  # noqa: E731
    out = ['<?xml version="1.0"?>', f'<robot name={quoteattr(robot_name)}>',
           f'  <link name={quoteattr(root_link)}/>' if root == 0 else _link(model, root, mesh_uri, root_link)]
    for b in range(1, model.nbody):
        if b == root or not in_subtree(b):
            continue
        out.append(_link(model, b, mesh_uri))
        jids = [j for j in range(model.njnt) if model.jnt_bodyid[j] == b]
        if len(jids) > 1:
            raise ValueError(f"body {link_of(b)!r} has {len(jids)} joints (one per link in a URDF)")
        offset = _pose(model.body_pos[b], model.body_quat[b])
        parent, child = link_of(int(model.body_parentid[b])), link_of(b)
        if not jids:
            out.append(_joint(f"{child}__fixed", "fixed", parent, child, offset))
            continue
        j = jids[0]
        jname = _name(model, "joint", j)
        if int(model.jnt_type[j]) not in (int(jt.mjJNT_HINGE), int(jt.mjJNT_SLIDE)):
            raise ValueError(f"joint {jname!r}: only hinge and slide joints have a URDF form")
        hinge = int(model.jnt_type[j]) == int(jt.mjJNT_HINGE)
        anchor = np.asarray(model.jnt_pos[j], float)
        axis = np.asarray(model.jnt_axis[j], float)
        moving_child = child
        if np.any(anchor != 0.0):                 # motion about an anchor off the body origin
            moving_child = f"{child}__anchor"
            out.append(f"  <link name={quoteattr(moving_child)}/>")
            offset = offset @ _pose(anchor, (1, 0, 0, 0))
            out.append(_joint(f"{child}__anchor_fixed", "fixed", moving_child, child,
                              _pose(-anchor, (1, 0, 0, 0))))
        if jname not in movable:                  # held at qpos0 (not commanded by any node)
            q0 = float(model.qpos0[model.jnt_qposadr[j]])
            motion = np.eye(4)
            if hinge:
                motion[:3, :3] = _axis_angle(axis, q0)
            else:
                motion[:3, 3] = axis * q0
            out.append(_joint(jname, "fixed", parent, moving_child, offset @ motion))
            continue
        vel, eff = movable[jname]
        lo, hi = (float(v) for v in model.jnt_range[j]) if model.jnt_limited[j] else (-math.pi, math.pi)
        kind = "revolute" if hinge else "prismatic"
        if hinge and not model.jnt_limited[j]:
            kind = "continuous"
        limit = (f'<limit lower="{_num(lo)}" upper="{_num(hi)}" velocity="{_num(vel)}" effort="{_num(eff)}"/>'
                 if kind != "continuous" else f'<limit velocity="{_num(vel)}" effort="{_num(eff)}"/>')
        out.append(_joint(jname, kind, parent, moving_child, offset, axis=axis, extra=limit))
    if site >= 0:
        sb = int(model.site_bodyid[site])
        if not in_subtree(sb):
            raise ValueError(f"EE site {ee_site!r} is not on the robot (outside {root_body!r})")
        out.append(f"  <link name={quoteattr(ee_link)}/>")
        out.append(_joint(f"{ee_link}__fixed", "fixed", link_of(sb), ee_link,
                          _pose(model.site_pos[site], model.site_quat[site])))
    if ros2_control:
        out.append(ros2_control.rstrip("\n"))
    out.append("</robot>")
    return "\n".join(out) + "\n"


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    a = axis / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def _joint(name: str, kind: str, parent: str, child: str, origin: np.ndarray,
           axis: Optional[np.ndarray] = None, extra: str = "") -> str:
    parts = [f"  <joint name={quoteattr(name)} type={quoteattr(kind)}>",
             f"    <parent link={quoteattr(parent)}/>", f"    <child link={quoteattr(child)}/>",
             f"    {_origin(origin)}"]
    if axis is not None:
        parts.append(f'    <axis xyz="{_vec(axis)}"/>')
    if extra:
        parts.append(f"    {extra}")
    parts.append("  </joint>")
    return "\n".join(parts)


def _link(model, b: int, mesh_uri: Callable[[str], str], name: Optional[str] = None) -> str:
    import mujoco

    name = name or _name(model, "body", b)
    parts = [f"  <link name={quoteattr(name)}>"]
    mass = float(model.body_mass[b])
    if mass > 0.0:
        ixx, iyy, izz = (float(v) for v in model.body_inertia[b])
        parts += ["    <inertial>", f"      {_origin(_pose(model.body_ipos[b], model.body_iquat[b]))}",
                  f'      <mass value="{_num(mass)}"/>',
                  f'      <inertia ixx="{_num(ixx)}" ixy="0" ixz="0" iyy="{_num(iyy)}" iyz="0" izz="{_num(izz)}"/>',
                  "    </inertial>"]
    gt = mujoco.mjtGeom
    for g in range(model.ngeom):
        if model.geom_bodyid[g] != b:
            continue
        pose = _pose(model.geom_pos[g], model.geom_quat[g])
        size = model.geom_size[g]
        shapes: list[tuple[np.ndarray, str]] = []
        t = int(model.geom_type[g])
        if t == int(gt.mjGEOM_MESH):
            m = int(model.geom_dataid[g])
            path = _mesh_path(model, m)
            scale = _vec(model.mesh_scale[m]) if hasattr(model, "mesh_scale") else "1 1 1"
            file_pose = pose @ _inv(_pose(model.mesh_pos[m], model.mesh_quat[m]))
            shapes.append((file_pose, f'<mesh filename={quoteattr(mesh_uri(path))} scale="{scale}"/>'))
        elif t == int(gt.mjGEOM_BOX):
            shapes.append((pose, f'<box size="{_vec(2.0 * size[:3])}"/>'))
        elif t == int(gt.mjGEOM_SPHERE):
            shapes.append((pose, f'<sphere radius="{_num(size[0])}"/>'))
        elif t == int(gt.mjGEOM_ELLIPSOID):
            shapes.append((pose, f'<sphere radius="{_num(max(size[:3]))}"/>'))
        elif t in (int(gt.mjGEOM_CYLINDER), int(gt.mjGEOM_CAPSULE)):
            shapes.append((pose, f'<cylinder radius="{_num(size[0])}" length="{_num(2.0 * size[1])}"/>'))
            if t == int(gt.mjGEOM_CAPSULE):
                for s in (1.0, -1.0):
                    shapes.append((pose @ _pose((0, 0, s * size[1]), (1, 0, 0, 0)),
                                   f'<sphere radius="{_num(size[0])}"/>'))
        else:                                     # plane, height field, SDF: no URDF shape
            continue
        collides = bool(model.geom_contype[g] or model.geom_conaffinity[g])
        rgba = _vec(model.geom_rgba[g])
        for k, (p, shape) in enumerate(shapes):
            material = quoteattr(f"{name}_geom{g}_{k}")
            parts.append(f"    <visual>\n      {_origin(p)}\n      <geometry>{shape}</geometry>\n"
                         f'      <material name={material}><color rgba="{rgba}"/></material>\n    </visual>')
            if collides:
                parts.append(f"    <collision>\n      {_origin(p)}\n      <geometry>{shape}</geometry>\n"
                             "    </collision>")
    parts.append("  </link>")
    return "\n".join(parts)


def _mesh_path(model, m: int) -> str:
    """The absolute file a mesh was loaded from (MuJoCo keeps it in ``model.paths``)."""
    adr = int(model.mesh_pathadr[m])
    if adr < 0:
        raise ValueError(f"mesh {model.mesh(m).name!r} has no file (built in code): no URDF mesh")
    raw = bytes(model.paths[adr:])
    return raw.split(b"\0", 1)[0].decode()
