"""``hri launch`` (``ros2 launch`` without ROS: a YAML launch file, arguments as name:=value)
and ``hri run`` (``ros2 run``)."""
from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Optional

from hri_runtime import errors
from hri_runtime.signals import StopFlag
from hri_runtime.launch.launch_description import LaunchError
from hri_runtime.launch.frontend import parse_launch_file
from hri_runtime.launch.launch_service import LaunchParams, Launcher
from hri_runtime.packages import find_executable

__all__ = ["main", "run_main"]


def _split_cli(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    rest, args = [], {}
    for a in argv:
        if ":=" in a and not a.startswith("-"):
            k, v = a.split(":=", 1)
            args[k] = v
        else:
            rest.append(a)
    return rest, args


def main(argv: Optional[list[str]] = None) -> int:
    # SIGINT/SIGTERM are taken over first: a Ctrl-C while the file is parsed or the launcher set
    # up ends the launch cleanly too (nothing started yet, exit 0)
    stop = StopFlag()        # set by the handler: no lock (hri_runtime.signals.StopFlag)

    def on_signal(signum, _frame):
        stop.set()

    old = ({s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
           if threading.current_thread() is threading.main_thread() else {})
    try:
        return _main(argv, stop)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _main(argv: Optional[list[str]], stop: StopFlag) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest, largs = _split_cli(argv)
    ap = argparse.ArgumentParser(prog="hri launch", description="Run a ROS 2 YAML launch file without ROS "
                                 "(arguments as name:=value).")
    ap.add_argument("file", nargs="+", help="launch file(s); with --check several may be given")
    ap.add_argument("--check", action="store_true", help="parse and resolve only; print the processes")
    ap.add_argument("--print", dest="show", action="store_true", help="print the command lines, then run")
    ap.add_argument("--transport", choices=["auto", "rclpy", "zenoh", "inproc"],
                    help="overrides HRI_TRANSPORT for the nodes")
    ap.add_argument("--router", default="auto",
                    help="zenoh router endpoint to use (watched), started in-process only if nothing "
                         "answers there (default: runtime.zenoh.router_listen_endpoints), or 'none'")
    a = ap.parse_args(rest)
    if a.check:
        bad = 0
        for f in a.file:
            try:
                d = parse_launch_file(f, largs)
            except LaunchError as e:
                print(f"FAIL {f}: {errors.one_line(e)}", file=sys.stderr)
                bad += 1
                continue
            print(f"OK   {f}: {len(d.nodes)} process(es); args {d.args}")
            for n in d.nodes:
                print(f"       {n.name}: {shlex.join(n.cmd)}" + ("  [respawn]" if n.respawn else ""))
        return errors.EXIT_USAGE if bad else 0
    if len(a.file) != 1:
        print("error: give one launch file (several only with --check)", file=sys.stderr)
        return 2
    # as ros2 launch's launch configurations of the same names: the shutdown escalation times
    # (runtime.launch.sigterm_timeout_s / sigkill_timeout_s otherwise)
    try:
        params = dataclasses.replace(LaunchParams.defaults(), **{
            f"{k}_s": float(largs.pop(k)) for k in ("sigterm_timeout", "sigkill_timeout") if k in largs})
    except Exception as e:  # noqa: BLE001  (not a number, or out of the declared range)
        if not errors.is_input_error(e):
            raise
        print(f"hri launch: error: {errors.one_line(e)}", file=sys.stderr)
        return 2
    try:
        desc = parse_launch_file(a.file[0], largs)
    except LaunchError as e:
        print(f"hri launch: error: {errors.one_line(e)}", file=sys.stderr)
        return 2
    if a.transport:
        os.environ["HRI_TRANSPORT"] = a.transport
    try:
        launcher = Launcher(desc, params=params, router=a.router)
    except Exception as e:  # noqa: BLE001  (bad HRI_TRANSPORT)
        print(f"hri launch: error: {errors.one_line(e)}", file=sys.stderr)
        return 2
    if a.show:
        for n in desc.nodes:
            print(f"{n.name}: {shlex.join(n.cmd)}")
    if stop.is_set():
        return 0
    try:
        try:
            launcher.start()
        except Exception as e:  # noqa: BLE001  (router bind failure)
            print(f"hri launch: error: {errors.one_line(e)}", file=sys.stderr)
            launcher.shutdown()
            return 2
        while not stop.is_set() and launcher.running():
            stop.wait(launcher.params.poll_period_s)
        if launcher.failed is not None:
            launcher.shutdown()
            print(f"hri launch: error: {errors.one_line(launcher.failure_line())}", file=sys.stderr, flush=True)
            return errors.EXIT_USAGE
        if stop.is_set():
            launcher.shutdown()
        else:
            launcher._say("all processes have exited")
        return launcher.exit_code()
    finally:
        if launcher.router_session is not None:
            launcher.router_session.close()


def run_main(argv: Optional[list[str]] = None) -> int:
    """``hri run <pkg> <exec> [args...]``: ``ros2 run`` without ROS (same executable lookup as
    launch; the process replaces this one, so signals and the exit code are the node's)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        asked = argv[:1] in (["-h"], ["--help"])
        usage = "usage: hri run <pkg> <exec> [args...] [--ros-args ...]"
        if asked:
            usage += ("\n\nRun one executable of a package (ros2 run without ROS), e.g. "
                      "hri run hri_pulse vr_interface_node --ros-args -p robot:=tino")
        print(usage, file=sys.stdout if asked else sys.stderr)
        return 0 if asked else 2
    pkg, exe, rest = argv[0], argv[1], argv[2:]
    path = find_executable(pkg, exe)
    if path is None:
        print(f"error: executable '{exe}' of package '{pkg}' not found "
              f"(lib/{pkg}/{exe}, {Path(sys.executable).parent}, PATH)", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path, *rest])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
