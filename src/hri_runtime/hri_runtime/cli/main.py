"""The ``hri`` command: one entry point, subcommands contributed by every package.

A package adds a subcommand through the entry-point group ``hri.commands`` in its setup.py
(``'vr-emulate = hri_pulse.emulator:main'``); the function takes ``argv: list[str]`` and
returns an exit code. Subcommands are imported only when called, so a broken optional
dependency of one package never breaks ``hri --help`` or another subcommand.

Errors: a bad argument, config error, busy port or missing file of ANY subcommand is one line
on stderr and exit code 2 (``hri_runtime.errors``; ``HRI_TRACEBACK=1`` shows the traceback);
a failed command ends its process even if a thread it started is still running.
"""
from __future__ import annotations

import os
import sys

BUILTIN = {
    "config": "hri_runtime.cli.config:main",
}

# One line of purpose per subcommand for `hri --help` (the subcommands are not imported to list
# them); a package that adds a command adds its line here (a test checks that none is missing).
SUMMARIES = {
    "arm-emulate": "scripted VR operator: controller-pose packets over UDP to arm_teleop",
    "atomic": "Tino's atomic leg/base controller: demo, scripted runs",
    "bag": "inspect a recording (bag info: duration, counts, rates, QoS)",
    "config": "show, check, list and document the robot configuration tree",
    "console": "operator console (web page): SAFE STOP, link health, modes, gains, PID tuning",
    "foxglove": "bridge topics to Foxglove Studio",
    "interface": "list and show message and service definitions",
    "launch": "run a ROS 2 YAML launch file without ROS (nodes, router, respawn)",
    "node": "list nodes and show one node's topics and services",
    "param": "get, set, list, describe, dump and load node parameters",
    "pid": "PID tuning of a robot's joints (same as tune)",
    "play": "replay an MCAP recording onto its topics",
    "record": "record topics to MCAP (rosbag2 layout)",
    "router": "run a Zenoh router for the stacks of this machine",
    "run": "run one executable of a package (ros2 run without ROS)",
    "service": "list services, show their types, call one",
    "sim": "step the MuJoCo models (arms, Tino) from the command line",
    "teleop-demo": "the main scenario: VR operator, clutch teleop, 1 kHz interaction control, push",
    "teleop-keyboard": "drive the simulated arm's end effector from this terminal",
    "topic": "list, inspect, echo, publish and measure topics",
    "tune": "tune the PID gains of a robot's joints (relay test, heuristics, optimiser)",
    "vr-emulate": "scripted Unity headset: pulse packets over UDP (loss, flood, restart scenarios)",
}


def _commands() -> dict[str, str]:
    from importlib.metadata import entry_points

    found = dict(BUILTIN)
    for ep in entry_points(group="hri.commands"):
        found.setdefault(ep.name, ep.value)
    return found


def _usage(commands: dict[str, str]) -> str:
    lines = ["usage: hri <command> [args...]", "", "commands:"]
    for name in sorted(commands):
        lines.append(f"  {name:<16}{SUMMARIES.get(name, '')}")
    lines.append("")
    lines.append("`hri <command> --help` for the options of one command.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    as_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    from hri_runtime import signals

    # Ctrl-C while the command is found and loaded (entry points, its imports): a clean stop,
    # nothing started (hri_runtime.signals); the command's own run handles it as it wants
    with signals.deferred() as got:
        rc, func = _load(argv)
    if got:
        return 0
    if func is not None:
        rc = _call(argv[0], func, argv[1:])
    if as_process and rc != 0:
        from hri_runtime.errors import exit_process

        exit_process(rc)
    return rc


def _load(argv: list[str]):
    """(exit code, None) when there is nothing to run, else (0, the subcommand's function)."""
    import importlib

    from hri_runtime import errors

    commands = _commands()
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage(commands))
        return 0, None
    name = argv[0]
    target = commands.get(name)
    if target is None:
        import difflib

        close = difflib.get_close_matches(name, commands, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        print(f"hri: error: unknown command '{name}'{hint} (see hri --help)", file=sys.stderr)
        return 2, None
    errors.one_line_argparse()
    module_name, func_name = target.split(":")
    try:
        return 0, getattr(importlib.import_module(module_name), func_name)
    except Exception as exc:  # noqa: BLE001
        if not errors.is_input_error(exc) or os.environ.get("HRI_TRACEBACK"):
            raise
        return errors.print_error(f"hri {name}", exc), None


def _call(name: str, func, rest: list[str]) -> int:
    """Run one subcommand; a bad argument, config error, busy port or missing file becomes one
    line on stderr and exit code 2 (hri_runtime.errors), whatever the subcommand."""
    from hri_runtime import errors

    try:
        return int(func(rest) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `hri config show fr3 | head`
        sys.stderr.close()
        return 0
    except Exception as exc:  # noqa: BLE001  (the one boundary of every subcommand)
        if not errors.is_input_error(exc) or os.environ.get("HRI_TRACEBACK"):
            raise   # a bug (or HRI_TRACEBACK=1 asks for the full story): the traceback
        return errors.print_error(f"hri {name}", exc)


if __name__ == "__main__":
    sys.exit(main())
