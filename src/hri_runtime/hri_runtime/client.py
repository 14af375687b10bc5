"""``Client``: ``Node.create_client`` (``call_async`` -> ``Future``, blocking ``call``)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

from hri_runtime import msgs
from hri_runtime.qos import QoSProfile
from hri_runtime.task import Future

if TYPE_CHECKING:
    from hri_runtime.node import Node

__all__ = ["Client", "ServiceUnavailableError"]


class ServiceUnavailableError(RuntimeError):
    """No server for a service call (inproc: immediately; network backends: on timeout)."""


class Client:
    def __init__(self, node: "Node", srv_type: str, name: str, raw, qos: QoSProfile):
        self.node, self.srv_type, self.srv_name, self._raw, self.qos = node, srv_type, name, raw, qos
        self.req_type, self.resp_type = msgs.srv_types(srv_type)

    def service_is_ready(self) -> bool:
        return bool(self._raw.service_is_ready())

    def wait_for_service(self, timeout_s: Optional[float] = None) -> bool:
        ctx = self.node.context
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while not self.service_is_ready():
            if getattr(ctx, "kind", "") == "inproc":
                return False           # nothing can appear without the test creating it
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(0.01)
        return True

    def call_async(self, request) -> Future:
        data = msgs.serialize(request, self.req_type) if not isinstance(request, (bytes, bytearray)) \
            else bytes(request)
        fut = Future()
        ex = self.node.context.executor

        def on_response(resp: bytes) -> None:  # any thread
            ex.post(lambda: self._complete(fut, resp))

        def on_error(exc: BaseException) -> None:
            ex.post(lambda: fut.set_exception(exc))

        self._raw.call(data, on_response, on_error)
        return fut

    def _complete(self, fut: Future, data: bytes) -> None:
        try:
            fut.set_result(msgs.deserialize(data, self.resp_type))
        except msgs.DecodeError as e:
            self.node._reject(self.srv_name, "malformed_cdr", str(e))
            fut.set_exception(e)

    def call(self, request, timeout_s: Optional[float] = None):
        """Blocking call: the response, or TimeoutError / the call's exception. Never from a
        callback of the same context (it would deadlock; inproc spins the fake clock)."""
        fut = self.call_async(request)
        if not self.node.context.wait_future(fut, timeout_s):
            raise TimeoutError(f"service {self.srv_name}: no response within {timeout_s} s")
        return fut.result()

    def destroy(self) -> None:
        self._raw.destroy()
        if self in self.node._clients:
            self.node._clients.remove(self)

