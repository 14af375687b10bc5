"""``hri sim``: load a robot's MuJoCo model and step it headless (or show it with a viewer)."""
from __future__ import annotations

import argparse
import sys

import numpy as np

from hri_runtime.config.tree import ConfigError, load_robot_config, named_position
from hri_runtime.errors import add_robot_argument, positive_float
from hri_runtime.parameters_gen import JointsParams, RobotParams
from hri_sim.models import ModelNotFoundError, load_arm


def step_arm(robot: str, seconds: float, pose: str) -> dict:
    """Hold a named pose with MuJoCo's position actuators for ``seconds`` of simulated time."""
    import mujoco

    cfg = load_robot_config(robot)
    model = load_arm(RobotParams.from_tree(cfg).model, actuation="position")
    data = mujoco.MjData(model)
    q_target = named_position(cfg, pose)
    joint_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in JointsParams.from_tree(cfg).names]
    qpos_adr = [model.jnt_qposadr[j] for j in joint_ids]
    data.qpos[qpos_adr] = q_target
    if model.nu >= len(joint_ids):
        data.ctrl[: len(joint_ids)] = q_target
    mujoco.mj_forward(model, data)
    steps = int(round(seconds / model.opt.timestep))
    for _ in range(steps):
        mujoco.mj_step(model, data)
    q_err = float(np.max(np.abs(data.qpos[qpos_adr] - q_target)))
    return {"robot": robot, "steps": steps, "sim_time_s": data.time, "max_joint_error_rad": q_err,
            "timestep_s": model.opt.timestep}


def main(argv: list[str]) -> int:
    from hri_runtime.cli.main import SUMMARIES

    parser = argparse.ArgumentParser(prog="hri sim", description=SUMMARIES["sim"])
    sub = parser.add_subparsers(dest="verb", required=True)
    step = sub.add_parser("step", help="step a robot headless holding a named pose")
    add_robot_argument(step, "fr3")
    step.add_argument("--seconds", type=positive_float, default=1.0, help="simulated seconds (default 1)")
    step.add_argument("--pose", default="home",
                      help="a pose of the robot's joints.named_positions_deg (default home)")
    args = parser.parse_args(argv)
    try:
        result = step_arm(args.robot, args.seconds, args.pose)
    except (ConfigError, ModelNotFoundError) as exc:
        print(f"hri sim: {exc}", file=sys.stderr)
        return 2
    print(f"{result['robot']}: {result['steps']} steps of {result['timestep_s'] * 1e3:.1f} ms "
          f"({result['sim_time_s']:.2f} s simulated), holding '{args.pose}': "
          f"max joint error {result['max_joint_error_rad'] * 1e3:.2f} mrad")
    return 0
