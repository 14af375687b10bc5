"""``hri console``: serve the operator console for a robot config.

    hri console --robot fr3                      # 127.0.0.1:<console.port>
    hri console --robot fr3 --host 0.0.0.0       # refused unless console.token is set
    hri console --robot fr3 --check              # validate bind/token and exit

Standalone mode (until the hri_runtime node lands): PID gains go to an
hri_pid_tuning ``PidConfigurationStorage`` over the robot's joints; safe stop is logged.
"""
from __future__ import annotations

import argparse
import logging
import sys
import threading

from .core.protocol import CommandGate, ConsoleParams, StartupRefused, check_bind

_log = logging.getLogger("hri_console")


def params_from_args(args) -> tuple[ConsoleParams, dict]:
    from hri_runtime.config import load_robot_config

    cfg = load_robot_config(args.robot)
    sec = dict(cfg["console"])
    if args.host is not None:
        sec["bind_host"] = args.host
    if args.port is not None:
        sec["port"] = args.port
    names = (cfg.get("joints") or {}).get("names") or []
    return ConsoleParams.from_config(sec, num_joints=max(1, len(names))), cfg


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hri console", description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", default="fr3")
    p.add_argument("--host", default=None, help="override console.bind_host")
    p.add_argument("--port", type=int, default=None, help="override console.port")
    p.add_argument("--check", action="store_true", help="validate the bind/token and exit")
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

    from hri_pid_tuning.core.pid import PIDGains
    from hri_pid_tuning.core.services import PidConfigurationStorage

    from .core.pid_bridge import PidBridge
    from .server import ConsoleServer

    names = (cfg.get("joints") or {}).get("names") or ["joint0"]
    bridge = PidBridge(PidConfigurationStorage(names, PIDGains(1.0)))

    def dispatch(cmd):
        if cmd.type.startswith("pid_"):
            return bridge.dispatch(cmd)
        _log.info("command %s %s (no runtime attached)", cmd.type, cmd.args)

    gate = CommandGate(params, dispatch=dispatch, on_safe_stop=lambda: _log.warning("SAFE STOP"),
                       log=_log.info)
    srv = ConsoleServer(params, gate, snapshot=lambda: {"modes": list(params.modes), **bridge.snapshot()})
    port = srv.start()
    print(f"hri console: http://{params.bind_host}:{port}/", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    return 0
