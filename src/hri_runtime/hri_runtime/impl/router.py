"""``hri router``: a standalone Zenoh router (what ``rmw_zenohd`` is to ROS 2), so no launch
owns the network: start it first, every ``hri launch`` / node / CLI connects to it.

Configuration: ``runtime.zenoh`` of the config tree (defaults, or ``--robot``), with
``--set key.path=value`` overrides (as ``hri config``): listens on
``router_listen_endpoints`` (loopback ``tcp/127.0.0.1:7447`` by default), links to the routers
of ``router_connect_endpoints`` (router-to-router: the robot PC and the operator PC each run
one, see docs/deployment.md), TLS with client certificates from ``runtime.zenoh.tls`` and
access control from ``runtime.zenoh.access_control``. ``--listen`` / ``--connect`` replace the
endpoint lists. Runs until SIGINT/SIGTERM; a bad config, a missing certificate or a busy port
is one line, exit 2.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Optional

from hri_runtime import errors
from hri_runtime.signals import StopFlag

__all__ = ["router_main", "router_params"]


def router_params(robot: Optional[str] = None, sets: Optional[list[str]] = None,
                  listen: Optional[list[str]] = None, connect: Optional[list[str]] = None):
    """The ZenohParams of a router and the config its access-control rules are generated from
    (``hri_runtime.security.access``): the robot config when ``robot`` is given, else the declared
    defaults, plus overrides; the ``runtime`` section validated. Raises ConfigError /
    ValueError / FileNotFoundError with one-line messages."""
    import hri_runtime.config.tree as cfgmod
    from hri_runtime.impl.zenoh_backend import ZenohParams

    sets = list(sets or [])
    if robot:
        data = cfgmod.load_robot_config(robot, overrides=sets or None)
        runtime = data["runtime"]
    else:
        root = cfgmod.find_config_root()
        declarations = cfgmod.load_declarations(root)
        path = declarations.files["runtime"]
        data = cfgmod.declared_defaults(root)
        origin: dict = {}
        if sets:
            data = cfgmod.deep_merge(data, cfgmod._overrides_to_tree(sets), origin, "<command line>")
        runtime = cfgmod.expand_env(data["runtime"], str(path), ("runtime",))
        # the runtime section validated against its declaration (as a robot config would be)
        cfgmod.validate_section("runtime", runtime, declarations, str(path), origin)
    p = ZenohParams.from_config(runtime)
    if listen:
        p = p.with_(router_listen_endpoints=listen)
    if connect is not None:
        p = p.with_(router_connect_endpoints=connect)
    if p.tls.root_ca_certificate:
        for key in ("root_ca_certificate", "certificate", "private_key"):
            f = getattr(p.tls, key)
            if not f:
                raise ValueError(f"runtime.zenoh.tls.{key} is empty but root_ca_certificate is set: "
                                 f"give this side's certificate and key")
            if not Path(f).is_file():
                raise FileNotFoundError(f"runtime.zenoh.tls.{key}: no such file {f}")
    elif any(e.startswith("tls/") for e in (*p.router_listen_endpoints, *p.router_connect_endpoints)):
        raise ValueError("a tls/ endpoint needs runtime.zenoh.tls.root_ca_certificate, certificate and "
                         "private_key (see docs/deployment.md)")
    return p, data


def router_main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="hri router", description="A standalone Zenoh router (rmw_zenohd's role).")
    errors.add_robot_argument(ap, None, default_text="the declared defaults of runtime.zenoh")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="config override, e.g. runtime.zenoh.access_control.enabled=true (repeatable)")
    ap.add_argument("--listen", action="append", metavar="ENDPOINT",
                    help="listen here instead of runtime.zenoh.router_listen_endpoints (repeatable)")
    ap.add_argument("--connect", action="append", metavar="ENDPOINT",
                    help="link to this router instead of runtime.zenoh.router_connect_endpoints (repeatable)")
    ap.add_argument("--print-config", action="store_true", help="print the Zenoh configuration and exit")
    a = ap.parse_args(argv)
    stop = StopFlag()        # handlers first (StopFlag: a handler takes no lock): a Ctrl-C during start-up is a clean stop too
    old = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        from hri_runtime.impl import zenoh_backend as zb

        params, cfg = router_params(a.robot, a.sets, a.listen, a.connect)
        if a.print_config:
            import json

            for s, h in old.items():
                signal.signal(s, h)
            print(json.dumps(zb.session_config(params, "router", cfg=cfg), indent=2, sort_keys=True))
            return 0
        session = zb.start_router(params.router_listen_endpoints, params, cfg)
    except Exception as e:  # noqa: BLE001
        for s, h in old.items():
            signal.signal(s, h)
        if not errors.is_input_error(e):
            raise
        return errors.print_error("hri router", e)
    acl = "access control on" if params.access_control.enabled else "no access control"
    tls = "TLS with client certificates" if zb.tls_config(params.tls) else "no TLS"
    print(f"hri router: zenoh router {session.zid()} listening on {', '.join(params.router_listen_endpoints)}"
          + (f", linked to {', '.join(params.router_connect_endpoints)}" if params.router_connect_endpoints else "")
          + f" ({tls}, {acl}); Ctrl-C stops", file=sys.stderr, flush=True)
    try:
        stop.wait()            # the signal handler sets it
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        session.close()
    print("hri router: stopped", file=sys.stderr, flush=True)
    return 0
