"""Wires the core services to a simulated robot from the config tree (used by the CLI, the node,
the results generator and the bench).

``TuningSession.create(robot="humanoid_arm", setup="s2")`` – the thesis's 5-joint arm in setup
S1–S4 (``pid_tuning.setups``); ``robot="fr3"`` – the FR3's 7 joints (``config/robots/fr3.yaml``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .core.autotune import AutoTuningService, TuningData
from .core.heuristics import HeuristicsParams
from .core.metrics import EvaluationParams
from .core.motion import DanceMotion, SignFlipMotion, StepTestMotion
from .core.optimiser import JointCostFunction, OptimiserParams, optimise
from hri_core.pid import PIDGains, PIDParams
from .core.relay import RelayParams
from .parameters_gen import PidTuningHumanoidArmParams, PidTuningParams
from .core.services import PidConfigurationStorage, TestRunner

from hri_sim.pid_plants_mujoco import ARM_ROBOT, load_pid_config


def per_robot_config(cfg: Mapping[str, Any], robot: str) -> PidTuningHumanoidArmParams | PidTuningParams:
    """The per-robot items of ``pid_tuning`` (joint order, initial gains, dance, step test,
    default heuristic): ``pid_tuning.humanoid_arm`` for the humanoid arm, else ``pid_tuning``."""
    pt = PidTuningParams.from_tree(cfg)
    return pt.humanoid_arm if robot == ARM_ROBOT else pt


def initial_gains(cfg: Mapping[str, Any], robot: str, names: list[str]) -> dict[str, PIDGains]:
    """Joint -> initial (hold) gains of ``robot`` (ValueError: not set, or not one per joint)."""
    ig = per_robot_config(cfg, robot).initial_gains
    if ig is None:
        raise ValueError(f"pid_tuning.initial_gains is not set for {robot} (config/robots/{robot}.yaml)")
    if len(ig.kp) != len(names):
        raise ValueError(f"pid_tuning.initial_gains has {len(ig.kp)} joints, {robot} has {len(names)}")
    return {j: PIDGains(kp, ki, kd) for j, kp, ki, kd in zip(names, ig.kp, ig.ki, ig.kd)}


@dataclass
class TuningSession:
    robot: str
    setup: str | None
    cfg: dict
    plant: Any
    storage: PidConfigurationStorage
    runner: TestRunner
    autotuner: AutoTuningService
    pid_params: PIDParams
    eval_params: EvaluationParams
    relay_params: RelayParams
    heuristics: HeuristicsParams
    optimiser_params: OptimiserParams
    base_pose_deg: dict[str, float] = field(default_factory=dict)
    per_robot: Any = None       # pid_tuning.humanoid_arm or pid_tuning (per-robot items; typed params)
    params: PidTuningParams | None = None           # the pid_tuning section

    @classmethod
    def create(cls, robot: str = ARM_ROBOT, setup: str | None = "s2", config_root=None, overrides=None,
               transport: Callable[[str, PIDGains], bool] | None = None,
               clock: Callable[[], float] | None = None, plant: Any = None,
               reporter: Callable[[str, str, float, str], None] | None = None,
               cfg: dict | None = None) -> "TuningSession":
        """``plant``: the robot to tune (default: an in-process MuJoCo simulation of it; the live
        path passes a factory ``plant(model, collides)`` making a :class:`hri_pid_tuning.live.LiveRobot`,
        a robot node over the runtime). The model (limits, base pose, self-collision) always comes
        from the config's robot. ``cfg``: the merged config (default: :func:`load_pid_config` of
        ``robot`` with ``overrides``)."""
        if cfg is None:
            cfg = load_pid_config(robot, config_root, overrides)
        pt = PidTuningParams.from_tree(cfg)
        relay_amp = None
        from hri_sim.pid_plants_mujoco import (HUMANOID_ARM_JOINTS, ArmSetup, SelfCollisionCheck,
                                               build_pid_robot)

        model = build_pid_robot(robot, setup, cfg)     # ValueError: unknown robot / setup
        if robot == ARM_ROBOT:
            arm_setup = ArmSetup.from_config(setup, pt.setups[setup])
            if arm_setup.relay_amplitude_nm is not None:
                relay_amp = dict(zip(HUMANOID_ARM_JOINTS, arm_setup.relay_amplitude_nm))
        else:
            setup = None
        collides = SelfCollisionCheck(model, pt.safe_tuning.collision_clearance_m)
        if plant is None:
            plant = model
        elif not hasattr(plant, "joint_names"):      # a factory: plant(model, collides)
            plant = plant(model, collides)
        names = plant.joint_names
        per_robot = pt.humanoid_arm if robot == ARM_ROBOT else pt
        pid_params = PIDParams.from_config(pt.pid)
        eval_params = pt.evaluation
        storage = PidConfigurationStorage(names, PIDGains(0.0), transport=transport, clock=clock)
        for j, g in initial_gains(cfg, robot, names).items():
            storage.set(j, g)
        storage.transmit_all()
        runner = TestRunner(plant, storage, pid_params, eval_params, pt.sample_interval_s, clock)
        base = {j: math.degrees(q) for j, q in zip(names, plant.base_pose_rad)}
        relay = pt.relay
        heur = HeuristicsParams.from_tree(cfg)
        order = [j for j in (per_robot.joint_order or []) if j in names] or list(names)
        auto = AutoTuningService(lambda j, holds: plant.joint(j, holds, pid_params), storage, relay, heur,
                                 per_robot.heuristics.default, base, order, relay_amp,
                                 safe=pt.safe_tuning, pid_params=pid_params,
                                 collides=collides, reporter=reporter)
        return cls(robot, setup, cfg, plant, storage, runner, auto, pid_params, eval_params, relay, heur,
                   pt.optimiser, base, per_robot, pt)

    # --- motions ---------------------------------------------------------------------------------
    def step_motion(self, joint: str) -> StepTestMotion:
        st = self.per_robot.step_test
        return StepTestMotion(joint, st.pause_s, st.hold_s, st.repeats, step_deg=st.step_deg)

    def flip_motion(self, joint: str) -> SignFlipMotion:
        """The thesis's step-test button: the joint's angle flips sign and back – its base angle,
        or ``pid_tuning.sign_flip_angle_deg`` when that is below half of
        ``pid_tuning.sign_flip_min_step_deg`` (a joint at 0° would not move; the thesis: "set it
        to a suitably large value" first)."""
        st = self.per_robot.step_test
        base = float(self.plant.base_pose_rad[list(self.plant.joint_names).index(joint)])
        angle = None if 2.0 * abs(math.degrees(base)) >= self.params.sign_flip_min_step_deg \
            else math.radians(self.params.sign_flip_angle_deg)
        return SignFlipMotion(joint, st.pause_s, st.hold_s, st.repeats, angle_rad=angle)

    def dance_motion(self) -> DanceMotion:
        d = self.per_robot.dance
        if d is None:
            raise ValueError(f"pid_tuning.dance is not set for {self.robot}")
        n = len(self.plant.joint_names)
        amp = list(d.amplitude_deg)[:n] + [0.0] * max(0, n - len(d.amplitude_deg))
        fr = list(d.frequency_hz)[:n] + [0.0] * max(0, n - len(d.frequency_hz))
        return DanceMotion(amp, fr, d.duration_s)

    def step_motions(self) -> list[StepTestMotion]:
        return [self.step_motion(j) for j in self.plant.joint_names]

    # --- optimiser ------------------------------------------------------------------------------
    def cost_function(self, joint: str, holds: Mapping[str, PIDGains] | None = None) -> JointCostFunction:
        jp = self.plant.joint(joint, dict(holds or self.storage.local), self.pid_params)
        return JointCostFunction(jp, self.step_motion(joint), math.radians(self.base_pose_deg[joint]),
                                 self.optimiser_params, self.pid_params, self.eval_params)

    def optimise_joint(self, joint: str, tuning: TuningData, progress=None):
        cf = self.cost_function(joint)
        return optimise(cf, tuning.heuristics, tuning.relay.tu_s, progress), cf
