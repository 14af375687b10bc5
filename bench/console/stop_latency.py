"""Wall-clock safe-stop latency of the console over the Zenoh runtime, separate processes.

    .venv/bin/python bench/console/stop_latency.py --repeats 20

`hri launch --transport zenoh --router tcp/127.0.0.1:<free port>` runs ``atomic_node`` (Tino,
embedded MuJoCo, driver sim) and ``console_node`` on a private router (no cross-talk with other
runs). This process is a WebSocket client of the console (what the page's button sends) and a
runtime node on the same router: it drives the base (state-3 pulse on /base_cmd), sends
``{"type":"safe_stop"}`` and takes the time until the first zero ``/cmd_vel`` from the atomic
controller arrives here (t1 - t0, both perf_counter in this process: WebSocket -> console ->
Zenoh -> atomic -> its next 5 ms tick -> Zenoh -> here). Between repeats it releases the stop
through the console (``release_stop``). Prints p50 / p95 / max in ms.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HRI = str(Path(sys.executable).with_name("hri"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    router, port = free_port(), free_port()
    launch = Path(tempfile.mkdtemp()) / "stop_latency.launch.yaml"
    launch.write_text(f"""launch:
  - node: {{pkg: hri_atomic_motion, exec: atomic_node, name: atomic, param: [{{name: robot, value: tino}}, {{name: driver, value: sim}}]}}
  - node: {{pkg: hri_console, exec: console_node, name: console, param: [{{name: robot, value: fr3}}, {{name: port, value: {port}}}]}}
""")
    endpoint = f"tcp/127.0.0.1:{router}"
    proc = subprocess.Popen([HRI, "launch", "--transport", "zenoh", "--router", endpoint, str(launch)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    os.environ["HRI_TRANSPORT"] = "zenoh"
    os.environ["HRI_ZENOH_CONNECT"] = f"[{endpoint}]"
    try:
        return run(args, port)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def run(args, port: int) -> int:
    from websockets.sync.client import connect

    from hri_runtime import msgs
    from hri_runtime.config import load_robot_config
    from hri_runtime.context import get_default_context
    from hri_runtime.node import Node

    T = load_robot_config("tino")["atomic"]["topics"]
    for _ in range(100):                                   # the router comes up with the launcher
        try:
            ctx = get_default_context()
            break
        except Exception:
            time.sleep(0.1)
    node = Node("stop_latency_bench", context=ctx)
    lock = threading.Lock()
    vel: list[tuple[float, float]] = []
    state = {"fault": "unknown"}

    def on_vel(m):
        with lock:
            vel.append((time.perf_counter(), float(m.linear.x)))

    def on_state(m):
        state["fault"] = json.loads(m.data).get("fault")

    node.create_subscription("geometry_msgs/msg/Twist", T["cmd_vel"], on_vel, qos=100)
    node.create_subscription("std_msgs/msg/String", T["atomic_state"], on_state, qos=10)
    pulse = node.create_publisher("geometry_msgs/msg/Twist", T["pulse"], qos=10)
    ctx.spin_in_background()

    def wait(pred, what, timeout_s=20.0):
        end = time.monotonic() + timeout_s
        while not pred():
            if time.monotonic() > end:
                raise SystemExit(f"timed out: {what}")
            time.sleep(0.002)

    for _ in range(200):
        try:
            ws = connect(f"ws://127.0.0.1:{port}/ws", open_timeout=2)
            break
        except OSError:
            time.sleep(0.1)
    else:
        raise SystemExit("console did not come up")
    lat_ms = []
    with ws:
        def reply():
            while True:
                m = json.loads(ws.recv(timeout=10))
                if m["type"] != "state":
                    return m
        wait(lambda: state["fault"] is None, "atomic node up")
        for k in range(args.repeats):
            ws.send(json.dumps({"type": "release_stop"}))
            reply()
            wait(lambda: state["fault"] is None, "fault reset")
            for _ in range(3):
                pulse.publish(msgs.new("geometry_msgs/msg/Twist", linear=msgs.new("geometry_msgs/msg/Vector3", x=3.0)))
                time.sleep(0.04)
            pulse.publish(msgs.new("geometry_msgs/msg/Twist"))
            wait(lambda: vel and vel[-1][1] > 0, "base moving")
            time.sleep(0.1)
            t0 = time.perf_counter()
            ws.send(json.dumps({"type": "safe_stop"}))
            wait(lambda: any(t > t0 and x == 0.0 for t, x in vel[-50:]), "zero command")
            with lock:
                t1 = next(t for t, x in vel if t > t0 and x == 0.0)
            lat_ms.append((t1 - t0) * 1e3)
            reply()
            wait(lambda: state["fault"] is not None, "fault latched")
            time.sleep(1.8)                                # let the aborted movement's slot pass
    ctx.shutdown()
    a = np.array(lat_ms)
    print(f"safe stop over zenoh, console -> atomic -> first zero /cmd_vel, {len(a)} repeats: "
          f"p50 {np.percentile(a, 50):.1f} ms, p95 {np.percentile(a, 95):.1f} ms, max {a.max():.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
