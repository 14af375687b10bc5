"""``Subscription``: ``Node.create_subscription`` (keep-last queue on the executor, CDR decoded
before the callback; a malformed payload is dropped and counted on the node)."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from . import msgs
from .executors import SubQueue
from .qos import QoSProfile

if TYPE_CHECKING:
    from .node import Node

__all__ = ["Subscription"]


class Subscription:
    def __init__(self, node: "Node", topic: str, msg_type: str, callback, qos: QoSProfile, raw: bool):
        self.node, self.topic_name, self.msg_type, self.callback, self.qos = node, topic, msg_type, callback, qos
        self.raw = raw
        self.received = 0
        self.queue = SubQueue(self._on_item, qos.queue_len)
        # what the backend calls per sample, deliver(data, meta): straight into the executor
        # (meta is backend-specific: Zenoh gives (attachment bytes, key), see wire.message_info)
        self._deliver = functools.partial(node.context.executor.enqueue, self.queue)
        self._handle = None

    @property
    def topic(self) -> str:
        return self.topic_name

    @property
    def dropped(self) -> int:
        """Messages dropped by keep-last (queue full before the executor took them)."""
        return self.queue.dropped

    def _on_item(self, data: bytes, _meta: Any = None) -> None:  # under the executor lock (executor or transport thread)
        self.received += 1
        if self.raw:
            self.callback(data)
            return
        try:
            msg = msgs.deserialize(data, self.msg_type)
        except msgs.DecodeError as e:
            self.node._reject(self.topic_name, "malformed_cdr", str(e))
            return
        self.callback(msg)

    def destroy(self) -> None:
        self.queue.active = False
        if self._handle is not None:
            self._handle.destroy()
        if self in self.node._subscriptions:
            self.node._subscriptions.remove(self)

