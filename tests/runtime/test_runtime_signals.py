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
