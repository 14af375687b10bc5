"""`hri console` refuses a non-loopback bind without a token (config fr3 has no token)."""
from hri_console.cli import main


def test_cli_refuses_public_bind_without_token(capsys):
    assert main(["--robot", "fr3", "--host", "0.0.0.0", "--check"]) == 2
    assert "console.token must be set" in capsys.readouterr().err


def test_cli_loopback_check_ok(capsys):
    assert main(["--robot", "fr3", "--check"]) == 0
    assert "127.0.0.1" in capsys.readouterr().out


def test_console_node_refuses_public_bind_without_token_in_one_line():
    """The node executable (what `ros2 run` / a launch file starts): one line, exit 2, no traceback."""
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "hri_console.nodes.console_node", "--ros-args",
                        "-p", "console.bind_host:=0.0.0.0", "-p", "console.port:=0"],
                       env=dict(os.environ, HRI_TRANSPORT="inproc"), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.strip().splitlines() == [
        "error: console bind_host '0.0.0.0' is not loopback: console.token must be set"]
