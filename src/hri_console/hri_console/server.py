"""Console HTTP + WebSocket carrier (websockets, asyncio) with token auth.

Serves the static page from ``hri_console/web/`` and a WebSocket at ``/ws``. Every
request (page, its script, and the WebSocket) must carry the token when one is configured
(``?token=`` query, ``X-HRI-Token`` header, or the HttpOnly SameSite=Strict cookie set when the
page was opened with a valid ``?token=``); otherwise 401. A non-loopback bind without a token
refuses to start (:func:`hri_console.core.protocol.check_bind`).

Before the token, every request passes the Host and Origin allow-lists
(:func:`hri_console.core.protocol.host_ok` / ``origin_ok``): a ``Host`` that is not a loopback
name, the bind address or in ``console.allowed_hosts`` (DNS rebinding), or an ``Origin`` other
than the console's own or one in ``console.allowed_origins`` (another web page driving the
WebSocket) gets 403, counted in ``refused_by``.

Client frames are parsed in the receive coroutine of each connection. ``safe_stop`` is
executed right there, as soon as its frame is read; every other command runs in order on
one worker thread, so a slow service call never delays a safe stop or the state broadcast.

State frames: built once per period (bounded, :func:`hri_console.core.protocol.state_frame`; a
frame that fails to build is counted in ``frame_errors`` and skipped, never fatal) and put in
each connection's own queue of ``send_queue_frames`` (full: the oldest frame is dropped,
counted); one sender task per connection writes it, so a client that never reads delays nobody
else, and one whose socket accepts nothing for ``slow_client_timeout_s`` is disconnected.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import mimetypes
import os
import threading
from collections import Counter
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from importlib import resources
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.http11 import Response

from .core.protocol import CommandGate, ConsoleParams, check_bind, host_ok, origin_ok, state_frame, token_ok

WEB_DIR = Path(str(resources.files("hri_console") / "web"))
# websockets logs every HTTP request and connection at INFO (a page load is several lines): only
# its warnings and errors reach the node's log; refusals are counted in ``refused_by``
WS_LOG = logging.getLogger("hri_console.websockets")
WS_LOG.setLevel(logging.WARNING)


COOKIE = "hri_console_token"


def _request_token(path: str, headers) -> str | None:
    """The token of a request: ``?token=``, else header ``X-HRI-Token``, else the cookie the
    server set when the page was opened with ``?token=`` (so the page's own script, style and
    WebSocket requests carry it without putting it in every URL)."""
    q = parse_qs(urlsplit(path).query)
    if "token" in q:
        return q["token"][0]
    if headers.get("X-HRI-Token") is not None:
        return headers.get("X-HRI-Token")
    for raw in headers.get_all("Cookie"):
        jar = SimpleCookie()
        try:
            jar.load(raw)
        except CookieError:
            continue
        if COOKIE in jar:
            return jar[COOKIE].value
    return None


def _response(status: HTTPStatus, body: bytes, ctype: str = "text/plain; charset=utf-8",
              extra: list[tuple[str, str]] | None = None) -> Response:
    return Response(status.value, status.phrase,
                    Headers([("Content-Type", ctype), ("Content-Length", str(len(body))),
                             ("Cache-Control", "no-store")] + list(extra or [])), body)


class ConsoleServer:
    """Run the console server in a background asyncio thread.

    ``snapshot()`` returns the dict pushed to clients every ``1/state_rate_hz`` s.
    """

    def __init__(self, params: ConsoleParams, gate: CommandGate,
                 snapshot: Callable[[], dict] = dict, clock: Callable[[], float] | None = None,
                 web_dir: Path = WEB_DIR):
        check_bind(params)
        self.params = params
        self.gate = gate
        self.snapshot = snapshot
        self.clock = clock or (lambda: 0.0)
        self.web_dir = Path(web_dir)
        self.refused = 0
        self.refused_by = Counter()          # cause -> requests refused (token, host, origin)
        self.frame_errors = 0                # state frames that failed to build (skipped)
        self.frame_cuts = 0                  # values cut by the forward bounds
        self.dropped_frames = 0              # state frames dropped from a full per-client queue
        self.slow_disconnects = 0            # clients disconnected for not reading
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._clients: dict = {}              # ws -> its asyncio.Queue of state frames
        self._seq = 0
        # one worker: commands keep their order; safe_stop bypasses it (see _handler)
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hri_console_cmd")

    # -- HTTP -------------------------------------------------------------------
    def _refuse(self, cause: str, status: HTTPStatus, body: bytes) -> Response:
        self.refused += 1
        self.refused_by[cause] += 1
        return _response(status, body)

    def _process_request(self, connection, request):
        h = request.headers
        hosts = h.get_all("Host")
        if len(hosts) != 1 or not host_ok(self.params, hosts[0]):
            return self._refuse("host", HTTPStatus.FORBIDDEN, b"host not allowed\n")
        if "Origin" in h and (len(h.get_all("Origin")) != 1 or not origin_ok(self.params, h["Origin"], self.port)):
            return self._refuse("origin", HTTPStatus.FORBIDDEN, b"origin not allowed\n")
        if not token_ok(self.params, _request_token(request.path, h)):
            return self._refuse("token", HTTPStatus.UNAUTHORIZED, b"missing or wrong token\n")
        path = urlsplit(request.path).path
        if path == "/ws":
            return None  # continue the WebSocket handshake
        if path == "/":
            path = "/index.html"
        target = (self.web_dir / path.lstrip("/")).resolve()
        if self.web_dir.resolve() not in target.parents or not target.is_file():
            return _response(HTTPStatus.NOT_FOUND, b"not found\n")
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        extra = []
        if self.params.token and "token" in parse_qs(urlsplit(request.path).query):
            # the page was opened with a valid ?token=: its sub-requests carry it as a cookie
            jar = SimpleCookie()
            jar[COOKIE] = str(self.params.token)
            jar[COOKIE].update({"path": "/", "httponly": True, "samesite": "Strict"})
            extra.append(("Set-Cookie", jar[COOKIE].OutputString()))
        return _response(HTTPStatus.OK, target.read_bytes(), ctype, extra)

    # -- WebSocket ----------------------------------------------------------------
    async def _sender(self, ws, queue: asyncio.Queue) -> None:
        """This connection's writer: one frame at a time; a socket that accepts nothing for
        ``slow_client_timeout_s`` ends the connection (the client reconnects when it reads)."""
        while True:
            text = await queue.get()
            try:
                await asyncio.wait_for(ws.send(text), self.params.slow_client_timeout_s)
            except asyncio.TimeoutError:
                self.slow_disconnects += 1
                self.gate.log(f"console: client {ws.remote_address} read nothing for "
                              f"{self.params.slow_client_timeout_s:g} s: disconnected")
                ws.transport.abort()
                return
            except ConnectionClosed:
                return
            except Exception as exc:  # noqa: BLE001 - never a silent, frozen client
                self.frame_errors += 1
                self.gate.log(f"console: sending to {ws.remote_address} failed ({type(exc).__name__}): disconnected")
                ws.transport.abort()
                return

    async def _handler(self, ws):
        queue: asyncio.Queue = asyncio.Queue(self.params.send_queue_frames)
        self._clients[ws] = queue
        sender = asyncio.ensure_future(self._sender(ws, queue))
        loop = asyncio.get_running_loop()
        pending: set = set()

        async def run_in_worker(cmd):
            reply = await loop.run_in_executor(self._worker, self.gate.execute, cmd)
            try:
                await ws.send(json.dumps(reply))
            except Exception:
                pass

        try:
            async for raw in ws:
                cmd = self.gate.parse(raw)
                if isinstance(cmd, dict):            # rejected: no effect
                    await ws.send(json.dumps(cmd))
                elif cmd.type == "safe_stop":        # inline, never behind the worker
                    await ws.send(json.dumps(self.gate.execute(cmd)))
                else:                                # ordered, off the event loop
                    task = asyncio.ensure_future(run_in_worker(cmd))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
        except ConnectionClosed as exc:
            # a frame above max_frame_bytes is refused by websockets itself (close 1009): count it
            codes = {f.code for f in (exc.rcvd, exc.sent) if f is not None}
            if CloseCode.MESSAGE_TOO_BIG in codes:
                self.gate.rejected["too_large"] += 1
                self.gate.log(f"console: connection closed, frame larger than {self.params.max_frame_bytes} bytes")
        except Exception:  # connection lost mid-frame: nothing to undo
            pass
        finally:
            self._clients.pop(ws, None)
            sender.cancel()

    def _frame(self) -> str | None:
        """This period's state frame, or None (counted) if building it failed."""
        self._seq += 1
        try:
            snap = dict(self.snapshot())
            snap["rejected"] = dict(self.gate.rejected)
            snap["server"] = {"refused": dict(self.refused_by), "frame_errors": self.frame_errors,
                              "frame_cuts": self.frame_cuts, "dropped_frames": self.dropped_frames,
                              "slow_disconnects": self.slow_disconnects}
            text, cuts = state_frame(self._seq, self.clock(), snap, self.params.forward)
        except Exception as exc:  # noqa: BLE001 - one bad frame is counted, never fatal
            self.frame_errors += 1
            if self.frame_errors in (1, 10, 100) or self.frame_errors % 1000 == 0:
                self.gate.log(f"console: state frame {self._seq} skipped ({type(exc).__name__}: "
                              f"{str(exc)[:200]}), {self.frame_errors} so far")
            return None
        self.frame_cuts += cuts
        return text

    async def _broadcast(self):
        period_s = 1.0 / self.params.state_rate_hz
        while not self._stop.is_set():
            if self._clients:
                text = self._frame()
                if text is not None:
                    for queue in list(self._clients.values()):
                        if queue.full():             # a client behind: its oldest frame goes
                            queue.get_nowait()
                            self.dropped_frames += 1
                        queue.put_nowait(text)
            try:
                await asyncio.wait_for(self._stop.wait(), period_s)
            except asyncio.TimeoutError:
                pass

    async def _main(self):
        self._stop = asyncio.Event()
        async with serve(self._handler, self.params.bind_host, self.params.port,
                         process_request=self._process_request,
                         max_size=self.params.max_frame_bytes, logger=WS_LOG) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._started.set()
            await asyncio.gather(self._broadcast(), self._stop.wait())

    def start(self, timeout_s: float = 10.0) -> int:
        """Start in a daemon thread; returns the bound port."""
        failed: list[BaseException] = []

        def run():
            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(self._main())
            except OSError as exc:            # busy port, bad address: reported by start()
                if self._started.is_set():
                    raise
                failed.append(exc)
                self._started.set()
        self._thread = threading.Thread(target=run, name="hri_console", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s):
            raise RuntimeError("console server did not start")
        if failed:
            exc = failed[0]
            why = os.strerror(exc.errno) if exc.errno else str(exc)
            raise OSError(exc.errno, f"console cannot listen on {self.params.bind_host}:{self.params.port}: {why}")
        return self.port

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread:
            self._thread.join(5.0)
        self._worker.shutdown(wait=False, cancel_futures=True)
