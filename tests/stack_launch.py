"""One launch file up for an end-to-end test, as a lab starts it: `hri launch FILE ARGS` in its own
process with its Zenoh router on a free loopback port, and the test's own Zenoh context on that
router for its probe nodes. ``with LaunchedStack(...) as stack:`` waits for the router, yields;
on the way out (a failed assertion too) the probes go, the launcher gets SIGINT (as Ctrl-C) and
its output lands in ``stack.text`` / ``stack.returncode`` for the test's closing asserts (and is
printed when the body failed, so pytest shows it with the failure)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from hri_runtime import msgs
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, router_answers

REPO = Path(__file__).resolve().parents[1]
HRI = [sys.executable, "-m", "hri_runtime.cli.main"]
WAIT_S = 60.0


def free_port(kind=socket.SOCK_STREAM) -> int:
    """A loopback port (TCP or, with ``socket.SOCK_DGRAM``, UDP) that was free a moment ago."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout_s: float = WAIT_S, step_s: float = 0.05) -> bool:
    """Poll ``cond`` every ``step_s`` until it holds (True) or ``timeout_s`` passed (its last
    answer): a bound, never a timing assertion. The one wait of the tests (``wait_until`` in the
    older files is this)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step_s)
    return bool(cond())


def safety_reset(node, timeout_s: float = 10.0):
    """``/safety/reset`` (std_srvs/Trigger) from a probe node, as the operator at the console: also
    what clears a heartbeat timeout that a node starved past ``safety.stop.timeout_s`` latched on
    its own (docs/safety.md). The response, or None without one (refused by the router's access
    rules, or no supervisor)."""
    trig_t, _ = msgs.srv_types("std_srvs/srv/Trigger")
    cli = node.create_client("std_srvs/srv/Trigger", "/safety/reset")
    try:
        return cli.call(msgs.new(trig_t), timeout_s=timeout_s) if cli.wait_for_service(timeout_s) else None
    except Exception:  # noqa: BLE001  (no reply)
        return None
    finally:
        node.destroy_client(cli)


def stack_env(ep: str, ros: bool = True) -> dict:
    """The launcher's environment: Zenoh transport, its router listening on ``ep``, the nodes
    connecting to it; ``ros=False`` also hides a sourced ROS 2 (``joy.launch.yaml`` then picks
    joy_evdev, as on a machine without ROS)."""
    env = {k: v for k, v in os.environ.items() if ros or k != "ROS_DISTRO"}
    env.update(HRI_TRANSPORT="zenoh", HRI_ZENOH_ROUTER_LISTEN=f"[{ep}]", HRI_ZENOH_CONNECT=f"[{ep}]")
    return env


class LaunchedStack:
    """``hri launch --router EP launch/<file> ARGS``; ``ctx`` the test's Zenoh context on its
    router (``add`` a probe node, then ``spin``)."""

    def __init__(self, launch_file: str, *args: str, ros: bool = True):
        self.ep = f"tcp/127.0.0.1:{free_port()}"
        self.env = stack_env(self.ep, ros=ros)
        self.cmd = HRI + ["launch", "--router", self.ep, str(REPO / "launch" / launch_file), *args]
        self.launcher = None
        self.ctx = None
        self.nodes: list = []
        self.text, self.returncode = "", None

    def __enter__(self) -> "LaunchedStack":
        self.launcher = subprocess.Popen(self.cmd, env=self.env, cwd=REPO, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True)
        try:
            assert wait_for(lambda: self.launcher.poll() is None and router_answers(self.ep, 0.5)), \
                "hri launch did not start the router"
            self.ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[self.ep]))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def add(self, node):
        """A probe node of the test (made on ``ctx``), destroyed before the context closes."""
        self.nodes.append(node)
        return node

    def spin(self) -> None:
        self.ctx.spin_in_background()

    def __exit__(self, *exc) -> bool:
        if self.ctx is not None:
            self.ctx.shutdown()
            for n in self.nodes:
                n.destroy_node()
            self.ctx.close()
            self.ctx = None
        if self.launcher is not None and self.returncode is None:
            self.launcher.send_signal(signal.SIGINT)
            self.text, _ = self.launcher.communicate(timeout=WAIT_S)
            self.returncode = self.launcher.returncode
            if exc and exc[0] is not None:
                print(self.text[-20000:])     # the launcher's output, shown with the failure
        return False
