"""`hri --help`: one line of purpose per subcommand; `--robot` lists the robots of the config tree."""
from __future__ import annotations

import argparse

import pytest

from hri_runtime import errors
import hri_runtime.cli.main as cli
from hri_runtime.config.tree import list_robots


def test_every_registered_subcommand_has_a_one_line_purpose(capsys):
    commands = cli._commands()
    assert set(commands) <= set(cli.SUMMARIES), f"no summary for {sorted(set(commands) - set(cli.SUMMARIES))}"
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in commands:
        line = next(ln for ln in out.splitlines() if ln.split()[:1] == [name])
        assert cli.SUMMARIES[name] in line and "(" + commands[name].split(":")[0] + ")" not in line


def test_robot_argument_lists_the_robots_and_refuses_others():
    p = argparse.ArgumentParser()
    errors.add_robot_argument(p, "fr3")
    robots = list_robots()
    assert {"fr3", "tino"} <= set(robots)
    assert all(r in p.format_help() for r in robots)
    assert p.parse_args([]).robot == "fr3"
    assert p.parse_args(["--robot", "tino"]).robot == "tino"
    with pytest.raises(argparse.ArgumentTypeError, match="unknown robot 'fr4'"):
        errors.robot("fr4")


@pytest.mark.parametrize("command", ["topic", "service", "node", "param", "interface"])
def test_every_graph_subcommand_lists_its_purpose(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    block = out.split("positional arguments:")[1].split("options:")[0]
    names = block.split("{")[1].split("}")[0].split(",")
    lines = [ln.split(None, 1) for ln in block.splitlines()[2:] if ln.startswith("    ") and ln.split()]
    described = {ln[0] for ln in lines if len(ln) == 2}
    assert set(names) <= described, f"hri {command}: no purpose for {sorted(set(names) - described)}"


def test_run_help_says_what_it_does(capsys):
    assert cli.main(["run", "--help"]) == 0
    assert "ros2 run without ROS" in capsys.readouterr().out
    assert cli.main(["run"]) == 2


def test_router_robot_option_lists_the_robots(capsys):
    from hri_runtime.impl.router import router_main

    with pytest.raises(SystemExit):
        router_main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(r in out for r in list_robots()) and "declared defaults of runtime.zenoh" in out
