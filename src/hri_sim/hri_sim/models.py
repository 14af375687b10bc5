"""Where the MuJoCo models come from.

The FR3 model with meshes ships in the ``franky-sim`` wheel (Apache-2.0), installed with
``--no-deps``. We only read its asset files; its Python package is never imported.
``MENAGERIE_ROOT`` (a MuJoCo Menagerie checkout) is honoured when a user has one.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent / "mjcf"


class ModelNotFoundError(FileNotFoundError):
    """A robot model is not installed on this machine; the message says how to get it."""


def _package_dir(dist_module: str) -> Path | None:
    # find_spec on a top-level name locates the package without executing its __init__.
    spec = importlib.util.find_spec(dist_module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def fr3_xml_path() -> Path:
    """Path of the FR3 MJCF (with meshes) shipped in the franky-sim wheel."""
    menagerie = os.environ.get("MENAGERIE_ROOT")
    if menagerie:
        candidate = Path(menagerie) / "franka_fr3" / "fr3.xml"
        if candidate.is_file():
            return candidate
    pkg = _package_dir("franky_sim")
    if pkg is not None:
        candidate = pkg / "assets" / "fr3.xml"
        if candidate.is_file():
            return candidate
    raise ModelNotFoundError(
        "FR3 model not found: install it with `.venv/bin/pip install --no-deps franky-sim` "
        "(done by `make`), or set MENAGERIE_ROOT to a MuJoCo Menagerie checkout."
    )


def fr3_spec():
    """The FR3 as a ``mujoco.MjSpec`` ready to compile (or to edit: sites, actuators, sensors).

    franky-sim's fr3.xml says ``meshdir="assets"`` but ships its meshes in ``assets/meshes``
    (its own simulator rewrites the path); we point the spec at the real directory."""
    import mujoco

    path = fr3_xml_path()
    spec = mujoco.MjSpec.from_file(str(path))
    mesh_dir = path.parent / "meshes"
    if mesh_dir.is_dir():
        spec.meshdir = str(mesh_dir)
    return spec


def fr3_model():
    """The compiled FR3 ``mujoco.MjModel`` as shipped (position actuators, no extras)."""
    return fr3_spec().compile()


# ----------------------------------------------------------------------------- arm model variants

FR3_ARM_JOINTS = tuple(f"fr3_joint{i}" for i in range(1, 8))
FR3_FLANGE_OFFSET_M = 0.107   # link7 -> flange (Franka's "F" frame), as Menagerie's attachment_site
FR3_TCP_OFFSET_M = 0.1034     # hand -> TCP between the fingertips (Franka's default EE frame)


def load_fr3(actuation: str = "position", add_ft_sensor: bool = False,
             gravity_compensation: bool = False, timestep_s: float | None = None):
    """The FR3 ``mujoco.MjModel`` edited through ``mujoco.MjSpec`` for control work.

    - sites ``attachment_site`` (flange, on ``fr3_link7``, z + 0.107 m) and ``tcp`` (on ``hand``,
      z + 0.1034 m), the frames IK and controllers use;
    - ``actuation="position"``: the shipped position servos (kp 4500 ... 2000); ``"torque"``: the
      seven arm actuators become motors ``ctrl = tau`` [N·m], ctrlrange = the joint's
      actuatorfrcrange (87/12 N·m); the gripper actuator is left as shipped;
    - ``add_ft_sensor``: a ``force``/``torque`` sensor pair (``ee_force``, ``ee_torque``) at the
      flange site, measuring what the hand exerts on link 7 (in the site frame);
    - ``gravity_compensation``: ``gravcomp = 1`` on every body (gravity cancelled as a passive
      force, like the real robot's internal gravity compensation);
    - ``timestep_s``: overrides the MJCF's physics step.
    """
    if actuation not in ("position", "torque"):
        raise ValueError(f"actuation must be 'position' or 'torque', got {actuation!r}")
    spec = fr3_spec()
    link7 = spec.body("fr3_link7")
    link7.add_site(name="attachment_site", pos=[0.0, 0.0, FR3_FLANGE_OFFSET_M])
    spec.body("hand").add_site(name="tcp", pos=[0.0, 0.0, FR3_TCP_OFFSET_M])
    if actuation == "torque":
        for name in FR3_ARM_JOINTS:
            act = spec.actuator(name)
            jnt = spec.joint(name)
            limit = float(jnt.actfrcrange[1])
            act.set_to_motor()
            act.inheritrange = 0.0
            act.ctrllimited = 1
            act.ctrlrange = [-limit, limit]
    if add_ft_sensor:
        spec.add_sensor(name="ee_force", type=_mj().mjtSensor.mjSENS_FORCE,
                        objtype=_mj().mjtObj.mjOBJ_SITE, objname="attachment_site")
        spec.add_sensor(name="ee_torque", type=_mj().mjtSensor.mjSENS_TORQUE,
                        objtype=_mj().mjtObj.mjOBJ_SITE, objname="attachment_site")
    return _compile(spec, gravity_compensation, timestep_s)


def _compile(spec, gravity_compensation: bool, timestep_s: float | None):
    """Common last edits: ``gravcomp = 1`` on every body, the physics step; then compile."""
    if gravity_compensation:
        for body in spec.bodies:
            if body.name != "world":
                body.gravcomp = 1.0
    if timestep_s is not None:
        spec.option.timestep = float(timestep_s)
    return spec.compile()


def _mj():
    import mujoco

    return mujoco


# robosuite ships UR5e and iiwa MJCFs with meshes (MIT; install the wheel with --no-deps, never
# import it). Their joints are renamed to the config's names; the flange site is added on the
# ``right_hand`` body (robosuite's end-effector mount).
ROBOSUITE_ARMS = {
    "ur5e": {"dir": "ur5e", "joints": None},
    "iiwa14": {"dir": "iiwa", "joints": {f"joint_{i}": f"joint_a{i}" for i in range(1, 8)}},
}


def robosuite_xml_path(robot: str) -> Path:
    info = ROBOSUITE_ARMS[robot]
    pkg = _package_dir("robosuite")
    if pkg is not None:
        candidate = pkg / "models" / "assets" / "robots" / info["dir"] / "robot.xml"
        if candidate.is_file():
            return candidate
    raise ModelNotFoundError(
        f"{robot} model not found: install it with `.venv/bin/pip install --no-deps robosuite` "
        "(MIT, 157 MB; only its MJCF assets are read)")


def load_robosuite_arm(robot: str, actuation: str = "torque", gravity_compensation: bool = False,
                       timestep_s: float | None = None, servo_kp: float = 2000.0,
                       servo_kv: float = 200.0):
    """UR5e / iiwa14 from the robosuite wheel: torque motors as shipped (``actuation="torque"``) or
    position servos (kp, kv) for kinematic use (``"position"``); site ``attachment_site``."""
    import mujoco

    if actuation not in ("position", "torque"):
        raise ValueError(f"actuation must be 'position' or 'torque', got {actuation!r}")
    spec = mujoco.MjSpec.from_file(str(robosuite_xml_path(robot)))
    renames = ROBOSUITE_ARMS[robot]["joints"] or {}
    for old, new in renames.items():
        spec.joint(old).name = new
    for act in spec.actuators:
        act.target = renames.get(act.target, act.target)
    # robosuite's RobotModel sets these joint attributes when it loads an arm (the raw MJCF has
    # near-zero reflected inertia: a 0.19 kg wrist link alone is unstable under a PD at 2 ms).
    arm_joints = [j for j in spec.joints if j.type == mujoco.mjtJoint.mjJNT_HINGE]
    for i, j in enumerate(arm_joints):
        j.armature = 5.0 / (i + 1)
        j.damping = [0.1 / (i + 1), 0.0, 0.0]  # mujoco 4: [linear, ...] coefficients
        j.frictionloss = 0.1 / (i + 1)
    spec.body("right_hand").add_site(name="attachment_site", pos=[0.0, 0.0, 0.0])
    if actuation == "position":
        for act in spec.actuators:
            act.set_to_position(kp=servo_kp, kv=servo_kv)
            act.ctrllimited = 0
    return _compile(spec, gravity_compensation, timestep_s)


def arm_asset_root(robot: str) -> Path:
    """The folder of an arm's MJCF, under which its meshes lie (the root of package:// mesh URIs)."""
    if robot == "fr3":
        return fr3_xml_path().parent
    if robot in ROBOSUITE_ARMS:
        return robosuite_xml_path(robot).parent
    raise ModelNotFoundError(
        f"no MuJoCo model wired for arm '{robot}' (known: fr3, {', '.join(ROBOSUITE_ARMS)})")


MESH_URI_PREFIX = "package://hri_sim/meshes/"


def mesh_file_for_uri(uri: str) -> Path | None:
    """The file of a ``package://hri_sim/meshes/<robot>/<path>`` URI (the URDF's meshes, see
    ``hri_sim.nodes.robot_state_node``) in the model wheel; None for any other URI, a path that
    leaves the robot's model folder, or a file that does not exist."""
    if not uri.startswith(MESH_URI_PREFIX):
        return None
    robot, _, rel = uri[len(MESH_URI_PREFIX):].partition("/")
    try:
        root = arm_asset_root(robot).resolve()
    except (ModelNotFoundError, KeyError):
        return None
    path = (root / rel).resolve()
    if root not in path.parents or not path.is_file():
        return None
    return path


def load_arm(robot: str, actuation: str = "position", **kw):
    """The MuJoCo model of an arm by config name; raises ModelNotFoundError with the way out."""
    if robot == "fr3":
        return load_fr3(actuation=actuation, **kw)
    if robot in ROBOSUITE_ARMS:
        kw.pop("add_ft_sensor", None)
        return load_robosuite_arm(robot, actuation=actuation, **kw)
    raise ModelNotFoundError(
        f"no MuJoCo model wired for arm '{robot}' (known: fr3, {', '.join(ROBOSUITE_ARMS)})")
