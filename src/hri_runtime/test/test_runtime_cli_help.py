"""`hri --help`: one line of purpose per subcommand; `--robot` lists the robots of the config tree."""
from __future__ import annotations

import argparse

import pytest

from hri_runtime import cli, errors
from hri_runtime.config import list_robots


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
