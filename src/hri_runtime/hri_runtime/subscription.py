"""``Subscription``: ``Node.create_subscription`` (keep-last queue on the executor, CDR decoded
before the callback; a malformed payload is dropped and counted on the node)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from hri_runtime import msgs
from hri_runtime.executors import SubQueue
from hri_runtime.qos import QoSProfile

if TYPE_CHECKING:
    from hri_runtime.node import Node

__all__ = ["Subscription"]


class Subscription:
    def __init__(self, node: "Node", topic: str, msg_type: str, callback, qos: QoSProfile, raw: bool):
        self.node, self.topic_name, self.msg_type, self.qos = node, topic, msg_type, qos
        self.raw = raw
        self.queue = SubQueue(None, qos.queue_len)
        # what the backend calls per sample, deliver(data, meta=None) (C: runs the callback inline
        # when the executor is idle, else queues; meta is backend-specific: Zenoh gives
        # (attachment bytes, key), see wire.message_info). The queue's callback is its run().
        self._deliver = node.context.executor.delivery(
            self.queue, callback, None if raw else msgs.deserialize, msg_type, self._malformed, msgs.DecodeError)
        self._handle = None

    @property
    def topic(self) -> str:
        return self.topic_name

    @property
    def callback(self):
        return self._deliver.callback

    @callback.setter
    def callback(self, fn) -> None:
        self._deliver.callback = fn

    @property
    def received(self) -> int:
        """Messages handed to the callback (or refused as malformed)."""
        return self._deliver.received

    @property
    def dropped(self) -> int:
        """Messages dropped by keep-last (queue full before the executor took them)."""
        return self.queue.dropped

    def _malformed(self, text: str) -> None:
        self.node._reject(self.topic_name, "malformed_cdr", text)

    def destroy(self) -> None:
        self.queue.active = False
        self._deliver.close()
        if self._handle is not None:
            self._handle.destroy()
        if self in self.node._subscriptions:
            self.node._subscriptions.remove(self)
