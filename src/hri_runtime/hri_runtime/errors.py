"""One-line errors at every command-line boundary (the ``hri`` dispatcher and ``run_node``).

A bad argument, a config error, a busy port or a missing file ends a command or a node with
ONE line on stderr and exit code 2 (``EXIT_USAGE``), never a traceback or a hang. The
classes counted as such input errors are :data:`INPUT_ERRORS` (plus the library-specific ones
that :func:`is_input_error` recognises by name, so this module imports nothing heavy); any other
exception is a bug and keeps its traceback.

Commands raise :class:`UsageError` (or ``argparse``'s ``parser.error``) for a bad argument;
:func:`one_line_argparse` makes every ``argparse`` parser in the process report its error in one
line (``prog: error: message (see prog --help)``) instead of the usage block plus the message.
"""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn

EXIT_USAGE = 2
EXIT_FAILURE = 1   # a node that could not start for another reason (a bug: traceback logged)

#: exceptions that mean "the input (arguments, files, environment, ports) is bad"
INPUT_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError)

#: further input-error classes known by name (ConfigError, TransportUnavailableError, YAML/MCAP
#: reader errors) so this module needs no import of their packages
INPUT_ERROR_NAMES = frozenset({"ConfigError", "TransportUnavailableError", "UnknownTypeError", "YAMLError",
                               "McapError", "InvalidMagic", "EndOfFile", "RecordLengthLimitExceeded",
                               "UnsupportedCompressionError"})

MAX_LINE_CHARS = 400


class UsageError(ValueError):
    """A bad argument of a command or node; the message is the whole one-line explanation."""


def is_input_error(exc: BaseException) -> bool:
    """An input error, or an error raised *from* one (``raise RuntimeError("cannot listen ...")
    from oserror``: a node explaining a busy port in its own words)."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, (RecursionError, MemoryError)):
            return False  # a crash of ours, not a verdict on the input
        if isinstance(exc, INPUT_ERRORS) or any(cls.__name__ in INPUT_ERROR_NAMES for cls in type(exc).__mro__):
            return True
        exc, seen = exc.__cause__, seen + 1
    return False


def one_line(exc: BaseException | str, limit: int = MAX_LINE_CHARS) -> str:
    """The message of ``exc`` on one line (newlines folded, long messages cut)."""
    if isinstance(exc, BaseException):
        text = str(exc) if not isinstance(exc, KeyError) or not exc.args else str(exc.args[0])
        if isinstance(exc, OSError) and exc.strerror and exc.filename is None and not text:
            text = exc.strerror
        text = text or type(exc).__name__
    else:
        text = exc
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def print_error(prefix: str, exc: BaseException | str) -> int:
    """Print ``prefix: error: <one line>`` to stderr; returns :data:`EXIT_USAGE`."""
    print(f"{prefix}: error: {one_line(exc)}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def exit_process(rc: int) -> NoReturn:
    """End the process with ``rc`` now, even when a thread the failed command or node started
    (a web server, a transport session) would keep the interpreter alive: failing never hangs."""
    import os
    import threading

    sys.stdout.flush()
    sys.stderr.flush()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        os._exit(rc)
    raise SystemExit(rc)


def _argparse_error(self: argparse.ArgumentParser, message: str) -> NoReturn:
    self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def one_line_argparse() -> None:
    """Every ``argparse`` parser of this process reports a bad argument in one line, exit 2."""
    argparse.ArgumentParser.error = _argparse_error  # type: ignore[method-assign]


# ---- argparse value types shared by the commands (each refuses with the reason)

def port(text: str) -> int:
    """A UDP/TCP port 0..65535 (0: let the OS choose / take it from the config)."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r} (an integer 0..65535)") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {value} (an integer 0..65535)")
    return value


def _finite(text: str, low: float, inclusive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not ((value >= low if inclusive else value > low) and value != float("inf")):
        raise argparse.ArgumentTypeError(f"invalid value {text} (a finite number {'>=' if inclusive else '>'} {low:g})")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    return _finite(text, 0.0, inclusive=False)


def nonnegative_float(text: str) -> float:
    """A finite number >= 0."""
    return _finite(text, 0.0, inclusive=True)


def probability(text: str) -> float:
    """A number in [0, 1]."""
    value = _finite(text, 0.0, inclusive=True)
    if value > 1.0:
        raise argparse.ArgumentTypeError(f"invalid value {text} (a probability 0..1)")
    return value


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"invalid value {value} (an integer >= {low})")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _int_at_least(text, 1)


def nonnegative_int(text: str) -> int:
    """An integer >= 0."""
    return _int_at_least(text, 0)


def robot(text: str) -> str:
    """A robot of the config tree (``config/robots/<robot>.yaml``)."""
    from hri_runtime.config.tree import list_robots

    names = list_robots()
    if text not in names:
        raise argparse.ArgumentTypeError(f"unknown robot {text!r} (one of: {', '.join(names)})")
    return text


def namespace(text: str) -> str:
    """A ROS namespace (``left`` or ``/left``), returned absolute (docs/ros2-interop.md "Namespaces")."""
    from hri_runtime.names import validate_namespace

    try:
        return validate_namespace(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_robot_argument(parser: argparse.ArgumentParser, default: str | None, *,
                       default_text: str | None = None) -> None:
    """``--robot NAME``; the help lists the robots of the config tree (none listed when the tree
    cannot be found: the command then fails on its config in one line). ``default_text``: what
    the help says about the default (default: its name)."""
    parser.add_argument("--robot", default=default, type=robot, metavar="ROBOT",
                        help=f"robot config, {robots_help()} (default: {default_text or default})")


def robots_help() -> str:
    """'one of: fr3, tino, ...' (the robots of the config tree) for a command's help; the help
    still works where no config tree is found."""
    from hri_runtime.config.tree import list_robots

    try:
        return "one of: " + (", ".join(list_robots()) or "none found")
    except Exception:  # noqa: BLE001  (no config tree: --help still works)
        return "one of the config tree's robots (config tree not found)"
