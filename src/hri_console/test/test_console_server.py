"""Console server carrier: token auth on page and WebSocket, malformed frames have no effect,
non-loopback bind without token refuses to start. Loopback sockets only."""
import dataclasses
import json
import urllib.error
import urllib.request

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from hri_console.core.protocol import CommandGate, ConsoleParams, StartupRefused
from hri_console.server import ConsoleServer
from hri_runtime.config import load_robot_config


def console_params(**kw) -> ConsoleParams:
    """The FR3 config's console section (and joint count) with this test's overrides."""
    cfg = load_robot_config("fr3")
    return dataclasses.replace(ConsoleParams.from_config(cfg["console"], num_joints=len(cfg["joints"]["names"])),
                               **kw)


def make(token=None):
    params = console_params(bind_host="127.0.0.1", port=0, token=token,
                            modes=("admittance", "impedance"), gain_max=100.0, state_rate_hz=50.0)
    calls, stops = [], []
    gate = CommandGate(params, dispatch=calls.append, on_safe_stop=lambda: stops.append(1))
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
        ConsoleServer(p, CommandGate(p, dispatch=lambda c: None))


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

    gate = CommandGate(params, dispatch=slow_dispatch, on_safe_stop=lambda: stops.append(1))
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
