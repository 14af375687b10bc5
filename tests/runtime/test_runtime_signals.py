"""Ctrl-C during a node's start-up is a clean stop (hri_runtime.signals), without ROS.

A node executable started with SIGINT blocked gets the SIGINT the moment its entry
(``signals.node_main``) takes SIGINT over, i.e. before the node module is imported: the process
ends with exit 0, no traceback, and the node is never built. The same for ``hri <command>``
while the command loads. (tests/ros2 sends SIGINT at many moments of a whole launch on rclpy.)
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

NODES = [("hri_safety.nodes", "stop_supervisor"), ("hri_pulse.nodes", "vr_interface_node"),
         ("hri_sim.nodes", "tino_sim"), ("hri_arm_teleop.nodes", "arm_teleop")]


def _run_with_pending_sigint(cmd: list[str]) -> subprocess.CompletedProcess:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ, HRI_TRANSPORT="inproc"), start_new_session=True)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    os.kill(proc.pid, signal.SIGINT)            # pending in the child until its handler is in place
    out, _ = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out)


@pytest.mark.parametrize("pkg,exe", NODES)
def test_sigint_before_the_node_module_is_imported_is_a_clean_stop(pkg, exe):
    code = (f"import sys; import {pkg} as p; sys.exit(p.{exe}()); ")
    r = _run_with_pending_sigint([sys.executable, "-c", code])
    assert r.returncode == 0 and "Traceback" not in r.stdout and "KeyboardInterrupt" not in r.stdout, r.stdout
    assert "shutting down" not in r.stdout      # stopped before run_node: the node was never built


def test_node_main_imports_nothing_heavy_before_it_catches_sigint():
    """The entry of a node executable must be cheap: hri_runtime.signals and each package's
    nodes/__init__ import only the standard library (and signals) before catch()."""
    code = ("import sys; before = set(sys.modules); import hri_pulse.nodes, hri_safety.nodes, hri_sim.nodes, "
            "hri_arm_teleop.nodes, hri_interaction.nodes, hri_atomic_motion.nodes, hri_console.nodes, "
            "hri_pid_tuning.nodes; new = sorted(m for m in set(sys.modules) - before "
            "if m.split('.')[0] not in sys.stdlib_module_names); print(new)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    new = set(eval(out))  # noqa: S307 - our own printed list
    allowed = {"hri_runtime", "hri_runtime.signals"} | {f"{p}{s}" for p in (
        "hri_pulse", "hri_safety", "hri_sim", "hri_arm_teleop", "hri_interaction", "hri_atomic_motion",
        "hri_console", "hri_pid_tuning") for s in ("", ".nodes")}
    assert new <= allowed, sorted(new - allowed)


def test_hri_command_interrupted_while_loading_exits_cleanly():
    r = _run_with_pending_sigint([sys.executable, "-m", "hri_runtime.cli.main", "launch", "--check", "launch/tino.launch.yaml"])
    assert r.returncode == 0 and "Traceback" not in r.stdout and "OK" not in r.stdout, r.stdout


STUCK_AT_EXIT = """
import sys, threading, time
from hri_runtime.node import Node, run_node

def wait_forever():
    threading.Event().wait()            # a non-daemon thread: the interpreter's exit joins it

class Stuck(Node):
    def __init__(self, **kw):
        super().__init__("stuck_at_exit", **kw)
        self.create_timer(0.05, lambda: print("spinning", flush=True))
    def destroy_node(self):
        threading.Thread(target=wait_forever, name="the_thread_that_never_ends").start()
        super().destroy_node()

sys.exit(run_node(Stuck))           # argv None: a node executable's main
"""


def test_a_node_stuck_at_exit_prints_every_thread_on_the_launchers_sigterm():
    """After Ctrl-C a node process ignores further SIGINT/SIGTERM while it exits (it is stopping
    already); if the exit hangs (a thread the interpreter joins), the launcher's SIGTERM makes it
    print where every thread stands; the SIGKILL (or, later, its own runtime.node.stop_timeout_s)
    ends it."""
    proc = subprocess.Popen([sys.executable, "-c", STUCK_AT_EXIT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=dict(os.environ, HRI_TRANSPORT="inproc"), start_new_session=True)
    try:
        while proc.stdout.readline().strip() != "spinning":    # (its start-up line first)
            assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=3.0)                          # stuck in the interpreter's exit
        proc.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=2.0)                          # still there: SIGTERM only prints
    finally:
        proc.kill()
        out, _ = proc.communicate(timeout=30)
    dump = out[out.index("signal 2: shutting down"):]
    assert "in wait_forever" in dump and "in _shutdown" in dump, out     # the stuck thread and the joiner
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out


STUCK_IN_C = """
import ctypes, sys
from hri_runtime.node import Node, run_node

libc = ctypes.PyDLL(None)               # PyDLL: the call keeps the GIL (no Python handler runs)

class StuckInC(Node):
    def __init__(self, **kw):
        super().__init__("stuck_in_c", **kw)
        self.create_timer(0.05, lambda: print("spinning", flush=True))
    def destroy_node(self):
        while True:
            libc.sleep(1000)            # a signal ends one sleep; the loop takes the next

sys.exit(run_node(StuckInC))
"""


def test_a_node_stuck_in_a_c_call_while_stopping_ends_after_its_stop_timeout():
    """A shutdown stuck in a C call that holds the GIL runs no Python signal handler: the launcher's
    SIGTERM and a killed launcher's PDEATHSIG change nothing. runtime.node.stop_timeout_s after the
    SIGINT, faulthandler's thread prints every thread's stack and ends the process with code 1."""
    cmd = [sys.executable, "-c", STUCK_IN_C, "--ros-args", "-p", "runtime.node.stop_timeout_s:=2.0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, HRI_TRANSPORT="inproc"), start_new_session=True)
    try:
        while proc.stdout.readline().strip() != "spinning":
            assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGTERM)                    # the escalation: it only prints
        rc = proc.wait(timeout=60)
    finally:
        proc.kill()
        out, _ = proc.communicate(timeout=30)
    assert rc == 1, out
    dump = out[out.index("signal 2: shutting down"):]
    assert "Timeout (0:00:02)!" in dump and "in destroy_node" in dump, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out


def test_a_bad_stop_timeout_is_one_line_and_exit_2():
    for bad in ("0", "-1", "soon"):
        r = subprocess.run([sys.executable, "-c", STUCK_IN_C, "--ros-args", "-p", f"runtime.node.stop_timeout_s:={bad}"],
                           capture_output=True, text=True, timeout=60, env=dict(os.environ, HRI_TRANSPORT="inproc"))
        assert r.returncode == 2 and r.stdout == "", (bad, r)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "runtime.node.stop_timeout_s" in lines[0], (bad, r.stderr)


def test_a_stop_flag_set_by_a_signal_handler_ends_every_wait_and_never_blocks_the_handler():
    """``StopFlag`` is what the launcher, the router, ``hri record``/``topic`` and every context's
    shutdown set from a signal handler. ``threading.Event.set()`` there deadlocked ``hri launch``
    once in ros2-ci: the handler ran while the main thread, leaving ``Event.wait()``, held the
    event's lock. Here a SIGALRM handler sets the flag at 300 moments spread over a waiter's
    loop (inside ``wait``, between calls): every wait ends, and the handler never waits."""
    import random
    import time

    from hri_runtime.signals import StopFlag

    f = StopFlag()
    assert not f.is_set() and f.wait(0.01) is False        # a bound without a set: False
    f.set()
    assert f.is_set() and f.wait(None) is True and f.wait(0) is True
    rng = random.Random(3)
    box = {}
    old = signal.signal(signal.SIGALRM, lambda *_: box["flag"].set())
    try:
        for _ in range(300):
            box["flag"] = flag = StopFlag()
            signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.0005, 0.03))
            t0 = time.monotonic()
            while not flag.wait(0.004):                      # a waiter's loop, as the launcher's
                assert time.monotonic() - t0 < 10.0, "the set never reached the waiter"
            assert flag.is_set()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
