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
    print where every thread stands, and only the SIGKILL ends it."""
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
