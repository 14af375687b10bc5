"""Foxglove bridge: serve live ROS 2 topics over the Foxglove WebSocket protocol with
``foxglove-sdk`` (default 127.0.0.1:8765, config ``console.foxglove``).

Each topic is one channel with a ``ros2msg`` schema (the concatenated message definition,
as in MCAP files written by ROS 2) and ``cdr`` message encoding, so Foxglove opens a live
simulation and its MCAP recordings alike. Messages are rosbags dataclasses (what
``hri_runtime.msgs.new`` builds) or already-serialized CDR bytes.

Latched topics (``latched``: e.g. ``/robot_description``, ``/tf_static``, published once,
TRANSIENT_LOCAL in ROS) keep their last message, which is sent again whenever a client
subscribes, so a Foxglove opened after the stack still gets the URDF and the static frames.
``assets``: a function URI -> bytes (or None) answers Foxglove's ``fetchAsset`` requests, e.g.
the ``package://`` meshes of a URDF on a machine without ROS.
"""
from __future__ import annotations

import threading
from typing import Callable, Iterable, Optional

import foxglove
from foxglove import Channel, Schema
from foxglove.websocket import ServerListener
from rosbags.typesys import Stores, get_typestore

_TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)


def ros2msg_schema(type_name: str) -> Schema:
    """Schema of a ROS 2 type, e.g. ``diagnostic_msgs/msg/DiagnosticArray``."""
    text, _ = _TYPESTORE.generate_msgdef(type_name, ros_version=2)
    return Schema(name=type_name, encoding="ros2msg", data=text.encode())


class FoxgloveBridge:
    """``topics``: iterable of (topic, ros2 type name)."""

    def __init__(self, topics: Iterable[tuple[str, str]], host: str = "127.0.0.1", port: int = 8765,
                 name: str = "hri_teleop", latched: Iterable[str] = (),
                 assets: Optional[Callable[[str], Optional[bytes]]] = None):
        self.context = foxglove.Context()
        self.types: dict[str, str] = {}
        self.channels: dict[str, Channel] = {}
        self.latched = set(latched)
        self._last: dict[str, tuple[bytes, Optional[int]]] = {}
        self._lock = threading.Lock()
        for topic, type_name in topics:
            self.types[topic] = type_name
            self.channels[topic] = Channel(topic, schema=ros2msg_schema(type_name),
                                           message_encoding="cdr", context=self.context)
        kw = {"asset_handler": assets} if assets is not None else {}
        self.server = foxglove.start_server(name=name, host=host, port=port, context=self.context,
                                            server_listener=_Listener(self), **kw)

    @property
    def port(self) -> int:
        return self.server.port

    def publish(self, topic: str, msg, log_time_ns: int | None = None) -> None:
        data = msg if isinstance(msg, (bytes, bytearray)) else _TYPESTORE.serialize_cdr(msg, self.types[topic])
        if topic in self.latched:
            with self._lock:
                self._last[topic] = (bytes(data), log_time_ns)
        self.channels[topic].log(bytes(data), log_time=log_time_ns)

    def _resend(self, topic: str) -> None:
        with self._lock:
            last = self._last.get(topic)
        if last is not None:
            self.channels[topic].log(last[0], log_time=last[1])

    def stop(self) -> None:
        self.server.stop()


class _Listener(ServerListener):
    """A new subscription to a latched channel gets its last message (ROS's TRANSIENT_LOCAL)."""

    def __init__(self, bridge: FoxgloveBridge):
        self.bridge = bridge

    def on_subscribe(self, client, channel) -> None:
        if channel.topic in self.bridge.latched:
            self.bridge._resend(channel.topic)
