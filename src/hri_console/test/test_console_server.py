"""Console server carrier: token auth on page and WebSocket, malformed frames have no effect,
non-loopback bind without token refuses to start. Loopback sockets only."""
import dataclasses
import json
import urllib.error
import urllib.request

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from hri_console.core.protocol import CommandGate, CommandRules, ConsoleParams, StartupRefused
from hri_console.server import ConsoleServer
from hri_runtime.config.tree import load_robot_config


def console_params(**kw) -> ConsoleParams:
    """The FR3 config's console section with this test's overrides."""
    return dataclasses.replace(ConsoleParams.from_config(load_robot_config("fr3")["console"]), **kw)


def make(token=None):
    params = console_params(bind_host="127.0.0.1", port=0, token=token,
                            modes=("admittance", "impedance"), gain_max=100.0, state_rate_hz=50.0)
    calls, stops = [], []
    gate = CommandGate(CommandRules(params), dispatch=calls.append, on_safe_stop=lambda: stops.append(1))
    srv = ConsoleServer(params, gate, snapshot=lambda: {"modes": list(params.modes)})
    port = srv.start()
    return srv, port, calls, stops, gate


def recv_reply(ws):
    while True:
        m = json.loads(ws.recv(timeout=10))
        if m["type"] != "state":
            return m


def test_non_loopback_without_token_refuses_to_start():
    p = console_params(bind_host="0.0.0.0", port=0)
    with pytest.raises(StartupRefused):
        ConsoleServer(p, CommandGate(CommandRules(p), dispatch=lambda c: None))


def test_page_and_ws_require_token():
    srv, port, calls, stops, _ = make(token="s3cret")
    try:
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        assert exc.value.code == 401
        exc.value.close()                      # else the open socket delays the server's stop
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/?token=wrong", timeout=10)
        assert exc.value.code == 401
        exc.value.close()                      # else the open socket delays the server's stop
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/?token=s3cret", timeout=10).read()
        assert b"SAFE STOP" in body
        with pytest.raises(InvalidStatus):
            connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10)
        with connect(f"ws://127.0.0.1:{port}/ws?token=s3cret", open_timeout=10) as ws:
            ws.send(json.dumps({"type": "safe_stop", "id": 1}))
            assert recv_reply(ws)["ok"] is True
        assert stops == [1] and calls == []
        assert srv.refused == 3
    finally:
        srv.stop()


def test_malformed_frames_rejected_without_effect():
    srv, port, calls, stops, gate = make()
    try:
        with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            for raw in ("{", "42", json.dumps({"type": "set_gains", "gains": {"kp": -5}}),
                        json.dumps({"type": "nope"}), b"\x00\xff"):
                ws.send(raw)
                r = recv_reply(ws)
                assert r["type"] == "reject" and r["reason"]
            ws.send(json.dumps({"type": "set_mode", "mode": "impedance", "id": 2}))
            assert recv_reply(ws) == {"type": "ack", "id": 2, "command": "set_mode", "ok": True}
            # state snapshots carry the rejection counters
            while True:
                m = json.loads(ws.recv(timeout=10))
                if m["type"] == "state" and sum(m["rejected"].values()) == 5:
                    break
        assert [c.type for c in calls] == ["set_mode"] and stops == []
        assert sum(gate.rejected.values()) == 5
    finally:
        srv.stop()


def test_safe_stop_not_queued_behind_busy_command():
    import threading

    params = console_params(bind_host="127.0.0.1", port=0, modes=("admittance",), state_rate_hz=50.0)
    release, entered, stops = threading.Event(), threading.Event(), []

    def slow_dispatch(cmd):  # a service call that hangs until released
        entered.set()
        release.wait(30)

    gate = CommandGate(CommandRules(params), dispatch=slow_dispatch, on_safe_stop=lambda: stops.append(1))
    srv = ConsoleServer(params, gate)
    port = srv.start()
    try:
        with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            ws.send(json.dumps({"type": "set_mode", "mode": "admittance", "id": 1}))
            assert entered.wait(10)
            ws.send(json.dumps({"type": "safe_stop", "id": 2}))
            r = recv_reply(ws)
            assert r["id"] == 2 and r["ok"] is True and stops == [1]
            assert not release.is_set()  # the busy command is still running
            release.set()
            assert recv_reply(ws)["id"] == 1
    finally:
        release.set()
        srv.stop()


def test_page_opened_with_token_sets_a_cookie_that_authorizes_its_subrequests():
    srv, port, calls, stops, _ = make(token="a b;c")          # cookie-unsafe characters are quoted
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/?token=a%20b%3Bc", timeout=10) as resp:
            cookie = resp.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        pair = cookie.split(";")[0] if not cookie.startswith('hri_console_token="') else cookie[:cookie.index('";') + 1]
        req = urllib.request.Request(f"http://127.0.0.1:{port}/console.js", headers={"Cookie": pair})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert b"WebSocket" in resp.read()
        bad = urllib.request.Request(f"http://127.0.0.1:{port}/console.js", headers={"Cookie": "hri_console_token=nope"})
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(bad, timeout=10)
        assert exc.value.code == 401
        exc.value.close()                      # else the open socket delays the server's stop
        with connect(f"ws://127.0.0.1:{port}/ws", additional_headers={"Cookie": pair}, open_timeout=10) as ws:
            ws.send(json.dumps({"type": "ping", "id": 1}))
            assert recv_reply(ws)["ok"] is True
    finally:
        srv.stop()


# ---------------------------------------------------------------- Host / Origin allow-lists
def _raw_get(port, host, origin=None, path="/"):
    """A raw HTTP/1.1 request (no client library deciding the headers for us)."""
    import socket

    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Connection: close"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data and (chunk := s.recv(65536)):
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(next((ln.split(b":", 1)[1] for ln in head.split(b"\r\n")
                           if ln.lower().startswith(b"content-length:")), b"0"))
        while len(body) < length and (chunk := s.recv(65536)):
            body += chunk
    return int(head.split(b" ", 2)[1]), head + b"\r\n\r\n" + body


def test_foreign_host_and_origin_get_403_own_origin_works():
    """The issue's attack: with the default loopback/no-token config, a page from
    http://evil.example drove the WebSocket and Host: evil.example got the page (DNS rebinding)."""
    srv, port, calls, stops, _ = make()
    try:
        assert _raw_get(port, f"127.0.0.1:{port}")[0] == 200
        assert _raw_get(port, f"localhost:{port}")[0] == 200
        assert _raw_get(port, f"[::1]:{port}")[0] == 200
        assert _raw_get(port, f"evil.example:{port}")[0] == 403
        assert _raw_get(port, "evil.example")[0] == 403
        assert _raw_get(port, f"127.0.0.1:{port}", origin="http://evil.example")[0] == 403
        assert _raw_get(port, f"127.0.0.1:{port}", origin=f"http://127.0.0.1:{port}")[0] == 200
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null",
                       f"http://127.0.0.1:{port + 1}", f"file://127.0.0.1:{port}"):
            with pytest.raises(InvalidStatus) as exc:
                connect(f"ws://127.0.0.1:{port}/ws", origin=origin, open_timeout=10)
            assert exc.value.response.status_code == 403
        with pytest.raises(InvalidStatus):
            connect(f"ws://127.0.0.1:{port}/ws", additional_headers={"Host": f"evil.example:{port}"},
                    open_timeout=10)
        assert calls == [] and stops == []
        assert srv.refused_by["origin"] == 6 and srv.refused_by["host"] == 3
        for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", None):   # own page, a script
            with connect(f"ws://127.0.0.1:{port}/ws", origin=origin, open_timeout=10) as ws:
                ws.send(json.dumps({"type": "safe_stop", "id": 1}))
                assert recv_reply(ws)["ok"] is True
        assert stops == [1, 1, 1]
    finally:
        srv.stop()


def test_configured_host_and_origin_are_accepted():
    params = console_params(bind_host="127.0.0.1", port=0, allowed_hosts=("console.lab",),
                            allowed_origins=("https://ops.lab",))
    srv = ConsoleServer(params, CommandGate(CommandRules(params), dispatch=lambda c: None))
    port = srv.start()
    try:
        assert _raw_get(port, "console.lab:8443")[0] == 200
        assert _raw_get(port, "other.lab")[0] == 403
        with connect(f"ws://127.0.0.1:{port}/ws", origin="https://ops.lab", open_timeout=10) as ws:
            ws.send(json.dumps({"type": "ping", "id": 1}))
            assert recv_reply(ws)["ok"] is True
        with pytest.raises(InvalidStatus):
            connect(f"ws://127.0.0.1:{port}/ws", origin="https://other.lab", open_timeout=10)
    finally:
        srv.stop()


# ---------------------------------------------------------------- robustness of the broadcast
def test_a_frame_that_fails_is_counted_and_the_server_keeps_serving():
    """The issue's kill: a snapshot that cannot be encoded (here: it raises, and one nested 600
    deep) must never end the broadcast; SAFE STOP keeps working."""
    n = {"i": 0}

    def snapshot():
        n["i"] += 1
        if n["i"] % 2:
            raise RecursionError("maximum recursion depth exceeded")
        deep = cur = {}
        for _ in range(600):
            cur["x"] = {}
            cur = cur["x"]
        return {"interaction": deep}

    params = console_params(bind_host="127.0.0.1", port=0, state_rate_hz=50.0)
    stops = []
    srv = ConsoleServer(params, CommandGate(CommandRules(params), dispatch=lambda c: None,
                                              on_safe_stop=lambda: stops.append(1)),
                        snapshot=snapshot)
    port = srv.start()
    try:
        with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            states = []
            while len(states) < 3:
                m = json.loads(ws.recv(timeout=10))
                if m["type"] == "state":
                    states.append(m)
            assert srv.frame_errors >= 2 and srv.frame_cuts >= 1
            ws.send(json.dumps({"type": "safe_stop", "id": 5}))
            assert recv_reply(ws)["ok"] is True and stops == [1]
        assert states[-1]["server"]["frame_errors"] >= 1
    finally:
        srv.stop()


def _raw_ws_that_never_reads(port):
    """A WebSocket client that completes the handshake and then never reads (tiny receive
    buffer), the issue's 'one client that never reads'."""
    import base64
    import os
    import socket

    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101")
    return s


def test_a_client_that_never_reads_delays_no_other_client():
    """Client A never reads; client B keeps receiving every frame in order and its SAFE STOP is
    acknowledged; A's queue drops its oldest frames and A is disconnected after
    slow_client_timeout_s. Frames are made large (~200 kB) so A's socket fills at once."""
    big = {"blob": ["y" * 1000] * 200}
    params = console_params(bind_host="127.0.0.1", port=0, state_rate_hz=50.0, send_queue_frames=2,
                            slow_client_timeout_s=1.0)
    params = dataclasses.replace(params, forward=dataclasses.replace(params.forward, max_items=1000))
    stops = []
    srv = ConsoleServer(params, CommandGate(CommandRules(params), dispatch=lambda c: None,
                                              on_safe_stop=lambda: stops.append(1)),
                        snapshot=lambda: big)
    port = srv.start()
    slow = _raw_ws_that_never_reads(port)
    try:
        with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10, max_size=None) as fast:
            seqs = []
            while srv.slow_disconnects == 0 or len(seqs) < 20:
                m = json.loads(fast.recv(timeout=10))
                if m["type"] == "state":
                    seqs.append(m["seq"])
                assert len(seqs) < 5000, "the slow client was never disconnected"
            fast.send(json.dumps({"type": "safe_stop", "id": 3}))
            assert recv_reply(fast)["ok"] is True and stops == [1]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))   # B lost no frame
        assert srv.dropped_frames > 0 and srv.slow_disconnects == 1
    finally:
        slow.close()
        srv.stop()


def test_page_loads_and_refusals_log_nothing_below_warning(caplog):
    """websockets logs every request and connection at INFO; the console passes on only its
    warnings, so a page load or a refused request adds no line to the node's log."""
    srv, port, calls, stops, _ = make()
    try:
        with caplog.at_level("DEBUG"):
            assert b"SAFE STOP" in urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()
            with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
                ws.send(json.dumps({"type": "ping", "id": 1}))
                recv_reply(ws)
            with pytest.raises(InvalidStatus):
                connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10,
                        additional_headers={"Origin": "http://evil.example"})
        assert srv.refused_by["origin"] == 1
        assert [r.getMessage() for r in caplog.records if r.name.startswith("hri_console.websockets")
                and r.levelno < 30] == []
    finally:
        srv.stop()
