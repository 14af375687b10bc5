"""``Publisher``: ``Node.create_publisher`` (serializes a message to CDR, hands the bytes to the
backend; a backend that offers ``publish_messages`` does both in one call)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from hri_runtime import msgs
from hri_runtime.qos import QoSProfile

if TYPE_CHECKING:
    from hri_runtime.node import Node

__all__ = ["Publisher"]


class Publisher:
    def __init__(self, node: "Node", raw, topic: str, msg_type: str, qos: QoSProfile):
        self.node, self._raw, self.topic_name, self.msg_type, self.qos = node, raw, topic, msg_type, qos
        self._raw_publish = raw.publish          # bound once (hot path)
        self._published = 0
        fused = getattr(raw, "publish_messages", None)
        if fused is not None:   # serialize + put in one C call (Zenoh): no Python frame per message
            self.publish = fused(msgs.serialize, msg_type)

    @property
    def published(self) -> int:
        """Messages published so far."""
        return self._raw.published if "publish" in self.__dict__ else self._published

    @property
    def topic(self) -> str:
        return self.topic_name

    def publish(self, msg) -> None:
        """Publish a message of this publisher's type (or ready CDR bytes, as rclpy allows)."""
        if type(msg) is bytes:
            data = msg
        elif isinstance(msg, (bytes, bytearray, memoryview)):
            data = bytes(msg)
        else:
            data = msgs.serialize(msg, self.msg_type)
        self._published += 1
        self._raw_publish(data)

    def get_subscription_count(self) -> int:
        f = getattr(self._raw, "get_subscription_count", None)
        return int(f()) if f else -1

    def destroy(self) -> None:
        self._raw.destroy()
        if self in self.node._publishers:
            self.node._publishers.remove(self)

