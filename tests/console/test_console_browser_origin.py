"""The console's Origin and Host allow-lists in headless Debian chromium (Playwright): a page from
another origin cannot open the console's WebSocket (403: no command runs), the console page reached
through a foreign host name (DNS rebinding, simulated with chromium's host resolver rules) is
refused, and the console's own page still connects."""
from __future__ import annotations

import dataclasses
import http.server
import threading

import pytest

from .chromium import chromium, require_chromium

require_chromium()
from playwright import sync_api  # noqa: E402

from hri_runtime.config.tree import load_robot_config  # noqa: E402

from hri_console.core.protocol import CommandGate, CommandRules, ConsoleParams  # noqa: E402
from hri_interaction.core.spd import GainError, ImpedanceGainLimits, validate_impedance_gains  # noqa: E402
from hri_console.server import ConsoleServer  # noqa: E402

T_UI = 20000          # ms: generous UI wait (2 shared cores); no timing is asserted on it
EVIL = "evil.example"


def attacker_page(console_port: int) -> bytes:
    """What a hostile web page does: open the console's WebSocket and fire commands."""
    return f"""<!doctype html><title>idle</title><script>
const ws = new WebSocket("ws://127.0.0.1:{console_port}/ws");
ws.onopen = () => {{
  for (const t of ["safe_stop", "release_stop"]) ws.send(JSON.stringify({{type: t, id: 1}}));
  ws.send(JSON.stringify({{type: "set_mode", mode: "admittance", id: 2}}));
  document.title = "opened";
}};
ws.onerror = () => {{ document.title = "refused"; }};
</script>""".encode()


@pytest.fixture(scope="module")
def console():
    cfg = load_robot_config("fr3")
    limits = ImpedanceGainLimits.from_config(cfg["interaction"]["gain_limits"])
    params = dataclasses.replace(ConsoleParams.from_config(cfg["console"]), bind_host="127.0.0.1", port=0,
                                 token=None)
    calls, stops = [], []
    gate = CommandGate(CommandRules(params, len(cfg["joints"]["names"]), limits), dispatch=calls.append, on_safe_stop=lambda: stops.append(1))
    imp = cfg["interaction"]["impedance"]
    srv = ConsoleServer(params, gate, snapshot=lambda: {"modes": list(params.modes), "impedance_gains": {
        "stiffness": imp["stiffness_diag"], "damping": imp["damping_diag"]}})
    port = srv.start()
    yield srv, port, calls, stops
    srv.stop()


@pytest.fixture(scope="module")
def evil_site(console):
    body = attacker_page(console[1])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("profile"), [f"--host-resolver-rules=MAP {EVIL} 127.0.0.1"]) as b:
        yield b


@pytest.mark.parametrize("site_host", ["127.0.0.1", EVIL])
def test_a_page_from_another_origin_cannot_drive_the_console(console, evil_site, browser, site_host):
    srv, port, calls, stops = console
    before = srv.refused_by["origin"]
    pg = browser.new_page()
    try:
        pg.goto(f"http://{site_host}:{evil_site}/")
        pg.wait_for_function("document.title !== 'idle'", timeout=T_UI)
        assert pg.title() == "refused"
    finally:
        pg.close()
    assert calls == [] and stops == []
    assert srv.refused_by["origin"] == before + 1


def test_a_file_page_null_origin_cannot_drive_the_console(console, browser, tmp_path):
    """A page opened from a file (a downloaded attachment) sends ``Origin: null``: refused."""
    srv, port, calls, stops = console
    before = srv.refused_by["origin"]
    page = tmp_path / "attachment.html"
    page.write_bytes(attacker_page(port))
    pg = browser.new_page()
    try:
        pg.goto(page.as_uri())
        pg.wait_for_function("document.title !== 'idle'", timeout=T_UI)
        assert pg.title() == "refused"
    finally:
        pg.close()
    assert calls == [] and stops == []
    assert srv.refused_by["origin"] == before + 1


def test_dns_rebinding_host_is_refused_and_the_own_page_connects(console, browser):
    srv, port, calls, stops = console
    pg = browser.new_page()
    try:
        resp = pg.goto(f"http://{EVIL}:{port}/")
        assert resp.status == 403
        assert srv.refused_by["host"] >= 1
        pg.goto(f"http://127.0.0.1:{port}/")
        sync_api.expect(pg.locator("#conn")).to_have_text("connected", timeout=T_UI)
        pg.locator("#stop").click()
        for _ in range(400):                     # the page's own origin may drive it
            if stops:
                break
            pg.wait_for_timeout(50)
        assert stops == [1]
    finally:
        pg.close()


def test_the_page_shows_the_controllers_reason_for_refused_gains(console, browser):
    """Damping 0 on one axis (the console must refuse what the controller refuses):
    refused on the page with the sentence of the controller's own check; nothing dispatched."""
    srv, port, calls, stops = console
    pg = browser.new_page()
    try:
        pg.goto(f"http://127.0.0.1:{port}/")
        sync_api.expect(pg.locator("#conn")).to_have_text("connected", timeout=T_UI)
        sync_api.expect(pg.locator("#damp5")).not_to_have_value("", timeout=T_UI)    # the config's K/D
        K = [float(pg.input_value(f"#stiff{i}")) for i in range(6)]
        D = [float(pg.input_value(f"#damp{i}")) for i in range(6)]
        D[0] = 0.0
        pg.fill("#damp0", "0")
        with pytest.raises(GainError) as exc:
            validate_impedance_gains(K, D, srv.gate.rules.gain_limits)
        pg.click("#setgains")
        sync_api.expect(pg.locator("#reason")).to_contain_text(f"set_gains refused: {exc.value}", timeout=T_UI)
    finally:
        pg.close()
    assert not any(c.type == "set_gains" for c in calls)
