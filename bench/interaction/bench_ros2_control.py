"""The interaction controller's two hosts side by side, one after the other in one run: our
real-time loop (``hri_core.rt.RtLoop``: read -> InteractionTick -> write with MuJoCo inside, its own
thread) and the controller manager at 1 kHz (``controller_manager/ros2_control_node`` with
``hri_controllers/MujocoSystem`` and ``hri_controllers/InteractionController``, docs/hardware.md).

    # a ROS 2 with ros2_control and hri_controllers (AMENT_PREFIX_PATH, LD_LIBRARY_PATH, PYTHONPATH)
    python bench/interaction/bench_ros2_control.py --seconds 30

Per host: the period error |period - T| (µs; RtLoop: wake-to-wake; controller manager: the
``period`` update() receives, which the controller manager measures between its cycles), and the
tick cost (RtLoop: read + tick + write incl. the MuJoCo step; controller manager: update() alone,
model terms + stop + inputs + InteractionTick + write, measured inside update(): the MuJoCo step is
the system's write(), outside it). The controller prints its statistics when deactivated (its
histograms: 1 µs bins, so p50/p99 are bin upper edges). Both hold the FR3 at its home pose with
the stop supervisor's heartbeat on (tracking, not held).
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import load_line, machine_line, rt_thread_loop  # noqa: E402  (the RT loop as run.py measures it)

from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_runtime.packages import find_executable  # noqa: E402

STATS = re.compile(r"ticks (\d+); update\(\) cost us p50 ([\d.]+) p99 ([\d.]+) max ([\d.]+) mean ([\d.]+); "
                   r"period error us p50 ([\d.]+) p99 ([\d.]+) max ([\d.]+) \(n (\d+)\)")


def _call(node, cls, service, timeout_s=60.0, **fields):
    import rclpy

    cli = node.create_client(cls, service)
    if not cli.wait_for_service(timeout_sec=timeout_s):
        raise RuntimeError(f"service {service} not available")
    fut = cli.call_async(cls.Request(**fields))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=timeout_s)
    if fut.result() is None:
        raise RuntimeError(f"no response from {service}")
    return fut.result()


def controller_manager_run(robot: str, seconds: float) -> dict:
    """The controller manager at interaction.rate_hz on the MuJoCo system for ``seconds`` with the
    interaction controller active; its statistics line, parsed."""
    import rclpy
    from controller_manager_msgs.srv import ConfigureController, LoadController, SwitchController

    from hri_sim.cli import write_ros2_control

    cm = find_executable("controller_manager", "ros2_control_node")
    if not cm:
        raise SystemExit("bench_ros2_control: controller_manager/ros2_control_node not on AMENT_PREFIX_PATH")
    tmp = Path(tempfile.mkdtemp(prefix="hri_ros2_control_"))
    files = write_ros2_control(robot, "mujoco", tmp)
    env = dict(os.environ, HRI_TRANSPORT="rclpy", ROS_DOMAIN_ID=str(40 + os.getpid() % 50), PYTHONUNBUFFERED="1")
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    procs = []

    def start(cmd):
        procs.append(subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, start_new_session=True))
        return procs[-1]

    start([find_executable("hri_safety", "stop_supervisor"), "--ros-args", "-p", f"robot:={robot}"])
    start([find_executable("hri_sim", "robot_state"), "--ros-args", "-p", f"robot:={robot}",
           "-p", "ros2_control.control:=ros2_control", "-p", f"ros2_control.dir:={tmp}"])
    cm_proc = start([cm, "--ros-args", "--params-file", str(files["params"]),
                     "-r", "~/robot_description:=/robot_description"])
    rclpy.init()
    node = rclpy.create_node("bench_ros2_control")
    try:
        name = "interaction_controller"
        assert _call(node, LoadController, "/controller_manager/load_controller", name=name).ok
        assert _call(node, ConfigureController, "/controller_manager/configure_controller", name=name).ok
        assert _call(node, SwitchController, "/controller_manager/switch_controller", activate_controllers=[name],
                     strictness=SwitchController.Request.STRICT).ok
        time.sleep(seconds)
        assert _call(node, SwitchController, "/controller_manager/switch_controller", deactivate_controllers=[name],
                     strictness=SwitchController.Request.STRICT).ok
        time.sleep(0.5)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGINT)
        texts = [p.communicate(timeout=60)[0] for p in procs]
    text = texts[procs.index(cm_proc)]
    m = STATS.search(text)
    if not m:
        raise SystemExit("bench_ros2_control: no statistics line in the controller manager's output:\n" + text[-3000:])
    g = [float(x) for x in m.groups()]
    rt_line = next((ln for ln in text.splitlines() if "FIFO" in ln or "realtime" in ln.lower()), "")
    return {"ticks": int(g[0]), "cost_p50": g[1], "cost_p99": g[2], "cost_max": g[3], "cost_mean": g[4],
            "err_p50": g[5], "err_p99": g[6], "err_max": g[7], "n": int(g[8]), "rt": rt_line.strip()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="fr3")
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args(argv)
    from hri_runtime import provenance

    cfg = load_robot_config(args.robot)
    print(f"# provenance: {provenance.line()}")
    print(machine_line())
    print(f"load before: {load_line()}")
    rt = rt_thread_loop(cfg, args.seconds)
    cmr = controller_manager_run(args.robot, args.seconds)
    print(f"load after: {load_line()}")
    print(f"\n| 1 kHz, {args.robot} in MuJoCo, {args.seconds:.0f} s each | ticks | period error p50 / p99 / max µs "
          f"| cost p50 / p99 µs | cost measures |")
    print("|---|---:|---:|---:|---|")
    print(f"| our RT loop (hri_core.rt.RtLoop) | {rt['ticks']} | {rt['err_p50']:.1f} / {rt['err_p99']:.1f} / "
          f"{rt['err_max']:.0f} | {rt['cost_p50']:.1f} / {rt['cost_p99']:.1f} | read + tick + write (MuJoCo step) |")
    print(f"| controller manager + InteractionController | {cmr['ticks']} | {cmr['err_p50']:.0f} / "
          f"{cmr['err_p99']:.0f} / {cmr['err_max']:.0f} | {cmr['cost_p50']:.0f} / {cmr['cost_p99']:.0f} | "
          f"update() (model terms + tick); 1 µs bins |")
    print(f"\n{rt['internal']}")
    if cmr["rt"]:
        print(f"controller manager: {cmr['rt']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
