"""The ``hri`` command: one entry point, subcommands contributed by every package.

A package adds a subcommand through the entry-point group ``hri.commands`` in its setup.py
(``'vr-emulate = hri_pulse.emulator:main'``); the function takes ``argv: list[str]`` and
returns an exit code. Subcommands are imported only when called, so a broken optional
dependency of one package never breaks ``hri --help`` or another subcommand.
"""
from __future__ import annotations

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
        print(f"hri: unknown command '{name}'{hint}\n\n{_usage(commands)}", file=sys.stderr)
        return 2
    module_name, func_name = target.split(":")
    import importlib

    func = getattr(importlib.import_module(module_name), func_name)
    try:
        return int(func(rest) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `hri config show fr3 | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
