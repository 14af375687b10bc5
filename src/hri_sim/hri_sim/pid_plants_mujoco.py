"""MuJoCo plants for PID tuning (used by hri_pid_tuning): the models and setups of the robots
tuned, each simulated by the one arm simulation, ``hri_sim.arm_sim.ArmSim`` in mode ``pid``
(efforts per joint at ``control_period_s``, zero-order hold, optional measurement delay;
``joint(name, ...)`` one joint as a ``JointPlant`` with the others held by their own PIDs, as in
the thesis where joints are tuned one at a time while the others keep their configuration).

* :func:`build_humanoid_arm` – the 5-joint humanoid arm (``mjcf/humanoid_arm.xml``) in one of the
  thesis's setups S1–S4 (Webel's thesis §4.1), every number from ``pid_tuning.setups.<name>``.
* :func:`build_fr3` – the FR3 (franky-sim MJCF) with its position servos replaced by torque motors.
* :func:`build_tino_leg` – the social robot's leg (the model of ``hri_sim.tino``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hri_runtime.parameter_library.typed import params_type   # pid_tuning.*: hri_pid_tuning's (it depends on us)
from hri_runtime.parameters_gen import JointsParams

from hri_sim.arm_sim import ArmSim

MJCF_DIR = Path(__file__).resolve().parent / "mjcf"
HUMANOID_ARM_XML = MJCF_DIR / "humanoid_arm.xml"
HUMANOID_ARM_JOINTS = ("shoulder_x", "shoulder_y", "shoulder_z", "elbow", "hand")
SEGMENT_GEOMS = {"upper_arm": "upper_arm_geom", "forearm": "forearm_geom", "hand": "hand_geom"}
ARM_ROBOT = "humanoid_arm"
CONFIG_ROBOT_FOR_ARM = "fr3"   # the humanoid arm has no robot file: its setups live in pid_tuning


def load_pid_config(robot: str, config_root=None, overrides=None) -> dict:
    """The merged config a PID plant of ``robot`` is built from (the humanoid arm uses fr3's)."""
    from hri_runtime.config.tree import load_robot_config

    return load_robot_config(CONFIG_ROBOT_FOR_ARM if robot == ARM_ROBOT else robot,
                             config_root=config_root, overrides=overrides)


# ------------------------------------------------------------------------------------------------
# builders
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArmSetup(params_type("pid_tuning.setups.*")):
    """One of the thesis's setups (a value of ``pid_tuning.setups``, typed and checked from its
    declaration in hri_pid_tuning's parameters.yaml) and its name; lists are per joint in
    HUMANOID_ARM_JOINTS order."""

    name: str = ""

    @classmethod
    def from_config(cls, name: str, section: Mapping[str, Any]) -> "ArmSetup":
        return replace(super().from_config(section), name=name)


def humanoid_arm_model(setup: ArmSetup):
    """Compile the humanoid arm with the setup's gravity, masses, limits, friction."""
    import mujoco

    spec = mujoco.MjSpec.from_file(str(HUMANOID_ARM_XML))
    spec.option.timestep = setup.physics_dt_s
    spec.option.gravity = [0.0, 0.0, -setup.gravity_m_s2]
    for seg, geom in SEGMENT_GEOMS.items():
        spec.geom(geom).mass = float(getattr(setup.masses_kg, seg))
    for i, jn in enumerate(HUMANOID_ARM_JOINTS):
        j = spec.joint(jn)
        j.frictionloss = setup.frictionloss_nm[i]
        j.damping = [setup.damping_nm_s_rad[i], 0.0, 0.0]   # MuJoCo 4: damping polynomial, linear term first
        j.armature = setup.armature_kg_m2[i]
        a = spec.actuator(jn)
        a.ctrlrange = [-setup.effort_max_nm[i], setup.effort_max_nm[i]]
        a.forcerange = [-setup.effort_max_nm[i], setup.effort_max_nm[i]]
        a.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    return spec.compile()


def build_humanoid_arm(setup: ArmSetup) -> ArmSim:
    return ArmSim(humanoid_arm_model(setup), HUMANOID_ARM_JOINTS, np.radians(setup.base_pose_deg), "pid",
                  ee_site=None, effort_max=setup.effort_max_nm, control_period_s=setup.control_period_s,
                  measurement_delay_s=setup.measurement_delay_s)


def build_fr3(effort_max_nm: Sequence[float], base_pose_deg: Sequence[float], control_period_s: float = 0.001,
              measurement_delay_s: float = 0.0, physics_dt_s: float = 0.001) -> ArmSim:
    """The FR3 of ``hri_sim.models.fr3_spec()`` with torque motors on its 7 joints (gripper kept
    on its position servo)."""
    import mujoco

    from .models import fr3_spec

    spec = fr3_spec()
    spec.option.timestep = physics_dt_s
    names = [f"fr3_joint{i}" for i in range(1, 8)]
    for a in list(spec.actuators):
        if a.name in names:
            spec.delete(a)
    for jn, tmax in zip(names, effort_max_nm):
        a = spec.add_actuator(name=jn, target=jn, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        a.set_to_motor()
        a.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        a.ctrlrange = [-tmax, tmax]
    return ArmSim(spec.compile(), names, np.radians(base_pose_deg), "pid", ee_site=None, effort_max=effort_max_nm,
                  control_period_s=control_period_s, measurement_delay_s=measurement_delay_s)


def build_tino_leg(leg_joints: Sequence[str] = ("leg",), effort_max: Sequence[float] = (),
                   base_pose_deg: Sequence[float] = (), control_period_s: float = 0.001,
                   actuator_names: Sequence[str] | None = ("leg_motor",),
                   measurement_delay_s: float = 0.0, cfg: Mapping[str, Any] | None = None) -> ArmSim:
    """The social robot's leg: the model ``hri_sim.tino.TinoSim`` steps (``tino_model`` with the
    ``atomic.sim`` values of ``cfg``, default the tino robot file). The leg's actuator is a
    speed-controlled DC motor driver, so the PID's output ("effort") is the motor speed command
    (rad/s at the motor) and ``effort_max`` its limit; the plant seen by the PID is an integrator
    with the motor lag (the atomic-motion leg hold). Raises FileNotFoundError without the model."""
    from hri_runtime.config.tree import load_robot_config

    from hri_sim import tino

    if not tino.TINO_XML.is_file():
        raise FileNotFoundError(f"{tino.TINO_XML} does not exist (the social robot's model is issue of hri_sim)")
    if len(effort_max) != len(leg_joints) or len(base_pose_deg) != len(leg_joints):
        raise ValueError("effort_max and base_pose_deg need one value per leg joint")
    model = tino.tino_model(tino.TinoSimParams.from_tree(load_robot_config("tino") if cfg is None else cfg))
    return ArmSim(model, leg_joints, np.radians(base_pose_deg), "pid", ee_site=None, actuator_names=actuator_names,
                  effort_max=effort_max, control_period_s=control_period_s, measurement_delay_s=measurement_delay_s)


# ------------------------------------------------------------------------------------------------
# self-collision check (safe tuning posture) and one builder for every tunable robot
# ------------------------------------------------------------------------------------------------
class SelfCollisionCheck:
    """``collides(q_rad) -> bool`` on a copy of the plant's model (kinematics only).

    A posture collides when two geoms of different bodies (the world's floor included) come closer
    than ``clearance_m`` (``mj_geomDistance``, independent of the model's contact filters: the
    humanoid arm's geoms do not collide in the physics) – except the pairs that are already that
    close at the reference posture (geoms overlapping at a shared joint, touching fingers): the
    reference posture (the robot's base pose) is collision-free by definition. When the model has
    collision geoms (contype/conaffinity ≠ 0) only those count, else every geom."""

    def __init__(self, plant: ArmSim, clearance_m: float,
                 reference_q_rad: Sequence[float] | None = None):
        import mujoco

        self._mj = mujoco
        self.model = plant.model
        self.data = mujoco.MjData(self.model)
        self.qadr = plant.qadr
        self.clearance_m = float(clearance_m)
        m = self.model
        geoms = [g for g in range(m.ngeom) if m.geom_contype[g] or m.geom_conaffinity[g]] or list(range(m.ngeom))
        self._pairs = [(a, b) for i, a in enumerate(geoms) for b in geoms[i + 1:]
                       if m.geom_bodyid[a] != m.geom_bodyid[b]]
        self._fromto = np.zeros(6)
        ref = plant.base_pose_rad if reference_q_rad is None else reference_q_rad
        self._pairs = [p for p in self._pairs if p not in set(self._close_pairs(ref))]
        self.checks = 0

    def _close_pairs(self, q_rad) -> list[tuple[int, int]]:
        self.data.qpos[self.qadr] = np.asarray(q_rad, dtype=float)
        self._mj.mj_kinematics(self.model, self.data)
        out = []
        for a, b in self._pairs:
            if self._mj.mj_geomDistance(self.model, self.data, a, b, self.clearance_m, self._fromto) < self.clearance_m:
                out.append((a, b))
        return out

    def __call__(self, q_rad: Sequence[float]) -> bool:
        self.checks += 1
        return bool(self._close_pairs(q_rad))

    def describe(self, q_rad: Sequence[float]) -> str:
        """Bodies of the first colliding pair ('' when free)."""
        pairs = self._close_pairs(q_rad)
        if not pairs:
            return ""
        m = self.model
        a, b = pairs[0]
        return f"{m.body(m.geom_bodyid[a]).name} – {m.body(m.geom_bodyid[b]).name}"


def build_pid_robot(robot: str, setup: str | None, cfg: Mapping[str, Any]) -> ArmSim:
    """The tunable robot of a merged config (``pid_tuning`` section): ``humanoid_arm`` in setup
    ``setup`` (S1–S4) or ``fr3`` (torque motors, base pose ``hri_home``). Raises ValueError."""
    if robot == "humanoid_arm":
        setups = params_type("pid_tuning").from_tree(cfg).setups
        if setup not in setups:
            raise ValueError(f"unknown setup {setup!r}; known: {sorted(setups)}")
        return build_humanoid_arm(ArmSetup.from_config(setup, setups[setup]))
    if robot == "fr3":
        pl = params_type("pid_tuning.plant").from_tree(cfg)
        joints = JointsParams.from_tree(cfg)
        return build_fr3(joints.torque_max_nm, joints.named_positions_deg["hri_home"],
                         control_period_s=pl.control_period_s, measurement_delay_s=pl.measurement_delay_s)
    raise ValueError(f"no PID plant for robot {robot!r} (humanoid_arm, fr3)")
