"""``hri console``: serve the operator console for a robot config.

    hri console --robot fr3                      # 127.0.0.1:<console.port>
    hri console --robot fr3 --host 0.0.0.0       # refused unless console.token is set
    hri console --robot fr3 --check              # validate bind/token and exit
    hri console --robot fr3 --namespace left     # the stack in namespace /left (its relative topics)

Runs the console node (``hri_console.nodes.console_node``) on the default transport
(``HRI_TRANSPORT``): safe stop on hri_pulse's safe-stop topic, modes/gains to hri_interaction,
PID window through the hri_pid_tuning services.
"""
from __future__ import annotations

import argparse
import dataclasses
import logging
import sys

from hri_runtime import errors

from .core.protocol import ConsoleParams, StartupRefused, check_bind

_log = logging.getLogger("hri_console")


def params_from_args(args) -> tuple[ConsoleParams, dict]:
    from hri_runtime.config.tree import load_robot_config

    cfg = load_robot_config(args.robot)
    overrides = {k: v for k, v in (("bind_host", args.host), ("port", args.port)) if v is not None}
    return dataclasses.replace(ConsoleParams.from_tree(cfg), **overrides), cfg     # checked again


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hri console", description="Serve the operator console (a web page) "
                                "for a robot config: safe stop, link health, modes, gains, PID tuning.")
    errors.add_robot_argument(p, "fr3")
    p.add_argument("--host", default=None, help="override console.bind_host")
    p.add_argument("--port", type=errors.port, default=None, help="override console.port (0 = any free port)")
    p.add_argument("--check", action="store_true", help="validate the bind/token and exit")
    add_namespace_option(p)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    params, cfg = params_from_args(args)
    try:
        check_bind(params)
    except StartupRefused as exc:
        print(f"hri console: refused to start: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"hri console: ok, would bind {params.bind_host}:{params.port}")
        return 0

    from .nodes.console_node import main as node_main

    return node_main(_ros_args(args, "console.bind_host", "console.port"))


def add_namespace_option(p: argparse.ArgumentParser) -> None:
    """``--namespace NS``: run the node in the stack's namespace (``-r __ns:=NS``), so its relative
    topics and services are that stack's (docs/ros2-interop.md "Namespaces")."""
    p.add_argument("--namespace", type=errors.namespace, default=None, metavar="NS",
                   help="the stack's namespace (e.g. left): its topics, services and stop")


def _ros_args(args, host: str, port: str) -> list[str]:
    """The node's ``--ros-args`` for ``--robot``, ``--namespace`` and ``--host``/``--port`` (the
    parameters ``host``/``port``)."""
    ros = ["--ros-args", "-p", f"robot:={args.robot}"]
    if getattr(args, "namespace", None) not in (None, "/"):
        ros += ["-r", f"__ns:={args.namespace}"]
    if args.host is not None:
        ros += ["-p", f"{host}:={args.host}"]
    if args.port is not None:
        ros += ["-p", f"{port}:={args.port}"]
    return ros


def foxglove_main(argv: list[str] | None = None) -> int:
    """``hri foxglove --robot fr3 [--host H] [--port N]``: run the bridge node
    (:mod:`hri_console.nodes.foxglove_node`) on the default transport: every topic of
    ``console.foxglove.topics`` is forwarded live."""
    from .nodes.foxglove_node import main as node_main

    p = argparse.ArgumentParser(prog="hri foxglove", description="Serve the topics of console.foxglove.topics "
                                "live to Foxglove (WebSocket).")
    errors.add_robot_argument(p, "fr3")
    p.add_argument("--host", default=None, help="override console.foxglove.host")
    p.add_argument("--port", type=errors.port, default=None, help="override console.foxglove.port (0 = any free port)")
    add_namespace_option(p)
    return node_main(_ros_args(p.parse_args(argv), "console.foxglove.host", "console.foxglove.port"))
