"""Quality of service: the one ``QoSProfile`` of the runtime, its presets and ``qos_profile``.

One class for the node layer (endpoint queues, backends) and the wire (rmw_zenoh liveliness
tokens, ``hri_runtime.impl.wire``). Policy names are rmw's, lower case; their rmw enum values (as
``rclpy.qos.ReliabilityPolicy`` & co.) are the tables below. Durations are in seconds, None =
default / infinite.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Optional

__all__ = ["QoSProfile", "qos_profile", "QOS_DEFAULT", "QOS_SENSOR_DATA", "QOS_LATCHED",
           "QOS_CLOCK", "QOS_ROSOUT", "RELIABILITY", "DURABILITY", "HISTORY", "LIVELINESS",
           "RMW_PRESETS", "offered_qos"]

# rmw policy values (rmw/types.h)
RELIABILITY = {"system_default": 0, "reliable": 1, "best_effort": 2, "unknown": 3,
               "best_available": 4}
DURABILITY = {"system_default": 0, "transient_local": 1, "volatile": 2, "unknown": 3,
              "best_available": 4}
HISTORY = {"system_default": 0, "keep_last": 1, "keep_all": 2, "unknown": 3}
LIVELINESS = {"system_default": 0, "automatic": 1, "manual_by_node": 2, "manual_by_topic": 3,
              "unknown": 4, "best_available": 5}
_POLICIES = (("reliability", RELIABILITY), ("durability", DURABILITY), ("history", HISTORY),
             ("liveliness", LIVELINESS))


@dataclass(frozen=True)
class QoSProfile:
    """ROS 2 QoS profile. ``depth``: keep-last N (``history='keep_all'`` ignores it; 0 is the
    rmw default depth, refused for a node's endpoint by :func:`qos_profile`)."""

    depth: int = 10
    reliability: str = "reliable"          # reliable | best_effort (| rmw's other values)
    durability: str = "volatile"           # volatile | transient_local
    history: str = "keep_last"             # keep_last | keep_all
    deadline_s: Optional[float] = None
    lifespan_s: Optional[float] = None
    liveliness: str = "automatic"          # automatic | manual_by_topic
    liveliness_lease_s: Optional[float] = None

    def __post_init__(self):
        for attr, table in _POLICIES:
            v = getattr(self, attr)
            if v not in table:
                raise ValueError(f"QoS {attr} {v!r}: not one of {sorted(table)}")
        if not isinstance(self.depth, int) or isinstance(self.depth, bool) or self.depth < 0:
            raise ValueError(f"QoS depth must be an int >= 0, got {self.depth!r}")

    @property
    def transient_local(self) -> bool:
        return self.durability == "transient_local"

    @property
    def queue_len(self) -> Optional[int]:
        return None if self.history == "keep_all" else int(self.depth)


QOS_DEFAULT = QoSProfile()
QOS_SENSOR_DATA = QoSProfile(depth=5, reliability="best_effort")
QOS_LATCHED = QoSProfile(depth=1, durability="transient_local")
QOS_CLOCK = QoSProfile(depth=1, reliability="best_effort")
QOS_ROSOUT = QoSProfile(depth=1000, durability="transient_local")   # rcl's rosout QoS

_PRESETS = {"default": QOS_DEFAULT, "sensor_data": QOS_SENSOR_DATA, "latched": QOS_LATCHED,
            "transient_local": QOS_LATCHED, "clock": QOS_CLOCK, "services_default": QOS_DEFAULT}


#: rclpy's ``QoSPresetProfiles`` by short key (``ros2 topic pub --qos-profile``), the values of
#: rmw/qos_profiles.h (``system_default``: every policy the middleware's default, depth 0)
RMW_PRESETS = {
    "default": QOS_DEFAULT,
    "system_default": QoSProfile(depth=0, reliability="system_default", durability="system_default",
                                 history="system_default", liveliness="system_default"),
    "sensor_data": QOS_SENSOR_DATA,
    "services_default": QOS_DEFAULT,
    "parameters": QoSProfile(depth=1000),
    "parameter_events": QoSProfile(depth=1000),
    "action_status_default": QoSProfile(depth=1, durability="transient_local"),
    "best_available": QoSProfile(depth=10, reliability="best_available", durability="best_available",
                                 liveliness="best_available"),
    "unknown": QoSProfile(depth=0, reliability="unknown", durability="unknown", history="unknown",
                          liveliness="unknown"),
}

# what a publisher offers for a policy left to the middleware: rmw_zenoh's defaults (reliable,
# volatile, keep-last) and, for best_available, the highest level of service (rmw's rule for
# publishers: reliable, transient local)
_OFFERED = {"reliability": {"system_default": "reliable", "best_available": "reliable"},
            "durability": {"system_default": "volatile", "best_available": "transient_local"},
            "history": {"system_default": "keep_last"},
            "liveliness": {"system_default": "automatic", "best_available": "automatic"}}


def offered_qos(q: QoSProfile, default_depth: int) -> QoSProfile:
    """The concrete profile a publisher offers for ``q``: ``system_default`` / ``best_available``
    policies resolved (table above), depth 0 -> ``default_depth`` (the middleware's); ValueError
    for an ``unknown`` policy (nothing can be offered for it)."""
    kw = {}
    for attr, table in _OFFERED.items():
        v = getattr(q, attr)
        if v == "unknown":
            raise ValueError(f"QoS {attr} 'unknown' cannot be offered by a publisher")
        kw[attr] = table.get(v, v)
    if q.depth == 0:
        kw["depth"] = int(default_depth)
    return qos_profile(replace(q, **kw))


def _policy_name(v: Any) -> Any:
    """An rclpy policy enum member (``ReliabilityPolicy.RELIABLE``) or a name -> 'reliable'."""
    if v is not None and not isinstance(v, str):
        v = getattr(v, "name", v)
    return v.lower() if isinstance(v, str) else v


def qos_profile(qos: Any, *, system_default_depth: bool = False) -> QoSProfile:
    """int depth | QoSProfile | mapping of QoSProfile fields | preset name | rclpy-like object
    (policy enums with ``.name``) -> QoSProfile; ValueError with the reason otherwise. A
    keep-last profile needs depth >= 1 (an endpoint's queue) unless ``system_default_depth``
    (depth 0 = the rmw default, as in a liveliness token)."""
    if qos is None:
        q = QOS_DEFAULT
    elif isinstance(qos, QoSProfile):
        q = qos
    elif isinstance(qos, bool):
        raise ValueError(f"QoS {qos!r}: give a depth, a QoSProfile, a dict or a preset name")
    elif isinstance(qos, int):
        q = QoSProfile(depth=qos)
    elif isinstance(qos, str):
        try:
            q = _PRESETS[qos]
        except KeyError:
            raise ValueError(f"unknown QoS preset {qos!r} (known: {sorted(_PRESETS)})") from None
    else:
        if isinstance(qos, Mapping):
            kw = dict(qos)
        else:
            kw = {f: getattr(qos, f) for f in ("depth", "reliability", "durability", "history", "liveliness")
                  if hasattr(qos, f)}
            if not kw:
                raise ValueError(f"cannot interpret QoS {qos!r}")
        unknown = set(kw) - set(QoSProfile.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown QoS fields {sorted(unknown)}")
        for f, _table in _POLICIES:
            if f in kw:
                kw[f] = _policy_name(kw[f])
        q = QoSProfile(**kw)
    if q.history == "keep_last" and q.depth < 1 and not system_default_depth:
        raise ValueError(f"QoS depth {q.depth} must be >= 1 for keep_last")
    return q
