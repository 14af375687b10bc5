"""``Service``: ``Node.create_service`` (request decoded, callback on the executor thread,
response encoded). A deferred service answers later: its callback gets ``respond`` and calls it
once with the response (e.g. when a long job has finished)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from hri_runtime import msgs
from hri_runtime.qos import QoSProfile

if TYPE_CHECKING:
    from hri_runtime.node import Node

__all__ = ["Service"]


class Service:
    def __init__(self, node: "Node", srv_type: str, name: str, callback, qos: QoSProfile,
                 deferred: bool = False):
        self.node, self.srv_type, self.srv_name, self.callback, self.qos = node, srv_type, name, callback, qos
        self.req_type, self.resp_type = msgs.srv_types(srv_type)
        self.deferred = deferred
        self._handle = None
        self.handled = 0

    def _on_request(self, data: bytes, respond: Callable[[bytes], None]) -> None:  # any thread
        self.node.context.executor.post(lambda: self._handle_request(data, respond))

    def _handle_request(self, data: bytes, respond) -> None:  # executor thread
        try:
            req = msgs.deserialize(data, self.req_type)
        except msgs.DecodeError as e:
            self.node._reject(self.srv_name, "malformed_cdr", str(e))
            return
        resp = msgs.new(self.resp_type)
        if self.deferred:
            self.callback(req, resp, self._responder(respond))
            return
        out = self.callback(req, resp)
        if out is None:
            self.node._reject(self.srv_name, "callback_returned_none",
                              "service callback returned None; sending the default response")
            out = resp
        self.handled += 1
        respond(msgs.serialize(out, self.resp_type))

    def _responder(self, respond) -> Callable[[object], None]:
        """``respond(response)`` of a deferred request: sends it once (later calls are ignored);
        call it on the executor thread (a callback, a timer, a done callback)."""
        sent = []

        def send(out) -> None:
            if sent:
                return
            sent.append(True)
            self.handled += 1
            respond(msgs.serialize(out, self.resp_type))
        return send

    def destroy(self) -> None:
        if self._handle is not None:
            self._handle.destroy()
        if self in self.node._services:
            self.node._services.remove(self)

