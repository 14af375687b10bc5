"""Refusing an unprotected bind off loopback (one rule for every network-facing receiver).

A server that binds a non-loopback address must be protected (the console by ``console.token``,
the headset receivers by packet authentication, ``pulse.auth``); otherwise it refuses to start
with :class:`StartupRefused`, an input error: one line and exit code 2 from the ``hri`` commands
and from ``run_node`` (:mod:`hri_runtime.errors`)."""
from __future__ import annotations

import ipaddress

__all__ = ["StartupRefused", "check_bind", "is_loopback"]


class StartupRefused(ValueError):
    """The server must not start with this configuration (an input error: one line, exit 2)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1); False for a wildcard
    (``''``, ``0.0.0.0``, ``::``, ``*``), a LAN address or a name."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host).strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(name: str, host: str, protected: bool, needs: str) -> None:
    """Raise :class:`StartupRefused` ``"<name> '<host>' is not loopback: <needs>"`` when ``host``
    is not a loopback address and the server is not ``protected``."""
    if not protected and not is_loopback(host):
        raise StartupRefused(f"{name} {host!r} is not loopback: {needs}")
