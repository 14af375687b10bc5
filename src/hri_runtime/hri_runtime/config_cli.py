"""``hri config show|check|list``: look at and validate the configuration tree."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hri_runtime.config import ConfigError, _display_path, find_config_root, list_robots, load


def _print_tree(node, origin: dict, path: tuple, indent: int, out) -> None:
    pad = "  " * indent
    for key, value in node.items():
        here = path + (key,)
        if isinstance(value, dict) and value:
            print(f"{pad}{key}:", file=out)
            _print_tree(value, origin, here, indent + 1, out)
        else:
            source = _display_path(origin.get(here, "?"))
            print(f"{pad}{key}: {value!r}    # {source}", file=out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hri config", description=__doc__)
    parser.add_argument("--config-root", type=Path, default=None,
                        help="config directory (default: ./config or HRI_CONFIG_ROOT)")
    sub = parser.add_subparsers(dest="verb", required=True)
    show = sub.add_parser("show", help="print the merged tree of a robot, with each leaf's source file")
    show.add_argument("robot")
    show.add_argument("--robot-id", default=None, help="instance name (default: the robot name)")
    show.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                      help="override one key (YAML value), e.g. --set pulse.udp.port=9000")
    check = sub.add_parser("check", help="validate every robot (or the named ones); exit 2 on the first bad one")
    check.add_argument("robots", nargs="*")
    sub.add_parser("list", help="list the robots of the tree")
    args = parser.parse_args(argv)
    try:
        root = args.config_root or find_config_root()
        if args.verb == "list":
            for name in list_robots(root):
                print(name)
            return 0
        if args.verb == "show":
            loaded = load(args.robot, args.robot_id, root, args.set or None)
            print(f"# robot {loaded.robot} (instance {loaded.robot_id}) from: "
                  + ", ".join(_display_path(f) for f in loaded.files))
            _print_tree(loaded.data, loaded.origin, (), 0, sys.stdout)
            return 0
        robots = args.robots or list_robots(root)
        for name in robots:
            load(name, None, root)
            print(f"ok    {name}")
        print(f"{len(robots)} robot config(s) valid")
        return 0
    except ConfigError as exc:
        print(f"config error: {exc.one_line()}", file=sys.stderr)
        return 2
