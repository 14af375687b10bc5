"""Foxglove bridge: serve live ROS 2 topics over the Foxglove WebSocket protocol with
``foxglove-sdk`` (default 127.0.0.1:8765, config ``console.foxglove``).

Each topic is one channel with a ``ros2msg`` schema (the concatenated message definition,
as in MCAP files written by ROS 2) and ``cdr`` message encoding, so Foxglove opens a live
simulation and its MCAP recordings alike. Messages are rosbags dataclasses (what
``hri_runtime.msgs.new`` builds) or already-serialized CDR bytes.
"""
from __future__ import annotations

from typing import Iterable

import foxglove
from foxglove import Channel, Schema
from rosbags.typesys import Stores, get_typestore

_TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)


def ros2msg_schema(type_name: str) -> Schema:
    """Schema of a ROS 2 type, e.g. ``diagnostic_msgs/msg/DiagnosticArray``."""
    text, _ = _TYPESTORE.generate_msgdef(type_name, ros_version=2)
    return Schema(name=type_name, encoding="ros2msg", data=text.encode())


class FoxgloveBridge:
    """``topics``: iterable of (topic, ros2 type name)."""

    def __init__(self, topics: Iterable[tuple[str, str]], host: str = "127.0.0.1", port: int = 8765,
                 name: str = "hri_teleop"):
        self.context = foxglove.Context()
        self.types: dict[str, str] = {}
        self.channels: dict[str, Channel] = {}
        for topic, type_name in topics:
            self.types[topic] = type_name
            self.channels[topic] = Channel(topic, schema=ros2msg_schema(type_name),
                                           message_encoding="cdr", context=self.context)
        self.server = foxglove.start_server(name=name, host=host, port=port, context=self.context)

    @property
    def port(self) -> int:
        return self.server.port

    def publish(self, topic: str, msg, log_time_ns: int | None = None) -> None:
        data = msg if isinstance(msg, (bytes, bytearray)) else _TYPESTORE.serialize_cdr(msg, self.types[topic])
        self.channels[topic].log(bytes(data), log_time=log_time_ns)

    def stop(self) -> None:
        self.server.stop()
