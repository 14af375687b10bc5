"""`hri param set` (the real CLI, a separate process) against a running vr_interface node (a
separate process) over a real Zenoh router: a startup parameter is refused with its reason and
keeps its value, never "successful" without effect (`hri param set /vr_interface pulse.udp.port
25999` must not report success while the socket stays where it is). No wall-clock assertions."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hri_runtime.impl.zenoh_backend import start_router
from ..stack_launch import free_port  # noqa: E402  (bounded waits, free ports)

BIN = Path(sys.executable).parent
WAIT_S = 60.0


def hri(env, *args, timeout=60):
    return subprocess.run([str(BIN / "hri"), *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def stack():
    ep = f"tcp/127.0.0.1:{free_port()}"
    router = start_router([ep])
    env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_CONNECT=f"[{ep}]")
    udp = free_port()
    proc = subprocess.Popen([str(BIN / "vr_interface_node"), "--ros-args", "-p", f"pulse.udp.port:={udp}"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield env, proc, udp
    proc.terminate()
    try:
        proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
    router.close()


def test_hri_param_set_of_a_startup_parameter_is_refused_with_the_reason(stack):
    env, proc, udp = stack
    end = time.monotonic() + WAIT_S
    while True:                                       # the node's parameter services are up
        r = hri(env, "param", "--timeout", "5", "get", "/vr_interface", "pulse.udp.port")
        if r.returncode == 0 or time.monotonic() > end or proc.poll() is not None:
            break
    assert r.returncode == 0, (r.stdout, r.stderr, proc.poll() is not None and proc.communicate())
    assert r.stdout.strip() == f"Value is: {udp}"
    r = hri(env, "param", "set", "/vr_interface", "pulse.udp.port", "25999")
    assert r.returncode == 1
    assert "read-only" in r.stdout and "applied at startup" in r.stdout and "Traceback" not in r.stderr
    assert hri(env, "param", "get", "/vr_interface", "pulse.udp.port").stdout.strip() == f"Value is: {udp}"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # the socket is still where it was
        with pytest.raises(OSError):
            s.bind(("127.0.0.1", udp))
    r = hri(env, "param", "set", "/vr_interface", "pulse.link.kernel_flood_filter", "false")   # applied at run time
    assert r.returncode == 0 and "successful" in r.stdout, (r.stdout, r.stderr)
    r = hri(env, "param", "set", "/vr_interface", "pulse.link.kernel_flood_filter", "sometimes")
    assert r.returncode == 1 and "declared bool" in r.stdout
    assert hri(env, "param", "get", "/vr_interface", "pulse.link.kernel_flood_filter").stdout.strip() == "Value is: False"
    r = hri(env, "param", "describe", "/vr_interface", "pulse.udp.port")
    assert r.returncode == 0 and "Read only: true" in r.stdout.replace("Read only: True", "Read only: true")
