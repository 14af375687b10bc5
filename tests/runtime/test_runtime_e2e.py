"""End to end on the real Zenoh transport, separate processes: `hri launch` starts the router
in-process on a free loopback port and a publishing node; `hri node list`, `hri topic echo`,
`hri record` and `hri play` (separate processes) see it, record it and replay it; Ctrl-C on the
launcher stops everything with no process left. Waits are bounded; no duration is asserted."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


import zenoh  # noqa: F401  (required: a missing install fails here)
import hri_runtime.impl.zenoh_backend  # noqa: F401  (required: a missing install fails here)
from ..stack_launch import free_port  # noqa: E402  (bounded waits, free ports)

FIX = Path(__file__).resolve().parents[2] / "src" / "hri_runtime" / "test" / "launch_fixtures"
HRI = [sys.executable, "-m", "hri_runtime.cli.main"]
WAIT_S = 40.0


def run(args, env, timeout=WAIT_S):
    p = subprocess.run(HRI + args, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_launch_router_graph_record_play_and_stop(tmp_path):
    port = free_port()
    ep = f"tcp/127.0.0.1:{port}"
    d = tmp_path / "bin" / "hri_test_pkg"
    d.mkdir(parents=True)
    exe = d / "probe_node"
    exe.write_text(f"#!{sys.executable}\nimport runpy\n"
                   f"runpy.run_path({str(FIX / 'probe_node.py')!r}, run_name='__main__')\n")
    exe.chmod(0o755)
    lf = tmp_path / "pub.launch.yaml"
    out = tmp_path / "rec.jsonl"
    lf.write_text("launch:\n  - node:\n      pkg: hri_test_pkg\n      exec: probe_node\n      name: probe_pub\n"
                  f"      param:\n        - {{name: out, value: '{out}'}}\n        - {{name: publish_hz, value: 20.0}}\n")
    env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_LAUNCH_PATH=str(tmp_path / "bin"),
               HRI_ZENOH_ROUTER_LISTEN=f"[{ep}]", HRI_ZENOH_CONNECT=f"[{ep}]")
    launcher = subprocess.Popen(HRI + ["launch", str(lf)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + WAIT_S
        while not out.exists() and time.monotonic() < end:
            time.sleep(0.05)
        assert out.exists(), "node did not start"
        rc, so, se = run(["node", "list"], env)
        assert rc == 0 and "/probe_pub" in so.split(), (so, se)
        rc, so, se = run(["topic", "echo", "/chatter", "--once", "--timeout", "20"], env)
        assert rc == 0 and so.startswith("data: probe "), (so, se)
        mcap = tmp_path / "run.mcap"
        rc, so, se = run(["record", "-o", str(mcap), "/chatter", "--duration", "1.5"], env)
        assert rc == 0, se
        from hri_runtime.bag.recording import McapReader

        rd = McapReader(mcap)
        assert rd.topics() == {"/chatter": "std_msgs/msg/String"}
        n = rd.message_counts()["/chatter"]
        assert n > 0 and all(m.msg.data.startswith("probe ") for m in rd.messages())
        echo = subprocess.Popen(HRI + ["topic", "echo", "/replay", "std_msgs/msg/String", "-n", "2",
                                       "--timeout", "30"], env=env, stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)   # let the echo subscription be declared before replaying (not an assertion)
        rc, so, se = run(["play", str(mcap), "--rate", "4", "--remap", "/chatter:=/replay"], env)
        assert rc == 0 and f"published {n} messages" in se, se
        eo, _ = echo.communicate(timeout=WAIT_S)
        assert echo.returncode == 0 and eo.count("data: probe ") == 2, eo
    finally:
        launcher.send_signal(signal.SIGINT)
        text, _ = launcher.communicate(timeout=WAIT_S)
    assert launcher.returncode == 0, text
    assert f"zenoh router started in-process on {ep}" in text
    pids = [json.loads(line)["pid"] for line in out.read_text().splitlines()]
    assert pids and not any(alive(p) for p in pids)
