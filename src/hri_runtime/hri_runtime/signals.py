"""Ctrl-C during start-up: a clean stop, never a ``KeyboardInterrupt`` traceback (as ``rclpy.signals``).

A node executable spends its first second importing (numpy, MuJoCo, rclpy, ...). Python's
default SIGINT handler raises ``KeyboardInterrupt`` wherever that import happens to be, so a
Ctrl-C then (a terminal's, or the one a launcher forwards) printed a traceback. This module
imports nothing but the standard library's ``signal``, so it can take SIGINT/SIGTERM over before
anything heavy is imported:

* ``node_main("pkg.nodes.module")`` is what a node's console script calls (each package's
  ``nodes/__init__.py`` defines its executables with it): it catches the signals, then imports
  the node module and runs its ``main``; a signal before the node exists only marks the stop,
  and ``run_node`` ends the process with exit code 0 without building the node.
* ``deferred()`` holds SIGINT/SIGTERM off while a command module is imported (``hri <command>``).
* ``StopFlag``: what a signal handler sets. A handler runs in the main thread between two
  bytecodes, so it must take no lock that the main thread may hold: ``threading.Event.set()``
  takes the lock that ``Event.wait()`` re-acquires on its way out, and a handler landing there
  waits for itself forever (``hri launch`` after a SIGINT, seen once in ``make ros2-ci``).

A parent may start the process with SIGINT/SIGTERM blocked: they stay pending until ``catch()``
or ``deferred()`` has a handler in place, then arrive there (a signal at any moment, from the
first instruction on). A process started with SIGINT ignored (``hri launch`` starts its nodes so: the gap between
``exec`` and this module is the interpreter's own start-up, where no handler can run) takes SIGINT
from the moment ``catch()`` runs; the launcher repeats its SIGINT until the node has caught it
(``launch_service``).
"""
from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from typing import Optional

__all__ = ["catch", "requested", "deferred", "node_main", "sigint_ignored", "StopFlag"]

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_requested: list[int] = []


class StopFlag:
    """A stop request that a signal handler may set (the Event API a stop needs: ``set``,
    ``is_set``, ``wait``): ``set()`` only stores True (no lock, see the module docstring), and
    ``wait()`` polls every ``POLL_S``, which bounds how late a waiter sees it."""

    __slots__ = ("_set",)
    POLL_S = 0.02

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Until set (True) or ``timeout`` seconds (False); None: no bound."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self._set:
            rem = None if end is None else end - time.monotonic()
            if rem is not None and rem <= 0:
                return False
            time.sleep(self.POLL_S if rem is None else min(self.POLL_S, rem))
        return True


def _mark(signum, _frame) -> None:
    _requested.append(signum)


def catch() -> None:
    """From now on SIGINT/SIGTERM only mark a stop request (``requested()``); main thread only."""
    import threading

    if threading.current_thread() is threading.main_thread():
        for s in _STOP_SIGNALS:
            signal.signal(s, _mark)
        _unblock()


def _unblock() -> None:
    # a parent may start us with SIGINT/SIGTERM blocked (held pending until we can take them)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def requested() -> int:
    """The first SIGINT/SIGTERM received since ``catch()``, or 0."""
    return _requested[0] if _requested else 0


@contextmanager
def deferred():
    """SIGINT/SIGTERM during the block are marked, not raised; the old handlers come back after.
    Yields a list that holds the signals received (empty: none)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda n, _f: got.append(n)) for s in _STOP_SIGNALS}
    _unblock()
    try:
        yield got
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def node_main(module: str, func: str = "main"):
    """The console-script entry of a node executable: ``module.func()`` with Ctrl-C caught from
    the first line of our code on (see the module docstring)."""

    def main() -> int:
        catch()
        import importlib

        target = getattr(importlib.import_module(module), func)
        if requested():
            return 0     # stopped while loading: nothing was started
        return target()

    main.__qualname__ = main.__name__ = f"node_main[{module}]"
    return main


def sigint_ignored(pid: int) -> bool:
    """Whether process ``pid`` still ignores SIGINT (Linux ``/proc``; False when it cannot be
    read): a SIGINT sent to it now would be lost."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigIgn:"):
                    return bool((int(line.split()[1], 16) >> (signal.SIGINT - 1)) & 1)
    except (OSError, ValueError):
        pass
    return False
