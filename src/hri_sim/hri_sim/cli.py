"""``hri sim``: load a robot's MuJoCo model and step it headless (or show it with a viewer)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

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


def write_ros2_control(robot: str, hardware: str, out_dir: Optional[Path] = None, robot_ip: str = "") -> dict:
    """``hri sim ros2-control``: the files a controller manager needs for ``robot`` on
    ``hardware`` (hri_sim.core.ros2_control), in ``out_dir``: ``model.mjb`` (the arm's MuJoCo model
    with torque motors, timestep 1 / interaction.rate_hz: what MujocoSystem steps and the
    controller's model terms use), ``robot.urdf`` (with the <ros2_control> tag) and
    ``controllers.yaml`` (ros2_control_node's parameter file). ``out_dir`` None:
    ``ros2_control.dir`` (hri_sim.core.ros2_control.files_dir). Returns the paths."""
    import mujoco
    import yaml

    from hri_runtime.parameter_library.gpl import default_spec_path, load_spec, parameter_values
    from hri_sim.core.ros2_control import files_dir, hardware_refusal, manager_parameters, ros2_control_xml
    from hri_sim.core.urdf import mesh_uri_function, urdf_from_mujoco
    from hri_sim.models import arm_asset_root

    overrides = [f"ros2_control.hardware={hardware}", "ros2_control.control=ros2_control"]
    if robot_ip:
        overrides.append(f"ros2_control.robot_ip={robot_ip}")
    cfg = load_robot_config(robot, overrides=overrides)
    why = hardware_refusal(cfg, hardware)
    if why:
        raise ConfigError(None, "ros2_control.hardware", hardware, why)
    rate = float(cfg["interaction"]["rate_hz"])
    model_name = RobotParams.from_tree(cfg).model
    model = load_arm(model_name, actuation="torque", timestep_s=1.0 / rate)
    out_dir = Path(out_dir) if out_dir is not None else files_dir(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"model": out_dir / "model.mjb", "urdf": out_dir / "robot.urdf", "params": out_dir / "controllers.yaml"}
    mujoco.mj_saveModel(model, str(paths["model"]), None)
    model_file = str(paths["model"].resolve())
    j = cfg["joints"]
    movable = {n: (np.radians(v), float(e)) for n, v, e in zip(j["names"], j["velocity_max_deg_s"], j["torque_max_nm"])}
    urdf = urdf_from_mujoco(model, robot_name=model_name, root_link=cfg["frames"]["base"],
                            ee_site=cfg["robot_state"]["ee_site"], ee_link=cfg["frames"]["ee"], movable=movable,
                            mesh_uri=mesh_uri_function(model_name, cfg["robot_state"]["mesh_uri"], arm_asset_root(model_name)),
                            ros2_control=ros2_control_xml(cfg, hardware, model_file))
    paths["urdf"].write_text(urdf)
    values = parameter_values(load_spec(default_spec_path()), cfg, model_file=model_file)
    paths["params"].write_text(yaml.safe_dump(manager_parameters(cfg, values, int(round(rate))), sort_keys=False))
    return paths


def main(argv: list[str]) -> int:
    from hri_runtime.cli.main import SUMMARIES

    parser = argparse.ArgumentParser(prog="hri sim", description=SUMMARIES["sim"])
    sub = parser.add_subparsers(dest="verb", required=True)
    step = sub.add_parser("step", help="step a robot headless holding a named pose")
    add_robot_argument(step, "fr3")
    step.add_argument("--seconds", type=positive_float, default=1.0, help="simulated seconds (default 1)")
    step.add_argument("--pose", default="home",
                      help="a pose of the robot's joints.named_positions_deg (default home)")
    rc = sub.add_parser("ros2-control", help="write the model, URDF and controller parameters of a robot "
                        "for ros2_control (docs/hardware.md)")
    add_robot_argument(rc, "fr3")
    rc.add_argument("--hardware", default="mujoco", choices=("mujoco", "mock", "franka", "ur", "iiwa"),
                    help="the ros2_control system (default mujoco)")
    rc.add_argument("--robot-ip", default="", help="the robot's address (vendor hardware)")
    rc.add_argument("--dir", type=Path, default=None,
                    help="output folder (default: ros2_control.dir, i.e. build/ros2_control/<robot>)")
    args = parser.parse_args(argv)
    if args.verb == "ros2-control":
        try:
            paths = write_ros2_control(args.robot, args.hardware, args.dir, args.robot_ip)
        except (ConfigError, ModelNotFoundError, ValueError, OSError) as exc:
            print(f"hri sim: {exc}", file=sys.stderr)
            return 2
        for k, p in paths.items():
            print(f"{k}: {p}")
        return 0
    try:
        result = step_arm(args.robot, args.seconds, args.pose)
    except (ConfigError, ModelNotFoundError) as exc:
        print(f"hri sim: {exc}", file=sys.stderr)
        return 2
    print(f"{result['robot']}: {result['steps']} steps of {result['timestep_s'] * 1e3:.1f} ms "
          f"({result['sim_time_s']:.2f} s simulated), holding '{args.pose}': "
          f"max joint error {result['max_joint_error_rad'] * 1e3:.2f} mrad")
    return 0
