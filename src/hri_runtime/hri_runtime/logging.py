"""Node logging: ``NodeLogger`` (``node.get_logger()``, as rclpy's RcutilsLogger) and
``RosoutHandler`` (every Python log record of a node process on /rosout, as rcl's child
loggers)."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from hri_runtime.node import Node

__all__ = ["NodeLogger", "RosoutHandler"]


class NodeLogger:
    """rclpy-like logger: debug/info/warn/warning/error/fatal(msg, once=False,
    throttle_duration_sec=None). Python logging underneath, logger 'hri.<node fqn>'."""

    def __init__(self, name: str, clock: Callable[[], float] = time.monotonic):
        self.name = name
        self._log = logging.getLogger("hri" + name.replace("/", "."))
        self._once: set = set()
        self._last: dict = {}
        self._clock = clock
        self.sink: Optional[Callable[[int, str], None]] = None   # /rosout publisher of the node
        self._ros_name = name.lstrip("/").replace("/", ".")      # as rcl prints it: 'ns.node'

    def get_child(self, suffix: str) -> "NodeLogger":
        return NodeLogger(f"{self.name}.{suffix}", self._clock)

    def set_level(self, level) -> None:
        self._log.setLevel(level if isinstance(level, int) else str(level).upper())

    def _emit(self, level: int, msg: str, once: bool = False, throttle_duration_sec=None,
              **_ignored) -> bool:
        key = (level, str(msg))
        if once:
            if key in self._once:
                return False
            self._once.add(key)
        if throttle_duration_sec:
            now = self._clock()
            last = self._last.get(key)
            if last is not None and now - last < throttle_duration_sec:
                return False
            self._last[key] = now
        self._log.log(level, "[%s]: %s", self._ros_name, msg, extra={"hri_rosout": True})
        if self.sink is not None and self._log.isEnabledFor(level):
            self.sink(level, str(msg))
        return True

    def debug(self, msg, **kw):
        return self._emit(logging.DEBUG, msg, **kw)

    def info(self, msg, **kw):
        return self._emit(logging.INFO, msg, **kw)

    def warn(self, msg, **kw):
        return self._emit(logging.WARNING, msg, **kw)

    warning = warn

    def error(self, msg, **kw):
        return self._emit(logging.ERROR, msg, **kw)

    def fatal(self, msg, **kw):
        return self._emit(logging.CRITICAL, msg, **kw)


class RosoutHandler(logging.Handler):
    """Routes every Python log record of a node process (core/module loggers such as
    ``hri_arm_teleop.core.clutch``) to the node's /rosout as a child logger
    (``<node>.<logger name>``), as rcl does for child loggers. Records of the node's own
    NodeLogger already went there (marked ``hri_rosout``) and are skipped. Installed on the
    root logger by :func:`run_node` for the node's lifetime."""

    def __init__(self, node: "Node"):
        super().__init__()
        self.node = node

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "hri_rosout", False) or getattr(self.node, "_rosout", None) is None:
            return
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001  (a bad format string must not break the node)
            text = str(record.msg)
        lv = max(k for k in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
                 if k <= max(record.levelno, logging.DEBUG))
        self.node._to_rosout(lv, text, child=record.name, file=record.pathname or "",
                             function=record.funcName or "", line=int(record.lineno or 0))

