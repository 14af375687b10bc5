"""``FloodFilter``: when to move the peer lock into the kernel (``pulse.link.kernel_flood_filter``).

Under a flood from other hosts -- at least ``flood_filter_min_pps`` datagrams per second dropped
as ``foreign_peer`` while a peer holds the link -- the filter admits only the locked peer's host
for ``flood_filter_hold_s``, then is released and the rate judged again. It is released at once
when the link times out (any headset can connect again) or when the filter is switched off.

The core decides; the carrier applies: ``host_filter(host)`` (injected) attaches a filter that
admits only ``host`` (returns False when the OS refuses) and ``host_filter(None)`` removes it.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Optional


class FloodFilter:
    def __init__(self, min_pps: float, hold_s: float, enabled: bool,
                 host_filter: Optional[Callable[[Optional[str]], bool]] = None,
                 logger: Optional[logging.Logger] = None):
        self.min_pps = float(min_pps)
        self.hold_s = float(hold_s)
        self.host_filter = host_filter
        self.enabled = bool(enabled) and host_filter is not None
        self.log = logger or logging.getLogger("hri_pulse.flood")
        self.host: Optional[str] = None       # host the filter admits (None: not engaged)
        self.until_s = 0.0
        self.engagements = 0
        self._foreign: Optional[int] = None
        self._t: Optional[float] = None

    def set_enabled(self, enabled: bool, why: str = "parameter") -> None:
        """On/off from the next update; off releases an engaged filter at once."""
        self.enabled = bool(enabled) and self.host_filter is not None
        if not self.enabled:
            self._release(why)

    def _release(self, why: str) -> None:
        if self.host is not None:
            self.host_filter(None)
            self.host = None
            self.log.info(f"vr link: kernel flood filter released ({why})")

    def update(self, now_s: float, foreign_total: int, connected: bool, owner: Any) -> None:
        """Once per tick: ``foreign_total`` = the link's ``foreign_peer`` drop counter,
        ``owner`` = the locked peer (``(host, port)`` over UDP)."""
        prev_n, prev_t = self._foreign, self._t
        self._foreign, self._t = foreign_total, now_s
        if not self.enabled:
            return
        if self.host is not None:
            if now_s >= self.until_s or not connected:
                self._release("hold time over" if connected else "link lost")
            return
        if prev_t is None or now_s <= prev_t or not connected or not isinstance(owner, tuple):
            return
        d = foreign_total - prev_n
        if d >= self.min_pps * (now_s - prev_t) and self.host_filter(owner[0]):
            self.host, self.until_s = owner[0], now_s + self.hold_s
            self.engagements += 1
            self.log.warning(f"vr link: flood from other hosts ({d} datagrams in {now_s - prev_t:.3f} s): "
                             f"kernel filter admits only {owner[0]} for {self.hold_s:g} s")

    def status(self) -> dict:
        return {"kernel_filter": self.enabled, "kernel_filter_host": self.host or "-",
                "kernel_filter_engagements": self.engagements}
