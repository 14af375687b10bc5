"""``Future``: the result of an asynchronous call (as ``rclpy.task.Future``)."""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

__all__ = ["Future"]


class Future:
    """Result of ``Client.call_async``: done(), result(), exception(), add_done_callback(fn),
    wait(timeout_s). Done callbacks run on the executor thread (where the future completes)."""

    def __init__(self) -> None:
        self._ev = threading.Event()
        self._result: Any = None
        self._exc: Optional[BaseException] = None
        self._callbacks: list[Callable[["Future"], None]] = []
        self._lock = threading.Lock()

    def done(self) -> bool:
        return self._ev.is_set()

    def result(self) -> Any:
        """The response (None while pending); raises the exception if the call failed."""
        if self._exc is not None:
            raise self._exc
        return self._result

    def exception(self) -> Optional[BaseException]:
        return self._exc

    def wait(self, timeout_s: Optional[float] = None) -> bool:
        return self._ev.wait(timeout_s)

    def _complete(self) -> None:
        with self._lock:
            cbs, self._callbacks = self._callbacks, []
            self._ev.set()
        for fn in cbs:
            fn(self)

    def set_result(self, value: Any) -> None:
        if self.done():
            return
        self._result = value
        self._complete()

    def set_exception(self, exc: BaseException) -> None:
        if self.done():
            return
        self._exc = exc
        self._complete()

    def add_done_callback(self, fn: Callable[["Future"], None]) -> None:
        with self._lock:
            if not self._ev.is_set():
                self._callbacks.append(fn)
                return
        fn(self)

