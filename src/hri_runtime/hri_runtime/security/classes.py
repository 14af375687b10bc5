"""The access classes of topic and service names (:data:`CLASSES`) and the check of a declaration's
``access:`` field: what both the declaration reader (config.py) and the allow-list generator
(access.py) need, apart from both so that neither imports the other."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AccessClass", "CLASSES", "check_access_declaration"]


@dataclass(frozen=True)
class AccessClass:
    name: str
    kind: str                 # topic | service
    roles: tuple[str, ...]    # the remote roles that may put (topic) / call (service)
    actuating: bool           # a message or call can move the robot or change how it moves
    meaning: str


CLASSES: dict[str, AccessClass] = {c.name: c for c in (
    AccessClass("command", "topic", ("operator",), True,
                "moves the robot or changes how it moves (references, twists, gains, modes, a fault reset)"),
    AccessClass("feedback", "topic", ("robot",), True,
                "a measurement or the safety state a controller or actuator acts on (joint states, "
                "wrench, odometry, the stop heartbeat, the clock): from the robot side only"),
    AccessClass("state", "topic", ("robot", "operator"), False,
                "shown or recorded, never acted on (mode and controller state, diagnostics, logs)"),
    AccessClass("stop_request", "topic", ("robot", "operator", "observer"), False,
                "requests the system stop; only ever stops, never releases"),
    AccessClass("read_only_service", "service", ("robot", "operator", "observer"), False,
                "answers without changing anything (parameter reads)"),
    AccessClass("parameter", "service", ("operator",), True, "sets parameters"),
    AccessClass("operator_service", "service", ("operator",), True,
                "the stop reset, tuning jobs, gains sent to a robot, a re-home"),
)}

def check_access_declaration(value: Any) -> str | None:
    """None if ``value`` is a valid ``access:`` of a declaration (a class, or a mapping of name
    suffixes to classes), else what it should be (config.py's declaration check calls this)."""
    if isinstance(value, str):
        return None if value in CLASSES else f"one of {sorted(CLASSES)}"
    if isinstance(value, dict) and value and all(
            isinstance(k, str) and k and isinstance(v, str) and v in CLASSES for k, v in value.items()):
        return None
    return f"a class among {sorted(CLASSES)} or a mapping name suffix -> class"
