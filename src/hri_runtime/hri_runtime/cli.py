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
from importlib.metadata import entry_points

BUILTIN = {
    "config": "hri_runtime.config_cli:main",
}


def _commands() -> dict[str, str]:
    found = dict(BUILTIN)
    for ep in entry_points(group="hri.commands"):
        found.setdefault(ep.name, ep.value)
    return found


def _usage(commands: dict[str, str]) -> str:
    lines = ["usage: hri <command> [args...]", "", "commands:"]
    for name in sorted(commands):
        lines.append(f"  {name:<14} ({commands[name].split(':')[0]})")
    lines.append("")
    lines.append("`hri <command> --help` for the options of one command.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    as_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = _commands()
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage(commands))
        return 0
    name, rest = argv[0], argv[1:]
    target = commands.get(name)
    if target is None:
        import difflib

        close = difflib.get_close_matches(name, commands, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        print(f"hri: error: unknown command '{name}'{hint} (see hri --help)", file=sys.stderr)
        return 2
    rc = _call(name, target, rest)
    if as_process and rc != 0:
        from hri_runtime.errors import exit_process

        exit_process(rc)
    return rc


def _call(name: str, target: str, rest: list[str]) -> int:
    """Run one subcommand; a bad argument, config error, busy port or missing file becomes one
    line on stderr and exit code 2 (hri_runtime.errors), whatever the subcommand."""
    import importlib

    from hri_runtime import errors

    errors.one_line_argparse()
    module_name, func_name = target.split(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
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
