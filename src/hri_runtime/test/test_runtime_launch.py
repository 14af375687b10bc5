"""hri launch: YAML launch parsing (arg, let, group if/unless, push-ros-namespace, include,
substitutions, params files, remaps) and process supervision with real child processes
(launch_fixtures/probe_node.py): respawn, death report with exit code and last lines, clean
stop on SIGINT with no child left. Waits are bounded; nothing asserts on durations."""
import glob
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hri_runtime.launch.launch_description import LaunchError
from hri_runtime.launch.frontend import parse_launch_file
from hri_runtime.launch.launch_service import LaunchParams, Launcher

FIX = Path(__file__).parent / "launch_fixtures"
REPO = Path(__file__).resolve().parents[3]
WAIT_S = 30.0
FAST = LaunchParams(sigterm_timeout_s=5.0, sigkill_timeout_s=2.0, respawn_delay_s=0.0,
                    log_tail_lines=5, router_probe_timeout_s=0.2, poll_period_s=0.02)


@pytest.fixture
def launch_path(tmp_path, monkeypatch):
    """An executable 'probe_node' of package 'hri_test_pkg' found through HRI_LAUNCH_PATH."""
    d = tmp_path / "bin" / "hri_test_pkg"
    d.mkdir(parents=True)
    exe = d / "probe_node"
    exe.write_text(f"#!{sys.executable}\nimport runpy\n"
                   f"runpy.run_path({str(FIX / 'probe_node.py')!r}, run_name='__main__')\n")
    exe.chmod(0o755)
    monkeypatch.setenv("HRI_LAUNCH_PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("HRI_TRANSPORT", "inproc")
    return tmp_path


def records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for(pred, timeout_s=WAIT_S):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of ours counts as dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_parse_resolves_the_subset(launch_path, monkeypatch):
    monkeypatch.setenv("HRI_TEST_GREETING", "hi there")
    d = parse_launch_file(FIX / "main.launch.yaml", {"out": "/tmp/x.jsonl"})
    by = {n.name: n for n in d.nodes}
    assert sorted(by) == ["flaky", "included", "steady"]          # 'never' skipped by unless
    s = by["steady"]
    assert s.cmd[0].endswith("hri_test_pkg/probe_node") and s.namespace == "/robot1"
    assert s.cmd[1:] == ["--ros-args", "-r", "__node:=steady", "-r", "__ns:=/robot1",
                         "-p", "out:=/tmp/x.jsonl", "-p", "extra:=hi there", "-r", "chatter:=/talk"]
    f = by["flaky"]
    assert f.namespace == "/flaky_ns" and f.respawn and f.respawn_delay_s == 0.0
    assert "exit_after_s:=0.2" in f.cmd and "exit_code:=3" in f.cmd
    inc = by["included"]
    assert inc.params_files == [str(FIX / "params.yaml")] and inc.namespace == ""
    assert d.args == {"out": "/tmp/x.jsonl", "with_flaky": "true", "greeting": "hi there"}
    d2 = parse_launch_file(FIX / "main.launch.yaml", {"out": "o", "with_flaky": "false"})
    assert sorted(n.name for n in d2.nodes) == ["included", "never", "steady"]


@pytest.mark.parametrize("args,match", [
    ({}, "'out' has no default"),
    ({"out": "o", "bogus": "1"}, r"unknown launch argument\(s\) \['bogus'\]"),
    ({"out": "o", "with_flaky": "maybe"}, "not true/false"),
])
def test_parse_errors_are_clear(launch_path, args, match):
    with pytest.raises(LaunchError, match=match):
        parse_launch_file(FIX / "main.launch.yaml", args)


def test_bad_entities(tmp_path):
    f = tmp_path / "bad.launch.yaml"
    for text, match in [("launch:\n  - rosbag: {}\n", "unsupported entity 'rosbag'"),
                        ("nodes: []\n", "top-level 'launch:'"),
                        ("launch:\n  - node: {pkg: x}\n", "needs 'exec'"),
                        ("launch:\n  - node: {pkg: x, exec: y, name: 'bad name'}\n", "invalid node name"),
                        ("launch:\n  - let: {name: a, value: '$(var nope)'}\n", "undefined launch argument"),
                        ("launch:\n  - node: {pkg: hri_no_pkg, exec: no_exe}\n", "not found")]:
        f.write_text(text)
        with pytest.raises(LaunchError, match=match):
            parse_launch_file(f)


def test_repository_launch_files_all_parse():
    files = sorted(glob.glob(str(REPO / "launch" / "*.launch.yaml")) +
                   glob.glob(str(REPO / "src" / "*" / "launch" / "*.launch.yaml")))
    assert files
    required = {"arm.launch.yaml": {"robot": "fr3"}}    # launch files with a required argument
    # included only, with ROS-only executables (controller_manager): read through arm.launch.yaml
    # control:=ros2_control in tests/arm/test_arm_ros2_control_launch.py
    included = {"ros2_control.launch.yaml"}
    assert included <= {Path(f).name for f in files}
    for f in [f for f in files if Path(f).name not in included]:
        d = parse_launch_file(f, required.get(Path(f).name))
        assert d.nodes, f
        for n in d.nodes:
            assert not n.missing_executable and os.access(n.cmd[0], os.X_OK)


def test_supervision_respawn_death_report_and_clean_stop(launch_path):
    out = launch_path / "rec.jsonl"
    d = parse_launch_file(FIX / "main.launch.yaml", {"out": str(out)})
    buf = io.StringIO()
    ln = Launcher(d, params=FAST, transport="inproc", out=buf)
    ln.start()
    try:
        assert wait_for(lambda: sum(r["event"] == "start" and r["name"] == "flaky" for r in records(out)) >= 2)
        assert wait_for(lambda: {"steady", "included"} <= {r["name"] for r in records(out)})
    finally:
        ln.shutdown()
    recs = records(out)
    starts = [r for r in recs if r["event"] == "start"]
    steady = next(r for r in starts if r["name"] == "steady")
    assert steady["ns"] == "/robot1" and steady["topic"] == "/talk" and steady["extra"] == "hello"
    assert steady["transport"] == "inproc"
    inc = next(r for r in starts if r["name"] == "included")
    assert inc["gain"] == 2.5                                      # from the params file
    text = buf.getvalue()
    assert "flaky (pid" in text and "died with exit code 3" in text
    assert "probe flaky exiting with 3" in text                    # last lines in the report
    assert "respawning" in text
    for r in starts:
        assert not alive(r["pid"]), r
    assert {r["name"] for r in recs if r["event"] == "stopped"} >= {"steady", "included"}  # SIGINT: clean exit
    assert ln.wait(0) and ln.exit_code() == 0


def test_cli_stops_everything_on_sigint(launch_path):
    out = launch_path / "cli.jsonl"
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-m", "hri_runtime.cli.main", "launch", str(FIX / "main.launch.yaml"),
                          f"out:={out}", "with_flaky:=false"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_for(lambda: {"steady", "never", "included"} <= {r["name"] for r in records(out)})
        p.send_signal(signal.SIGINT)
        text, _ = p.communicate(timeout=WAIT_S)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, text
    assert "shutting down" in text
    for r in records(out):
        assert not alive(r["pid"])


def test_nested_and_typed_inline_params(tmp_path, launch_path):
    f = tmp_path / "n.launch.yaml"
    f.write_text("launch:\n  - node:\n      pkg: hri_test_pkg\n      exec: probe_node\n      param:\n"
                 "        - {name: gains, value: {kp: 2.0, ki: 0}}\n        - {name: joints, value: [a, b]}\n"
                 "        - {name: empty, value: ''}\n")
    cmd = parse_launch_file(f).nodes[0].cmd
    assert cmd[1:] == ["--ros-args", "-p", "gains.kp:=2.0", "-p", "gains.ki:=0", "-p", "joints:=[a, b]",
                       "-p", "empty:="]


def test_command_lines_split_like_ros2_launch(tmp_path):
    """ros2 launch splits the literal text of args/ros_args at whitespace and never a
    substitution's result: ``-p $(var p)`` is two arguments, ``$(eval ...)`` giving ``-p a:=1``
    is one (which rcl refuses), so a launch file that works here works on ROS 2."""
    f = tmp_path / "cmd.launch.yaml"
    f.write_text("launch:\n"
                 "  - arg: {name: port, default: '5'}\n"
                 "  - executable:\n"
                 "      cmd: \"echo a  b\"\n"
                 "      args: \"-p port:=$(var port) $(eval \\\"'x y'\\\") q$(var port)r 'c d'\"\n"
                 "  - executable:\n"
                 "      cmd: echo\n"
                 "      args: $(eval \"'-p a:=' + '$(var port)'\")\n")
    d = parse_launch_file(f)
    assert d.nodes[0].cmd == ["echo", "a", "b", "-p", "port:=5", "x y", "q5r", "c d"]
    assert d.nodes[1].cmd == ["echo", "-p a:=5"]
    f.write_text("launch:\n  - executable: {cmd: echo, args: \"$(var a\"}\n")
    with pytest.raises(LaunchError, match="unclosed"):
        parse_launch_file(f)
