"""``/diagnostics`` of a node, as ROS 2's ``diagnostic_updater`` does it: an :class:`Updater`
owns the publisher and a list of tasks; each task fills a :class:`DiagnosticStatusWrapper`
(level and message with :meth:`~DiagnosticStatusWrapper.summary`, key/values with
:meth:`~DiagnosticStatusWrapper.add`) from the ``status()`` of a core; one
``diagnostic_msgs/DiagnosticArray`` carries every task's status, named ``<prefix>: <task>``
(the prefix is the node's name unless given; an empty prefix: the task's name alone).

Publishing: :meth:`Updater.update` publishes when ``period_s`` has passed on the node's clock
since the last array (call it from a timer: ``timer=True`` makes one, or from the node's own tick
so it runs in lockstep with it); :meth:`Updater.force_update` publishes at once (a latched fault,
a stop)."""
from __future__ import annotations

from typing import Any, Callable

from hri_runtime import msgs

__all__ = ["OK", "WARN", "ERROR", "STALE", "DiagnosticStatusWrapper", "Updater"]

#: diagnostic_msgs/DiagnosticStatus levels
OK, WARN, ERROR, STALE = 0, 1, 2, 3

ARRAY_TYPE = "diagnostic_msgs/msg/DiagnosticArray"


class DiagnosticStatusWrapper:
    """One status as a task fills it (diagnostic_updater's wrapper of DiagnosticStatus)."""

    def __init__(self, name: str = "", hardware_id: str = ""):
        self.name, self.hardware_id = name, hardware_id
        self.level, self.message = OK, ""
        self.values: list[tuple[str, str]] = []

    def summary(self, level: int, message: str) -> None:
        """The status' level (OK/WARN/ERROR/STALE) and message."""
        if level not in (OK, WARN, ERROR, STALE):
            raise ValueError(f"diagnostic level {level!r}: one of OK 0, WARN 1, ERROR 2, STALE 3")
        self.level, self.message = int(level), str(message)

    def add(self, key: str, value: Any) -> None:
        """A key/value (the value as ``str``)."""
        self.values.append((str(key), str(value)))

    def to_msg(self):
        return msgs.new("diagnostic_msgs/msg/DiagnosticStatus", level=self.level, name=self.name,
                        message=self.message, hardware_id=self.hardware_id,
                        values=[msgs.new("diagnostic_msgs/msg/KeyValue", key=k, value=v) for k, v in self.values])


class Updater:
    """The ``/diagnostics`` publisher of ``node`` with its tasks (``add(name, fn)``,
    ``fn(stat: DiagnosticStatusWrapper)``), ``hardware_id`` on every status, at most one array
    per ``period_s`` from :meth:`update` (``timer``: a node timer calls it), any time from
    :meth:`force_update`."""

    def __init__(self, node, hardware_id: str, period_s: float, *, topic: str = "/diagnostics",
                 timer: bool = False, qos: Any = 10, prefix: str | None = None):
        if not period_s > 0:
            raise ValueError(f"diagnostics period {period_s!r} s: must be > 0")
        self.node, self.hardware_id, self.period_s = node, str(hardware_id), float(period_s)
        self.prefix = node.get_name() if prefix is None else str(prefix)
        self._period_ns = round(self.period_s * 1e9)
        self._tasks: list[tuple[str, Callable[[DiagnosticStatusWrapper], None]]] = []
        self._last_ns: int | None = None
        self.published = 0
        self.pub = node.create_publisher(ARRAY_TYPE, topic, qos=qos)
        if timer:
            node.create_timer(self.period_s, self.update)

    def add(self, name: str, fn: Callable[[DiagnosticStatusWrapper], None]) -> None:
        """A task: ``fn(stat)`` fills the status named ``<prefix>: <name>`` at every array."""
        self._tasks.append((str(name), fn))

    def update(self) -> bool:
        """Publish when ``period_s`` has passed since the last array (a microsecond of slack for
        timers that fire on the period); True when it published."""
        now = self.node.get_clock().now()
        if self._last_ns is not None and now.nanoseconds - self._last_ns < self._period_ns - 1000:
            return False
        self._publish(now)
        return True

    def force_update(self) -> None:
        """Publish now (and restart the period)."""
        self._publish(self.node.get_clock().now())

    def statuses(self) -> list[DiagnosticStatusWrapper]:
        """Every task's status as it is now (what the next array carries)."""
        out = []
        for name, fn in self._tasks:
            stat = DiagnosticStatusWrapper(f"{self.prefix}: {name}" if self.prefix else name, self.hardware_id)
            fn(stat)
            out.append(stat)
        return out

    def _publish(self, now) -> None:
        header = msgs.new("std_msgs/msg/Header", stamp=now.to_msg())
        self.pub.publish(msgs.new(ARRAY_TYPE, header=header, status=[s.to_msg() for s in self.statuses()]))
        self._last_ns = now.nanoseconds
        self.published += 1
