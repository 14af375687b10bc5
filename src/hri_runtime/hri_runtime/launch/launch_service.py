"""``Launcher``: starts and supervises the processes of a ``LaunchDescription`` (as
``launch.LaunchService``), and the Zenoh router they use.

Supervision: children run in their own session with PDEATHSIG=SIGTERM (they die with the
launcher); their output is prefixed ``[name]``; a node that exits is reported with its exit code
and its last log lines; ``respawn`` restarts it after ``respawn_delay`` (default
``runtime.launch.respawn_delay_s``); Ctrl-C / SIGTERM: SIGINT to every child, SIGTERM after
``runtime.launch.sigterm_timeout_s``, SIGKILL after ``runtime.launch.sigkill_timeout_s``.
Transport: ``HRI_TRANSPORT`` is resolved once and passed to every child; for zenoh the launcher
uses the router answering on ``runtime.zenoh.router_listen_endpoints`` (``hri router``,
``rmw_zenohd``) and watches it (an ERROR every ``runtime.launch.router_check_period_s`` while it is
gone), or starts one in-process (stopping with this launch) when none answers.
"""
from __future__ import annotations

import ctypes
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Optional

from hri_runtime import errors, signals
from hri_runtime.launch.launch_description import LaunchDescription, NodeSpec
from hri_runtime.parameters_gen import RuntimeLaunchParams

__all__ = ["Launcher", "LaunchParams"]

log = logging.getLogger("hri.launch")
EVENTS_KEPT = 1000   # lines kept in ``Launcher.events`` (the last ones)


LaunchParams = RuntimeLaunchParams   # declared in hri_runtime's parameters.yaml


def _pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG: die with the launcher
    except Exception:  # noqa: BLE001
        pass


def _node_child() -> None:
    """A ROS node starts with SIGINT ignored until it installs its own handler (ours:
    hri_runtime.signals, first thing; rclpy's and rclcpp's: at init), so a Ctrl-C in the
    interpreter's start-up is never a KeyboardInterrupt traceback; shutdown() delivers the
    SIGINT once the node has a handler."""
    _pdeathsig()
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except Exception:  # noqa: BLE001
        pass


class _Proc:
    def __init__(self, spec: NodeSpec, tail: int):
        self.spec = spec
        self.popen: Optional[subprocess.Popen] = None
        self.tail: deque[str] = deque(maxlen=tail)
        self.starts = 0
        self.exit_codes: list[int] = []
        self.state = "pending"      # pending | running | exited | respawning
        self.respawn_at: Optional[float] = None
        self.readers: list[threading.Thread] = []


class Launcher:
    """Start and supervise the processes of a LaunchDescription.

    start(); wait(timeout_s) -> True when every process ended; shutdown() stops everything
    (SIGINT, then SIGTERM, then SIGKILL); events are printed to ``out`` and kept in ``events``."""

    def __init__(self, desc: LaunchDescription, params: Optional[LaunchParams] = None,
                 transport: Optional[str] = None, router: Optional[str] = "auto",
                 out=None):
        self.desc = desc
        self.params = params or LaunchParams.defaults()
        self.out = out or sys.stdout
        self.procs = [_Proc(s, self.params.log_tail_lines) for s in desc.nodes]
        self.events: deque[str] = deque(maxlen=EVENTS_KEPT)   # the last lines said (a launch runs for hours)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.router_session = None
        self.router_endpoint: Optional[str] = None
        self.router_lost = 0          # ERROR lines about a router gone (watchdog)
        from hri_runtime.context import transport_name

        self.transport = transport or transport_name()
        self.router_mode = router
        self.failed: Optional[_Proc] = None   # a node that exited with code 2 (failed to start)

    # ---- output
    def _say(self, text: str) -> None:
        line = f"[hri launch] {text}"
        with self._lock:
            self.events.append(text)
            print(line, file=self.out, flush=True)

    def status_line(self) -> str:
        parts = []
        for p in self.procs:
            s = p.state
            if p.state == "running" and p.popen is not None:
                s = f"running pid {p.popen.pid}"
            elif p.state == "exited" and p.exit_codes:
                s = f"exited {p.exit_codes[-1]}"
            parts.append(f"{p.spec.name}: {s}" + (f" (start {p.starts})" if p.starts > 1 else ""))
        return " | ".join(parts)

    # ---- router
    def _ensure_router(self) -> None:
        if self.transport != "zenoh" or self.router_mode in (None, "none", "off"):
            return
        try:
            from hri_runtime.impl import zenoh_backend as zb
        except ModuleNotFoundError:
            self._say("zenoh backend not available: no router started")
            return
        endpoints = [self.router_mode] if self.router_mode not in ("auto", None) else None
        zp = zb.ZenohParams.defaults()
        eps = endpoints or list(zp.router_listen_endpoints)
        self.router_endpoint = eps[0]
        self._router_check_period_s = self.params.router_check_period_s
        if zb.router_answers(eps[0], self.params.router_probe_timeout_s):
            self._say(f"zenoh router already answers on {eps[0]}: using it (watching it every "
                      f"{self._router_check_period_s:g} s)")
            self._router_watch = threading.Thread(target=self._watch_router, args=(eps[0], zb),
                                                  name="router-watch", daemon=True)
            self._router_watch.start()
            return
        self.router_session = zb.start_router(eps, zp)
        self._say(f"zenoh router started in-process on {', '.join(eps)} (it stops with this launch; "
                  f"`hri router` runs one of its own)")

    def _watch_router(self, endpoint: str, zb) -> None:
        """The external router this launch's nodes depend on: an ERROR (log and output) every
        check period while it does not answer, one line when it is back."""
        lost_since: Optional[float] = None
        while not self._stopping.wait(self._router_check_period_s):
            ok = zb.router_answers(endpoint, self.params.router_probe_timeout_s)
            if ok and lost_since is not None:
                self._say(f"zenoh router on {endpoint} is back after {time.monotonic() - lost_since:.1f} s")
                log.warning("zenoh router on %s is back", endpoint)
                lost_since = None
            elif not ok:
                lost_since = lost_since if lost_since is not None else time.monotonic()
                text = (f"ERROR: zenoh router on {endpoint} is GONE for {time.monotonic() - lost_since:.1f} s: "
                        f"the nodes of this launch cannot talk to each other; restart it (`hri router`)")
                self.router_lost += 1
                self._say(text)
                log.error(text)

    # ---- processes
    def _env(self, spec: NodeSpec) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.desc.env)
        env.update(spec.env)
        env["HRI_TRANSPORT"] = self.transport
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self.router_endpoint and "HRI_ZENOH_CONNECT" not in env:
            env["HRI_ZENOH_CONNECT"] = f"[{self.router_endpoint}]"
        return env

    def _spawn(self, p: _Proc) -> None:
        try:
            p.popen = subprocess.Popen(
                p.spec.cmd, env=self._env(p.spec), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_node_child if p.spec.pkg else _pdeathsig)
        except OSError as e:
            p.state = "exited"
            p.exit_codes.append(-1)
            self._say(f"{p.spec.name}: cannot start {p.spec.cmd[0]}: {e}")
            return
        p.starts += 1
        p.state = "running"
        t = threading.Thread(target=self._pump, args=(p, p.popen), daemon=True)
        t.start()
        p.readers.append(t)
        self._say(f"started {p.spec.name} (pid {p.popen.pid}): {shlex.join(p.spec.cmd)}")

    def _pump(self, p: _Proc, popen: subprocess.Popen) -> None:
        assert popen.stdout is not None
        for raw in iter(popen.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            p.tail.append(line)
            if p.spec.output != "log":
                with self._lock:
                    print(f"[{p.spec.name}] {line}", file=self.out, flush=True)
        popen.stdout.close()

    def start(self) -> None:
        self._ensure_router()
        if self.transport == "inproc" and len(self.procs) > 1:
            self._say("HRI_TRANSPORT=inproc: nodes in separate processes cannot talk to each other")
        for p in self.procs:
            self._spawn(p)
        self._say(self.status_line())
        self._thread = threading.Thread(target=self._supervise, name="hri-launch", daemon=True)
        self._thread.start()

    def _supervise(self) -> None:
        while True:
            changed = False
            for p in self.procs:
                if p.state == "running" and p.popen is not None and p.popen.poll() is not None:
                    rc = p.popen.returncode
                    for t in p.readers:
                        t.join(timeout=1.0)
                    p.exit_codes.append(rc)
                    changed = True
                    if self._stopping.is_set():
                        p.state = "exited"
                        continue
                    last = "\n".join(f"    {line}" for line in p.tail)
                    self._say(f"{p.spec.name} (pid {p.popen.pid}) died with exit code {rc}"
                              + (f"; last lines:\n{last}" if last else ""))
                    if rc == errors.EXIT_USAGE:
                        # exit code 2 = bad config, argument or busy port: respawning cannot help;
                        # the whole launch fails (main() stops the other nodes, exit code 2)
                        p.state = "exited"
                        self.failed = p
                        self._say(self.status_line())
                        return
                    if p.spec.respawn:
                        d = p.spec.respawn_delay_s
                        d = self.params.respawn_delay_s if d is None else d
                        p.state = "respawning"
                        p.respawn_at = time.monotonic() + d
                        self._say(f"{p.spec.name}: respawning in {d:g} s")
                    else:
                        p.state = "exited"
                elif p.state == "respawning" and not self._stopping.is_set() \
                        and time.monotonic() >= (p.respawn_at or 0):
                    self._spawn(p)
                    changed = True
            if changed:
                self._say(self.status_line())
            if all(p.state in ("exited", "pending") for p in self.procs):
                return
            if self._stopping.is_set() and all(p.state != "running" for p in self.procs):
                for p in self.procs:
                    if p.state == "respawning":
                        p.state = "exited"
                return
            time.sleep(self.params.poll_period_s)

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout_s: Optional[float] = None) -> bool:
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _signal_all(self, sig: int) -> None:
        for p in self.procs:
            if p.popen is not None and p.popen.poll() is None:
                try:
                    os.killpg(p.popen.pid, sig)
                except ProcessLookupError:
                    pass

    def _interrupt_all(self, timeout_s: float) -> bool:
        """SIGINT to every child process as soon as it can take it: a node still
        starting ignores SIGINT until its handler is in place (_node_child), so it gets the SIGINT
        then rather than losing it. True when every child has exited within timeout_s."""
        end = time.monotonic() + timeout_s
        sent: set[int] = set()
        while True:
            alive = [p.popen for p in self.procs if p.popen is not None and p.popen.poll() is None]
            if not alive:
                return True
            for po in alive:
                if po.pid not in sent and not signals.sigint_ignored(po.pid):
                    try:    # the node only, as ros2 launch does: a helper it runs (e.g. glfw's
                        os.kill(po.pid, signal.SIGINT)    # library probe at import) is its to stop
                    except ProcessLookupError:
                        pass
                    sent.add(po.pid)
            if time.monotonic() >= end:
                return False
            time.sleep(self.params.poll_period_s)

    def _wait_all(self, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        for p in self.procs:
            if p.popen is None:
                continue
            try:
                p.popen.wait(timeout=max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                return False
        return True

    def shutdown(self) -> None:
        """SIGINT to every child, SIGTERM to its process group after sigterm_timeout_s, SIGKILL after
        sigkill_timeout_s more; then the router. Idempotent."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._say("shutting down: SIGINT to all nodes")
        if not self._interrupt_all(self.params.sigterm_timeout_s):
            self._say("nodes still running: SIGTERM")
            self._signal_all(signal.SIGTERM)
            if not self._wait_all(self.params.sigkill_timeout_s):
                self._say("nodes still running: SIGKILL")
                self._signal_all(signal.SIGKILL)
                self._wait_all(self.params.sigkill_timeout_s)
        self.wait(self.params.sigkill_timeout_s)
        for p in self.procs:
            if p.state != "exited":
                p.state = "exited"
        self._say(self.status_line())
        if self.router_session is not None:
            try:
                self.router_session.close()
            finally:
                self.router_session = None

    def failure_line(self) -> Optional[str]:
        """One line naming the node that failed to start and its own last words, or None."""
        p = self.failed
        if p is None:
            return None
        said = next((line.strip() for line in reversed(p.tail) if line.strip()), "")
        said = said[len("error:"):].strip() if said.startswith("error:") else said
        return (f"node '{p.spec.name}' failed to start (exit code {p.exit_codes[-1]})"
                + (f": {said}" if said else ""))

    def exit_code(self) -> int:
        codes = [p.exit_codes[-1] for p in self.procs if p.exit_codes]
        if self.failed is not None:
            return errors.EXIT_USAGE
        if self._stopping.is_set():
            return 0
        return 0 if all(c == 0 for c in codes) else 1

