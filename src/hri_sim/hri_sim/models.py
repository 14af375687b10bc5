"""Where the MuJoCo models come from: each arm's ``sim.model`` section of its robot file.

An arm's MJCF ships in a model wheel installed with ``--no-deps`` by ``make`` (requirements-assets:
franky-sim, robosuite); we only read its files, the wheel's Python package is never imported.
``sim.model`` names the package (``package``), the MJCF inside it (``mjcf``), the MJCF's joints in
``joints.names`` order (renamed to the config's names), the flange body and offset of the
``attachment_site`` (optionally a ``tcp`` site), the meshes folder when the MJCF's ``meshdir`` is
wrong, an F/T sensor pair at the flange, and joint armature / damping / friction loss (docs/
configuration.md "Robot data"). ``MENAGERIE_ROOT`` (a MuJoCo Menagerie checkout) is honoured for
an arm whose ``sim.model.menagerie_mjcf`` is set. Adding an arm is adding its robot file: no code
here names an arm (tests/arm/test_arm_discovery.py).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

_ROBOT_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


class ModelNotFoundError(FileNotFoundError):
    """A robot model is not installed on this machine; the message says how to get it."""


def core_mujoco():
    """``hri_core.rt`` with its MuJoCo parts (``MujocoRobot``; ``mj_step``, the stepping of every
    simulator here, which holds the GIL: docs/realtime.md "Stepping from Python"); RuntimeError
    when hri_core was built without the mujoco wheel's library and headers."""
    from hri_core import rt

    if not rt.HAS_MUJOCO:
        raise RuntimeError("hri_core built without the mujoco wheel (libmujoco + headers): rebuild it (make venv)")
    return rt


def _package_dir(dist_module: str) -> Path | None:
    # find_spec on a top-level name locates the package without executing its __init__.
    try:
        spec = importlib.util.find_spec(dist_module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=32)
def _model_section(robot: str, config_root: str) -> tuple:
    from hri_runtime.config.tree import load_robot_config

    cfg = load_robot_config(robot, config_root=config_root)
    return (cfg["robot"].get("kind"), cfg["sim"]["model"], tuple(cfg["joints"]["names"] or ()))


def model_config(robot: str) -> tuple[dict, tuple[str, ...]]:
    """``(sim.model, joints.names)`` of ``robot`` (a file of config/robots). Raises
    ModelNotFoundError for a name that is no robot file or a robot without an arm model."""
    from hri_runtime.config.tree import ConfigError, find_config_root

    if not isinstance(robot, str) or not _ROBOT_NAME.match(robot):
        raise ModelNotFoundError(f"no arm named {robot!r} (a robot name is [a-z][a-z0-9_]*)")
    try:
        kind, section, names = _model_section(robot, str(find_config_root()))
    except ConfigError as exc:
        raise ModelNotFoundError(f"no MuJoCo model for {robot!r}: {exc}") from None
    if kind != "arm" or not section.get("package") or not section.get("mjcf"):
        raise ModelNotFoundError(f"no MuJoCo model configured for {robot!r} (robot.kind arm with "
                                 "sim.model.package and sim.model.mjcf in its robot file)")
    return section, names


def arm_xml_path(robot: str) -> Path:
    """The arm's MJCF: ``$MENAGERIE_ROOT/<sim.model.menagerie_mjcf>`` when both are set and the
    file exists, else ``<sim.model.package>/<sim.model.mjcf>`` of the installed model wheel."""
    m, _ = model_config(robot)
    menagerie = os.environ.get("MENAGERIE_ROOT")
    if menagerie and m.get("menagerie_mjcf"):
        candidate = Path(menagerie) / m["menagerie_mjcf"]
        if candidate.is_file():
            return candidate
    pkg = _package_dir(m["package"])
    if pkg is not None:
        candidate = pkg / m["mjcf"]
        if candidate.is_file():
            return candidate
    wheel = m["package"].replace("_", "-")
    raise ModelNotFoundError(
        f"{robot} model not found: install it with `.venv/bin/pip install --no-deps {wheel}` "
        "(done by `make`; only its MJCF assets are read)"
        + (", or set MENAGERIE_ROOT to a MuJoCo Menagerie checkout" if m.get("menagerie_mjcf") else ""))


def arm_spec(robot: str):
    """The arm's MJCF as a ``mujoco.MjSpec`` as shipped, joints renamed to ``joints.names``, the
    meshes folder fixed (``sim.model.mesh_dir``); ready to compile or to edit."""
    import mujoco

    m, names = model_config(robot)
    path = arm_xml_path(robot)
    spec = mujoco.MjSpec.from_file(str(path))
    if m.get("mesh_dir"):
        mesh_dir = path.parent / m["mesh_dir"]
        if mesh_dir.is_dir():
            spec.meshdir = str(mesh_dir)
    renames = dict(zip(m["joints"], names)) if m.get("joints") else {}
    for old, new in renames.items():
        spec.joint(old).name = new
    for act in spec.actuators:
        act.target = renames.get(act.target, act.target)
    return spec


# ----------------------------------------------------------------------------- arm model variants


def load_arm(robot: str, actuation: str = "position", add_ft_sensor: bool | None = None,
             gravity_compensation: bool = False, timestep_s: float | None = None,
             servo_kp: float = 2000.0, servo_kv: float = 200.0):
    """The MuJoCo model of an arm by config name, edited through ``mujoco.MjSpec`` for control
    work; raises ModelNotFoundError with the way out.

    - site ``attachment_site`` (the flange: ``sim.model.flange_body`` + ``flange_offset_m``) and,
      when ``sim.model.tcp_body`` is set, site ``tcp`` (+ ``tcp_offset_m``);
    - ``actuation="torque"``: the actuator of each arm joint is a motor ``ctrl = tau`` [N·m]: a
      shipped motor is kept, a shipped position servo becomes a motor with ctrlrange = the
      joint's actuatorfrcrange (else ``joints.torque_max_nm``); ``"position"``: a shipped servo is
      kept, a shipped motor becomes a position servo (``servo_kp``, ``servo_kv``) for kinematic
      use; actuators of other joints (a gripper) are left as shipped;
    - ``add_ft_sensor`` (None: ``sim.model.ft_sensor``): a ``force``/``torque`` sensor pair
      (``ee_force``, ``ee_torque``) at the flange site, measuring what the distal bodies exert
      on the flange body (in the site frame);
    - ``sim.model.joint_armature`` / ``joint_damping`` / ``joint_frictionloss`` (when set) on
      the arm joints (robosuite's loader sets such values: its raw MJCFs have near-zero
      reflected inertia, unstable under a PD at 2 ms);
    - ``gravity_compensation``: ``gravcomp = 1`` on every body (gravity cancelled as a passive
      force, like a real arm's internal gravity compensation);
    - ``timestep_s``: overrides the MJCF's physics step.
    """
    import mujoco

    if actuation not in ("position", "torque"):
        raise ValueError(f"actuation must be 'position' or 'torque', got {actuation!r}")
    m, names = model_config(robot)
    from hri_runtime.config.tree import load_robot_config

    spec = arm_spec(robot)
    joints = {n: spec.joint(n) for n in names}
    missing = [n for n, j in joints.items() if j is None]
    if missing:
        raise ModelNotFoundError(f"{robot}: joints {missing} not in {arm_xml_path(robot).name} "
                                 "(sim.model.joints maps the MJCF's names to joints.names)")
    for key, attr in (("joint_armature", "armature"), ("joint_damping", "damping"),
                      ("joint_frictionloss", "frictionloss")):
        values = m.get(key)
        if values is None:
            continue
        for n, v in zip(names, values):
            if attr == "damping":
                joints[n].damping = [float(v), 0.0, 0.0]   # mujoco 4: [linear, ...] coefficients
            else:
                setattr(joints[n], attr, float(v))
    spec.body(m["flange_body"]).add_site(name="attachment_site", pos=list(m["flange_offset_m"]))
    if m.get("tcp_body"):
        spec.body(m["tcp_body"]).add_site(name="tcp", pos=list(m["tcp_offset_m"]))
    torque_max = None
    for act in spec.actuators:
        if act.target not in joints:
            continue
        is_motor = act.biastype == mujoco.mjtBias.mjBIAS_NONE
        if actuation == "torque" and not is_motor:
            limit = float(joints[act.target].actfrcrange[1])
            if limit <= 0:
                torque_max = torque_max or load_robot_config(robot)["joints"]["torque_max_nm"]
                limit = float(torque_max[names.index(act.target)])
            act.set_to_motor()
            act.inheritrange = 0.0
            act.ctrllimited = 1
            act.ctrlrange = [-limit, limit]
        elif actuation == "position" and is_motor:
            act.set_to_position(kp=servo_kp, kv=servo_kv)
            act.ctrllimited = 0
    if m.get("ft_sensor") if add_ft_sensor is None else add_ft_sensor:
        spec.add_sensor(name="ee_force", type=mujoco.mjtSensor.mjSENS_FORCE,
                        objtype=mujoco.mjtObj.mjOBJ_SITE, objname="attachment_site")
        spec.add_sensor(name="ee_torque", type=mujoco.mjtSensor.mjSENS_TORQUE,
                        objtype=mujoco.mjtObj.mjOBJ_SITE, objname="attachment_site")
    if gravity_compensation:
        for body in spec.bodies:
            if body.name != "world":
                body.gravcomp = 1.0
    if timestep_s is not None:
        spec.option.timestep = float(timestep_s)
    return spec.compile()


def write_ros2_control_model(cfg: dict, out_dir: Path | None = None) -> Path:
    """The arm's model for ros2_control (docs/hardware.md): ``load_arm`` with torque motors and
    the timestep ``1 / interaction.rate_hz`` (what ``hri_controllers/MujocoSystem`` steps per
    controller-manager cycle and the controller's model terms use), saved as MJB in ``out_dir``
    (None: ``ros2_control.dir``) through a temporary file and a rename, so a reader never sees half
    a file (two stacks of one arm write the same bytes). Returns the file."""
    import tempfile

    import mujoco

    from .core.ros2_control import MODEL_FILE, files_dir

    model = load_arm(cfg["robot"]["model"], actuation="torque", timestep_s=1.0 / float(cfg["interaction"]["rate_hz"]))
    out = Path(out_dir) if out_dir is not None else files_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".model-", suffix=".mjb", dir=out)
    os.close(fd)
    try:
        mujoco.mj_saveModel(model, tmp, None)
        os.replace(tmp, out / MODEL_FILE)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return (out / MODEL_FILE).resolve()


def arm_asset_root(robot: str) -> Path:
    """The folder of an arm's MJCF, under which its meshes lie (the root of package:// mesh URIs)."""
    return arm_xml_path(robot).parent


MESH_URI_PREFIX = "package://hri_sim/meshes/"


def mesh_file_for_uri(uri: str) -> Path | None:
    """The file of a ``package://hri_sim/meshes/<robot>/<path>`` URI (the URDF's meshes, see
    ``hri_sim.nodes.robot_state_node``) in the model wheel; None for any other URI, a robot
    without a model, a path that leaves the robot's model folder, or a file that does not exist."""
    if not uri.startswith(MESH_URI_PREFIX):
        return None
    robot, _, rel = uri[len(MESH_URI_PREFIX):].partition("/")
    try:
        root = arm_asset_root(robot).resolve()
    except ModelNotFoundError:
        return None
    path = (root / rel).resolve()
    if root not in path.parents or not path.is_file():
        return None
    return path


# ----------------------------------------------------------------------------- the default arm
# Shorthands for the default robot of the CLIs and the PID tuning's arm plant (its robot file,
# config/robots/fr3.yaml, says where the model comes from, like every arm's).

FR3_ARM_JOINTS = tuple(f"fr3_joint{i}" for i in range(1, 8))


def fr3_xml_path() -> Path:
    """Path of the FR3 MJCF (with meshes) shipped in the franky-sim wheel."""
    return arm_xml_path("fr3")


def fr3_spec():
    """The FR3 as a ``mujoco.MjSpec`` ready to compile (or to edit: sites, actuators, sensors)."""
    return arm_spec("fr3")


def fr3_model():
    """The compiled FR3 ``mujoco.MjModel`` as shipped (position actuators, no extras)."""
    return fr3_spec().compile()


def load_fr3(actuation: str = "position", add_ft_sensor: bool = False,
             gravity_compensation: bool = False, timestep_s: float | None = None):
    """``load_arm("fr3", ...)``: sites ``attachment_site`` (flange) and ``tcp``."""
    return load_arm("fr3", actuation=actuation, add_ft_sensor=add_ft_sensor,
                    gravity_compensation=gravity_compensation, timestep_s=timestep_s)
