"""``hri teleop-keyboard``: the FR3 keyboard teleop design's keyboard teleop of the simulated FR3 in this terminal.

No middleware needed: the launch file's nodes for ``input:=keyboard`` (``keyboard_teleop``,
``arm_teleop`` with joint output on its MuJoCo arm, ``stop_supervisor``) composed in this process
on the in-process context, stepped by the runtime's lockstep runner one base period at a time and
paced to real time; ``keyboard_teleop`` reads this terminal and publishes its absolute target at
10 Hz on ``/ee_command`` into the same multi-rate chain (planner 50 Hz, IK 100 Hz, MuJoCo). Keys
as in ``core/keyboard.py`` (H for help, ESC quits). ``--keys "up,up,pageup"`` replays keys
headless instead (one per publish period once the keyboard has the EE pose, no pacing) and prints
where the end effector went.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Optional

import numpy as np

from hri_runtime.errors import add_robot_argument


def run_keyboard(cfg: dict, keys: Optional[list] = None, seconds: float = 60.0, echo=print) -> dict:
    """The keyboard stack for ``seconds`` of simulated time; ``keys`` (None: this terminal) are
    replayed one per publish period. Returns the EE start, end and target (m), the teleop mode
    and the simulated time."""
    import copy

    from hri_arm_teleop.core.loop import LoopParams
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_arm_teleop.nodes.keyboard_node import KeyboardTeleopNode
    from hri_runtime.lockstep import Lockstep
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    interactive = keys is None
    if interactive and not sys.stdin.isatty():
        raise RuntimeError("stdin is not a terminal: use --keys to replay keys headless")
    cfg = copy.deepcopy(cfg)
    cfg["teleop"].update(output="joint", input="keyboard")
    cfg["teleop"]["robot"]["interface"] = "mujoco"
    ls = Lockstep.inproc(LoopParams.from_tree(cfg).base_period_s)
    StopSupervisorNode(cfg=cfg, context=ls.context)
    arm = ArmTeleopNode(cfg=cfg, context=ls.context)
    kb = KeyboardTeleopNode(cfg=cfg, use_terminal=interactive, context=ls.context)
    kb.say = lambda text: (kb.lines.append(text), echo(text))
    start = arm.robot.sim.ee_pose()[:3, 3].copy()
    queue = list(keys or [])
    pub_period = 1.0 / kb.params.publish_rate_hz
    next_key, wall0 = [0.0], time.perf_counter()

    def replay(now: float) -> None:     # one key per publish period once the keyboard is ready
        if queue and kb.core is not None and now + 1e-9 >= next_key[0]:
            kb.pending.append(queue.pop(0))
            next_key[0] = now + pub_period

    if interactive:   # paced to real time
        ls.after(lambda now: time.sleep(max(0.0, now - (time.perf_counter() - wall0))))
    try:
        while ls.now_s() < seconds and not kb.quit:
            ls.step(replay)
    except KeyboardInterrupt:           # ESC in the terminal: keyboard_teleop ends
        pass
    finally:
        kb.restore_terminal()
        end = arm.robot.sim.ee_pose()[:3, 3].copy()
        target = kb.core.target[:3, 3].copy() if kb.core is not None else start
        mode, simulated = arm.pipe.mode, ls.now_s()
        ls.close()
    return {"start_m": start, "end_m": end, "target_m": target, "mode": mode, "simulated_s": simulated}


def main(argv: Optional[list] = None) -> int:
    from hri_runtime.cli.main import SUMMARIES
    from hri_runtime.config.tree import ConfigError, load_robot_config

    ap = argparse.ArgumentParser(prog="hri teleop-keyboard", description=SUMMARIES["teleop-keyboard"])
    add_robot_argument(ap, "fr3")
    ap.add_argument("--keys", default=None, help="comma-separated keys to replay headless (e.g. up,up,pageup)")
    ap.add_argument("--seconds", type=float, default=None, help="simulated time (default 600 live, keys + 2 s replayed)")
    args = ap.parse_args(argv)
    try:
        import hri_core.se3  # noqa: F401
    except ImportError as exc:
        print(f"hri teleop-keyboard: the C++ core is not installed ({exc})", file=sys.stderr)
        return 2
    try:
        cfg = load_robot_config(args.robot)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    keys = None if args.keys is None else [k.strip() for k in args.keys.split(",") if k.strip()]
    from hri_arm_teleop.core.keyboard import KeyboardParams

    rate = KeyboardParams.from_tree(cfg).publish_rate_hz
    seconds = args.seconds or (600.0 if keys is None else len(keys) / rate + 2.0)
    try:
        r = run_keyboard(cfg, keys, seconds)
    except RuntimeError as exc:
        print(f"hri teleop-keyboard: {exc}", file=sys.stderr)
        return 2
    d = (r["end_m"] - r["start_m"]) * 1e3
    print(f"end effector moved {d[0]:+.1f} {d[1]:+.1f} {d[2]:+.1f} mm (x y z) in {r['simulated_s']:.1f} s; "
          f"error to target {np.linalg.norm(r['end_m'] - r['target_m']) * 1e3:.2f} mm; mode {r['mode']}")
    return 0
