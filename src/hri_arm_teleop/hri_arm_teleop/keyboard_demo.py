"""``hri teleop-keyboard``: the FR3 keyboard teleop design's keyboard teleop of the simulated FR3 in this terminal.

No middleware needed: the keyboard core publishes its absolute target at 10 Hz into the same
multi-rate chain the ``/ee_command`` topic feeds (planner 50 Hz, IK 100 Hz, MuJoCo), paced to
real time. Keys as in ``core/keyboard.py`` (H for help, ESC quits). ``--keys "up,up,pageup"``
replays keys headless instead (one per publish period, lockstep, no pacing) and prints where the
end effector went.
"""
from __future__ import annotations

import argparse
import os
import select
import sys
import time
from typing import Optional

import numpy as np

from hri_runtime.errors import add_robot_argument


def run_keyboard(cfg: dict, keys: Optional[list] = None, seconds: float = 60.0, echo=print) -> dict:
    from hri_arm_teleop.core.keyboard import HELP, KeyboardParams, KeyboardTeleop, parse_keys
    from hri_arm_teleop.lockstep import build_sim_pipeline, sim_lockstep

    pipe, robot, clock = build_sim_pipeline(cfg)
    ls = sim_lockstep(pipe, robot)
    kb = KeyboardTeleop(KeyboardParams.from_tree(cfg), robot.sim.ee_pose())
    pub_period = 1.0 / kb.params.publish_rate_hz
    interactive = keys is None
    tty = None
    if interactive:
        if not sys.stdin.isatty():
            raise RuntimeError("stdin is not a terminal: use --keys to replay keys headless")
        import termios
        import tty as _tty

        fd = sys.stdin.fileno()
        tty = (fd, termios.tcgetattr(fd))
        _tty.setcbreak(fd)
        echo(HELP)
    queue = list(keys or [])
    next_pub, wall0, quit_ = [0.0], time.perf_counter(), [False]
    start = robot.sim.ee_pose()[:3, 3].copy()

    def keyboard(now: float) -> None:
        if now + 1e-9 < next_pub[0]:
            return
        pressed = []
        if interactive:
            while select.select([tty[0]], [], [], 0.0)[0]:
                pressed += parse_keys(os.read(tty[0], 64))
        elif queue:
            pressed.append(queue.pop(0))
        for k in pressed:
            if k == "esc":
                quit_[0] = True
            else:
                text = kb.handle(k)
                if text:
                    echo(text)
        pipe.submit_ee_command(kb.target, source_stamp=now)
        next_pub[0] += pub_period

    if interactive:   # paced to real time
        ls.after(lambda now: time.sleep(max(0.0, now - (time.perf_counter() - wall0))))
    try:
        while clock() < seconds and not quit_[0]:
            ls.step(keyboard)
    finally:
        if tty is not None:
            import termios

            termios.tcsetattr(tty[0], termios.TCSADRAIN, tty[1])
    end = robot.sim.ee_pose()[:3, 3]
    return {"start_m": start, "end_m": end, "target_m": kb.target[:3, 3].copy(),
            "mode": pipe.mode, "simulated_s": clock()}


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
