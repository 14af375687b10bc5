"""What a launch file resolves to: ``LaunchDescription`` (the processes to start, as
``launch.LaunchDescription``) of ``NodeSpec`` (one process, as ``launch_ros.actions.Node``), and
``LaunchError``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["LaunchError", "NodeSpec", "LaunchDescription"]


class LaunchError(ValueError):
    """A launch file that cannot be parsed or resolved (file, entity and reason in the text)."""


@dataclass
class NodeSpec:
    name: str                                   # label (node name or executable name)
    cmd: list[str]                              # full command line
    pkg: str = ""
    exec: str = ""
    node_name: Optional[str] = None
    namespace: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    params_files: list[str] = field(default_factory=list)
    remaps: list[tuple[str, str]] = field(default_factory=list)
    respawn: bool = False
    respawn_delay_s: Optional[float] = None
    output: str = "screen"
    env: dict[str, str] = field(default_factory=dict)
    missing_executable: bool = False


@dataclass
class LaunchDescription:
    file: str
    nodes: list[NodeSpec] = field(default_factory=list)
    args: dict[str, str] = field(default_factory=dict)       # declared args (final values)
    env: dict[str, str] = field(default_factory=dict)        # set_env

