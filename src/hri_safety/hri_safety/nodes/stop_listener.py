"""``StopListener``: the system stop inside an actuator node (docs/safety.md "System stop contract").

    from hri_safety.nodes.stop_listener import StopListener

    class MyActuator(Node):
        def __init__(self, **kw):
            super().__init__("my_actuator", **kw)
            self.stop = StopListener(self, on_change=self.on_stop)   # params from self.cfg
        def on_stop(self, stopped: bool, reason: str) -> None:
            ...                                   # hold / zero at once, latch what you latch
        def tick(self):
            if self.stop.stopped:                 # authoritative every cycle
                ...                               # output zero / hold

It subscribes ``/safety/stop`` (hri_interfaces/msg/SafetyStop, reliable, TRANSIENT_LOCAL, depth 1)
and checks the heartbeat's age every heartbeat period on a timer of the node's clock (sim time in
lockstep tests). ``stopped`` is True

* before the first state arrives (``reason`` = ``no_stop_heartbeat``; not latched),
* while the supervisor says stopped (``reason`` = its first cause, e.g. ``console: ...``),
* once the last heartbeat is older than ``safety.stop.timeout_s`` (``stop_heartbeat_timeout``);
  this one latches in the listener and clears only when a state carrying a new ``reset_count``
  arrives, i.e. after an explicit ``/safety/reset`` made after the silence.

``on_change(stopped, reason)`` runs on the node's executor thread whenever either changes (not at
construction: read ``.stopped`` in the control loop, it is always current).
"""
from __future__ import annotations

from typing import Callable, Optional, Union

from hri_runtime.qos import QOS_LATCHED

from hri_safety.core.stop import StopParams, StopWatch

from hri_runtime.config.tree import declared_defaults

# the stack's fixed names, declared with their access class in src/hri_safety/parameters.yaml
_NAMES = declared_defaults()["safety"]
STOP_TOPIC = _NAMES["topics"]["stop"]
STOP_REQUEST_TOPIC = _NAMES["topics"]["stop_request"]
RESET_SERVICE = _NAMES["services"]["reset"]
STOP_TYPE = "hri_interfaces/msg/SafetyStop"
STOP_REQUEST_TYPE = "hri_interfaces/msg/StopRequest"

__all__ = ["StopListener", "stop_params", "STOP_TOPIC", "STOP_REQUEST_TOPIC", "RESET_SERVICE",
           "STOP_TYPE", "STOP_REQUEST_TYPE"]


def stop_params(source: Union[StopParams, dict, None] = None, node=None) -> StopParams:
    """StopParams from: StopParams | a merged robot config | its ``safety`` section | its
    ``safety.stop`` section | None (then ``node.cfg`` if the node has one, else the declared
    defaults)."""
    if isinstance(source, StopParams):
        return source
    if source is None and node is not None and isinstance(getattr(node, "cfg", None), dict) \
            and "safety" in node.cfg:
        source = node.cfg
    if source is None:
        return StopParams()
    source = source.get("safety", source)
    return StopParams.from_config(source.get("stop", source))


class StopListener:
    def __init__(self, node, on_change: Optional[Callable[[bool, str], None]] = None,
                 params: Union[StopParams, dict, None] = None, topic: str = STOP_TOPIC):
        self.node = node
        self.params = stop_params(params, node)
        self.watch = StopWatch(self.params)
        self.on_change = on_change
        self.changes = 0
        self._sub = node.create_subscription(STOP_TYPE, topic, self._on_state, qos=QOS_LATCHED)
        self._timer = node.create_timer(self.params.period_s, self._check)

    # ---- what actuator nodes read
    @property
    def stopped(self) -> bool:
        return self.watch.stopped

    @property
    def reason(self) -> str:
        return self.watch.reason

    @property
    def cause(self) -> str:
        """``reason`` of a stop that latches (a timeout or the supervisor's), "" otherwise."""
        return self.watch.cause

    def age_s(self) -> Optional[float]:
        """Seconds since the last heartbeat (None before the first)."""
        return self.watch.age_s(self._now())

    def status(self) -> dict:
        """For state topics / diagnostics."""
        age = self.age_s()
        return {"stopped": self.stopped, "reason": self.reason, "sources": list(self.watch.remote_sources),
                "heartbeat_age_s": None if age is None else round(age, 3), "timeouts": self.watch.timeouts,
                "reset_count": self.watch.reset_count}

    # ---- internals
    def _now(self) -> float:
        return self.node.get_clock().now_s()

    def _on_state(self, msg) -> None:
        if self.watch.on_state(msg.stopped, msg.reason, msg.sources, msg.heartbeat_seq,
                               getattr(msg, "reset_count", 0), self._now()):
            self._notify()

    def _check(self) -> None:
        if self._sub.queue.items:      # states arrived that this busy executor has not run yet: not silence
            return
        if self.watch.check(self._now()):
            self._notify()

    def _notify(self) -> None:
        self.changes += 1
        log = self.node.get_logger()
        if self.stopped:
            log.warning(f"SYSTEM STOP: {self.reason}")
        else:
            log.info("system stop released")
        if self.on_change is not None:
            self.on_change(self.stopped, self.reason)

    def destroy(self) -> None:
        self.node.destroy_timer(self._timer)
        self.node.destroy_subscription(self._sub)
