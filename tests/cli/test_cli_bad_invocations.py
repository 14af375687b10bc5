"""Bad input at every command-line boundary is ONE line on stderr and exit code 2.

A table of bad invocations of every ``hri`` subcommand and of node executables (bad arguments,
config errors, busy ports, hostile launch files), each run as a real process: exit code 2,
exactly one non-empty line on stderr naming the problem, no traceback, and done within the
subprocess timeout (5 s: a hang fails the test). Then the launch-level contracts: a node that
fails to start fails the launch (named, exit 2) and nothing of that launch is left running.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TIMEOUT_S = 5.0          # per invocation: the subprocess timeout, not a timing assertion


def _free_tcp_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def busy():
    """A listening TCP socket and a bound UDP socket (busy ports), a closed router endpoint, and
    the hostile launch files."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 0))
    yield {"tcp": tcp.getsockname()[1], "udp": udp.getsockname()[1], "closed": _free_tcp_port()}
    tcp.close()
    udp.close()


def _launch_files(d: Path) -> dict[str, str]:
    files = {
        "self_include": "launch:\n  - include: {file: \"$(dirname)/self_include.launch.yaml\"}\n",
        "cycle_a": "launch:\n  - include: {file: \"$(dirname)/cycle_b.launch.yaml\"}\n",
        "cycle_b": "launch:\n  - include: {file: \"$(dirname)/cycle_a.launch.yaml\"}\n",
        "eval_bomb": "launch:\n  - arg: {name: x, default: \"$(eval 9**9**9)\"}\n",
        "eval_code": "launch:\n  - arg: {name: x, default: \"$(eval [].__class__)\"}\n",
        "bad_yaml": "launch:\n  - node: {pkg: a, exec: [\n",
        "undefined_var": "launch:\n  - executable: {cmd: \"echo $(var nosuch)\"}\n",
    }
    out = {"nodir": str(d / "no_such_dir")}
    for name, text in files.items():
        p = d / f"{name}.launch.yaml"
        p.write_text(text)
        out[name] = str(p)
    return out


# (id, argv, extra environment, a fragment the one line must contain). Placeholders:
# {tcp} a busy TCP port, {udp} a busy UDP port, {nodir} a directory that does not exist,
# {<launch>} a hostile launch file.
HRI = [sys.executable, "-m", "hri_runtime.cli.main"]
CASES = [
    ("unknown_command", ["nosuch"], {}, "unknown command 'nosuch'"),
    ("config_no_verb", ["config"], {}, "required"),
    ("config_unknown_robot", ["config", "check", "fr4"], {}, "'fr4'"),
    ("config_root_missing", ["config", "check"], {"HRI_CONFIG_ROOT": "/nonexistent"}, "HRI_CONFIG_ROOT"),
    ("config_set_out_of_range", ["config", "show", "fr3", "--set", "safety.ee_speed_max_m_s=-1"], {},
     "safety.ee_speed_max_m_s"),
    ("config_set_without_equals", ["config", "show", "fr3", "--set", "nokey"], {}, "key.path=value"),
    ("launch_missing_file", ["launch", "/nonexistent.launch.yaml"], {}, "not found"),
    ("launch_self_include_check", ["launch", "--check", "{self_include}"], {}, "include cycle"),
    ("launch_self_include_run", ["launch", "{self_include}"], {}, "include cycle"),
    ("launch_include_cycle", ["launch", "--check", "{cycle_a}"], {}, "cycle_a.launch.yaml -> cycle_b"),
    ("launch_eval_unbounded", ["launch", "--check", "{eval_bomb}"], {}, "larger than 256 bits"),
    ("launch_eval_code", ["launch", "--check", "{eval_code}"], {}, "only literals"),
    ("launch_bad_yaml", ["launch", "--check", "{bad_yaml}"], {}, "not valid YAML"),
    ("launch_undefined_var", ["launch", "--check", "{undefined_var}"], {}, "undefined launch argument"),
    ("launch_unknown_arg", ["launch", "--check", "launch/fr3.launch.yaml", "nosuch:=1"], {},
     "unknown launch argument"),
    ("run_unknown_executable", ["run", "nopkg", "noexec"], {}, "not found"),
    ("topic_pub_bad_name", ["topic", "pub", "bad name!", "std_msgs/msg/String", "{data: x}"], {},
     "invalid topic name"),
    ("topic_echo_unknown_type", ["topic", "echo", "/joint_states", "std_msgs/msg/Strin"], {},
     "unknown message type"),
    ("topic_pub_bad_yaml", ["topic", "pub", "/x", "std_msgs/msg/String", "{data: [x"], {}, "not valid YAML"),
    ("topic_pub_unknown_field", ["topic", "pub", "/x", "std_msgs/msg/String", "{nofield: 1}"], {}, "nofield"),
    ("topic_pub_zero_rate", ["topic", "pub", "/x", "std_msgs/msg/String", "{}", "-r", "0"], {}, "--rate"),
    ("topic_hz_negative_duration", ["topic", "hz", "/x", "--duration", "-1"], {}, "--duration"),
    ("param_missing_arguments", ["param", "set", "/node"], {}, "required"),
    ("record_unwritable_path", ["record", "-o", "{nodir}/x.mcap"], {}, "no_such_dir/x.mcap"),
    ("play_missing_file", ["play", "/nonexistent.mcap"], {}, "/nonexistent.mcap"),
    ("play_not_an_mcap", ["play", "/etc/hostname"], {}, "/etc/hostname"),
    ("console_unknown_robot", ["console", "--robot", "nosuch"], {}, "'nosuch'"),
    ("console_port_too_large", ["console", "--port", "70000"], {}, "invalid port 70000"),
    ("console_port_negative", ["console", "--port", "-5"], {}, "invalid port -5"),
    ("console_busy_port", ["console", "--port", "{tcp}"], {"HRI_TRANSPORT": "inproc"}, "already in use"),
    ("vr_emulate_speed_zero", ["vr-emulate", "--speed", "0"], {}, "--speed"),
    ("vr_emulate_scenario_not_yaml_mapping", ["vr-emulate", "--scenario", "/etc/passwd"], {}, "/etc/passwd"),
    ("vr_emulate_scenario_missing", ["vr-emulate", "--scenario", "/nonexistent.yaml"], {}, "/nonexistent.yaml"),
    ("vr_emulate_port_too_large", ["vr-emulate", "--port", "99999"], {}, "invalid port 99999"),
    ("arm_emulate_port_too_large", ["arm-emulate", "--port", "99999"], {}, "invalid port 99999"),
    ("teleop_demo_unknown_robot", ["teleop-demo", "--robot", "nosuch"], {}, "'nosuch'"),
    ("foxglove_port_too_large", ["foxglove", "--port", "70000"], {}, "invalid port 70000"),
    ("sim_unknown_robot", ["sim", "step", "--robot", "nosuch"], {}, "'nosuch'"),
    ("tune_unknown_robot", ["tune", "--robot", "nosuch"], {}, "nosuch"),
    ("atomic_demo_negative_gap", ["atomic", "demo", "--gap-s", "-1"], {}, "--gap-s"),
    ("sim_negative_seconds", ["sim", "step", "--seconds", "-1"], {}, "--seconds"),
    ("vr_emulate_probability_above_one", ["vr-emulate", "--loss", "2"], {}, "a probability 0..1"),
    ("interface_unknown_type", ["interface", "show", "nosuch/msg/X"], {}, "nosuch/msg/X"),
    ("bag_info_missing_file", ["bag", "info", "/nonexistent.mcap"], {}, "/nonexistent.mcap"),
    ("router_bad_endpoint", ["router", "--listen", "bad"], {}, "bad"),
    ("service_unknown_option", ["service", "list", "--bogus"], {}, "--bogus"),
    # node executables (what `hri launch` starts): the same one line and exit code 2
    ("node_config_error", ["@arm_teleop", "--ros-args", "-p", "robot:=fr4"], {"HRI_TRANSPORT": "inproc"}, "'fr4'"),
    ("node_bad_ros_args", ["@atomic_node", "--ros-args", "-p"], {"HRI_TRANSPORT": "inproc"}, "-p"),
    ("node_busy_udp_port", ["@vr_interface_node", "--ros-args", "-p", "pulse.udp.port:={udp}"], {"HRI_TRANSPORT": "inproc"},
     "in use"),
]


def _argv(argv: list[str], ports: dict, launches: dict) -> list[str]:
    out = []
    for a in argv:
        key = a[1:-1] if a.startswith("{") and a.endswith("}") else None
        if key in launches:
            a = launches[key]
        elif key in ports:
            a = str(ports[key])
        elif "{udp}" in a or "{tcp}" in a or "{nodir}" in a:
            a = (a.replace("{udp}", str(ports["udp"])).replace("{tcp}", str(ports["tcp"]))
                 .replace("{nodir}", launches["nodir"]))
        out.append(a)
    if out[0].startswith("@"):
        return [str(BIN / out[0][1:]), *out[1:]]
    return [*HRI, *out]


def _env(extra: dict, ports: dict) -> dict:
    env = dict(os.environ)
    env.pop("HRI_CONFIG_ROOT", None)
    # a transport, if a command gets that far, finds no router (none of these may need one)
    env.update(HRI_TRANSPORT="zenoh", HRI_ZENOH_CONNECT=f"[tcp/127.0.0.1:{ports['closed']}]")
    env.update(extra)
    return env


def test_table_is_large_enough():
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_invocation_is_one_line_and_exit_2(case, busy, tmp_path):
    _id, argv, extra, fragment = case
    launches = _launch_files(tmp_path)
    cmd = _argv(argv, busy, launches)
    try:
        result = subprocess.run(cmd, cwd=REPO, env=_env(extra, busy), stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:   # a load spike on a shared machine: once more, with 6x the time;
        result = subprocess.run(cmd, cwd=REPO, env=_env(extra, busy), stdin=subprocess.DEVNULL,   # a hang
                                capture_output=True, text=True, timeout=6 * TIMEOUT_S)         # hangs again
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1, result.stderr
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert fragment in lines[0], lines[0]


# --------------------------------------------------------------------------- launch-level

def _alive_with_marker(marker: str) -> list[int]:
    """Pids of live processes whose environment holds HRI_TEST_MARK=<marker>."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if f"HRI_TEST_MARK={marker}".encode() in (d / "environ").read_bytes().split(b"\0"):
                stat = (d / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":
                    pids.append(int(d.name))
        except OSError:
            continue
    return pids


def _launch_env(router_port: int, marker: str) -> dict:
    env = dict(os.environ)
    env.pop("HRI_CONFIG_ROOT", None)
    env.pop("HRI_ZENOH_CONNECT", None)
    env.update(HRI_TRANSPORT="zenoh", HRI_TEST_MARK=marker)
    return env


def _wait_gone(marker: str, timeout_s: float = 20.0) -> list[int]:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        left = _alive_with_marker(marker)
        if not left:
            return []
        time.sleep(0.1)
    return _alive_with_marker(marker)


def test_launch_fails_names_the_node_and_stops_the_others(tmp_path):
    """One node of a launch fails to start (config error): the launch exits 2 naming it, and its
    other process (a long sleep standing in for a healthy node) is stopped."""
    f = tmp_path / "two.launch.yaml"
    f.write_text("launch:\n"
                 "  - executable: {cmd: \"sleep 600\", name: healthy}\n"
                 "  - node: {pkg: hri_arm_teleop, exec: arm_teleop, name: arm_teleop,\n"
                 "           param: [{name: robot, value: fr4}]}\n")
    port = _free_tcp_port()
    marker = uuid.uuid4().hex
    result = subprocess.run([*HRI, "launch", str(f), "--router", f"tcp/127.0.0.1:{port}"], cwd=REPO,
                            env=_launch_env(port, marker), capture_output=True, text=True, timeout=120)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "node 'arm_teleop' failed to start (exit code 2)" in lines[0] and "'fr4'" in lines[0]
    assert _wait_gone(marker) == []


def test_second_launch_of_the_same_stack_fails_on_the_busy_port_and_leaves_nothing(tmp_path):
    """``hri launch launch/fr3.launch.yaml`` twice: the second one's arm_teleop finds the VR UDP
    port taken; that launch exits 2 with one line naming the node, and none of its processes
    remain; the first launch is unaffected."""
    port = _free_tcp_port()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    vr_port = udp.getsockname()[1]
    udp.close()
    args = ["launch", "launch/fr3.launch.yaml", "--router", f"tcp/127.0.0.1:{port}", f"vr_port:={vr_port}"]
    first_marker, second_marker = uuid.uuid4().hex, uuid.uuid4().hex
    first = subprocess.Popen([*HRI, *args], cwd=REPO, env=_launch_env(port, first_marker),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        end = time.monotonic() + 90
        bound = False
        while time.monotonic() < end and first.poll() is None and not bound:
            probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                probe.bind(("0.0.0.0", vr_port))
            except OSError:
                bound = True                      # the first arm_teleop holds the VR port
            finally:
                probe.close()
            time.sleep(0.2)
        assert bound, "the first launch never bound its VR port"
        second = subprocess.run([*HRI, *args], cwd=REPO, env=_launch_env(port, second_marker),
                                capture_output=True, text=True, timeout=120)
        lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert second.returncode == 2, second.stdout + second.stderr
        assert len(lines) == 1 and "Traceback" not in second.stderr, second.stderr
        assert "node 'arm_teleop' failed to start" in lines[0] and "in use" in lines[0], lines[0]
        assert _wait_gone(second_marker) == []
        assert first.poll() is None               # the running stack is untouched
    finally:
        os.killpg(first.pid, signal.SIGINT)
        try:
            first.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(first.pid, signal.SIGKILL)
            first.communicate()
    assert _wait_gone(first_marker) == []
