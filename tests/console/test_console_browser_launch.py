"""The console page in headless Debian chromium (Playwright) against a lab stack started the way a
lab starts it: `hri launch launch/<robot>.launch.yaml console:=true` (separate node processes on
Zenoh, the launcher's router on a free port). The page shows what the stack publishes, and its
buttons reach the robot: a mode change and impedance gains reach the interaction controller (its
own state says so), SAFE STOP latches the system stop and the robot holds (FR3: teleop STOP and
the controller frozen; Tino: the atomic fault system_stop), RESET releases it. Wall clock: waits
are bounded, no duration is asserted (the simulated-time stop latency is test_console_browser.py)."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from .chromium import chromium, new_page, require_chromium

require_chromium()
from playwright import sync_api  # noqa: E402
import zenoh  # noqa: F401,E402  (required: a missing install fails here)

from hri_runtime.config.tree import load_robot_config  # noqa: E402
from ..stack_launch import free_port  # noqa: E402  (bounded waits, free ports)

ROOT = Path(__file__).resolve().parents[2]
T_UI = 30000          # ms: generous UI wait (2 shared cores); no timing is asserted on it
WAIT_S = 60.0
PID_BUTTONS = ["#pid-start", "#pid-record", "#pid-stop", "#pid-reset", "#pid-save", "#pid-autotune"]


class Launch:
    """`hri launch <file> console:=true console_port:=0 vr_port:=<free>` on its own router; the
    output is collected line by line (the console's port is read from its log line)."""

    def __init__(self, robot: str):
        self.ep = ep = f"tcp/127.0.0.1:{free_port()}"
        env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_ROUTER_LISTEN=f"[{ep}]",
                   HRI_ZENOH_CONNECT=f"[{ep}]", PYTHONUNBUFFERED="1")
        self.lines: list[str] = []
        self.proc = subprocess.Popen([sys.executable, "-m", "hri_runtime.cli.main", "launch",
                                      str(ROOT / f"launch/{robot}.launch.yaml"), "console:=true", "console_port:=0",
                                      f"vr_port:={free_port(socket.SOCK_DGRAM)}"],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self.reader.start()

    def text(self) -> str:
        return "".join(self.lines)

    def console_port(self) -> int:
        end = time.monotonic() + WAIT_S
        while True:
            m = re.search(r"console on http://127\.0\.0\.1:(\d+)/", self.text())
            if m:
                return int(m.group(1))
            assert self.proc.poll() is None, f"the launch ended:\n{self.text()}"
            assert time.monotonic() < end, f"no console log line:\n{self.text()}"
            time.sleep(0.1)

    def stop(self) -> str:
        """Ctrl-C; the launch's exit code must be 0."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(10)
        return self.text()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("profile"), viewport={"width": 1400, "height": 1450}) as b:
        yield b


def open_page(browser, robot):
    launch = Launch(robot)
    pg, errors = new_page(browser)
    try:
        pg.goto(f"http://127.0.0.1:{launch.console_port()}/")
    except BaseException:
        pg.close()
        launch.stop()
        raise
    return launch, pg, errors


def release(pg):
    """RESET. The supervisor refuses a reset while a source was requested within its last two
    heartbeat periods (the cause is present): a click right after SAFE STOP is refused with that
    sentence and the operator clicks again."""
    end = time.monotonic() + WAIT_S
    while True:
        pg.evaluate("for (const id of ['ok', 'reason']) document.getElementById(id).textContent = ''")
        pg.click("#release")
        pg.wait_for_function("document.getElementById('ok').textContent || "
                             "document.getElementById('reason').textContent", timeout=T_UI)
        reason = pg.locator("#reason").inner_text()
        if "console still requested (the cause is present)" not in reason:
            return
        assert time.monotonic() < end, reason
        pg.wait_for_timeout(200)


def expect(locator):
    return sync_api.expect(locator)


def snap(pg, path):
    return pg.evaluate(f"last ? last.{path} : undefined")


def test_fr3_lab_stack_page_shows_the_arm_and_its_buttons_reach_it(browser):
    launch, pg, errors = open_page(browser, "fr3")
    try:
        expect(pg.locator("#conn")).to_have_text("connected", timeout=T_UI)
        # the arm (the interaction node's simulated FR3), its mode and the supervisor's health row
        expect(pg.locator("#joints tbody tr")).to_have_count(7, timeout=T_UI)
        expect(pg.locator("#int-mode")).to_have_text("impedance", timeout=T_UI)
        expect(pg.locator("#int-none")).to_have_text("", timeout=T_UI)
        expect(pg.locator("#teleop-mode")).to_have_text("HOLD", timeout=T_UI)
        expect(pg.locator("#ee-pos")).not_to_have_text("-", timeout=T_UI)
        expect(pg.locator('#health tr[data-name="safety: system stop"] .level')).to_have_text("OK", timeout=T_UI)
        expect(pg.locator('#health tr[data-name="interaction"]')).to_have_count(1, timeout=T_UI)
        # no PID tuning node in this stack: its buttons are off, the panel says why
        expect(pg.locator("#pid-busy")).to_have_text("no PID tuning node (no status received)", timeout=T_UI)
        for b in PID_BUTTONS:
            expect(pg.locator(b)).to_be_disabled()
        # mode change -> the controller's own state
        pg.select_option("#mode", "admittance")
        pg.click("#setmode")
        expect(pg.locator("#ok")).to_have_text("set_mode ok: interaction.mode set on /interaction", timeout=T_UI)
        expect(pg.locator("#int-mode")).to_have_text("admittance", timeout=T_UI)
        # impedance gains: the K/D fields start from the robot config's, -> the controller's own stiffness
        imp = load_robot_config("fr3")["interaction"]["impedance"]
        expect(pg.locator("#damp5")).not_to_have_value("", timeout=T_UI)
        assert [float(pg.input_value(f"#stiff{i}")) for i in range(6)] == imp["stiffness_diag"]
        assert [float(pg.input_value(f"#damp{i}")) for i in range(6)] == imp["damping_diag"]
        pg.fill("#stiff3", "10000")
        pg.click("#setgains")
        expect(pg.locator("#ok")).to_have_text("set_gains ok: interaction.impedance.stiffness_diag, "
                                               "interaction.impedance.damping_diag set on /interaction", timeout=T_UI)
        end = time.monotonic() + WAIT_S
        while (snap(pg, "robot.interaction.stiffness_diag") or [None] * 6)[3] != 10000:
            assert time.monotonic() < end, f"gains not applied: {snap(pg, 'robot.interaction')}"
            pg.wait_for_timeout(100)
        # SAFE STOP -> supervisor latch -> teleop STOP, the controller frozen by the system stop
        pg.click("#stop")
        expect(pg.locator("#ok")).to_have_text("safe_stop ok (reached 1 subscriber)", timeout=T_UI)
        expect(pg.locator("#safestop")).to_have_text("STOPPED: console: SAFE STOP from the console", timeout=T_UI)
        expect(pg.locator("#teleop-mode")).to_have_text("STOP", timeout=T_UI)
        end = time.monotonic() + WAIT_S
        while not str(snap(pg, "robot.interaction.frozen") or "").startswith("system stop"):
            assert time.monotonic() < end, f"interaction not frozen: {snap(pg, 'robot.interaction')}"
            pg.wait_for_timeout(100)
        # RESET: released; an arm stack has no atomic node, which is no warning
        release(pg)
        expect(pg.locator("#ok")).to_contain_text("release_stop ok: reset #", timeout=T_UI)
        expect(pg.locator("#safestop")).to_have_text("released", timeout=T_UI)
        expect(pg.locator("#teleop-mode")).to_have_text("HOLD", timeout=T_UI)
        assert pg.locator("#reason").inner_text() == ""
        assert errors == []
    finally:
        pg.close()
        text = launch.stop()
    assert launch.proc.returncode == 0, text
    assert "SAFE STOP from the console" in text and "Traceback" not in text


def test_tino_lab_stack_page_shows_the_base_and_safe_stop_latches_its_fault(browser):
    launch, pg, errors = open_page(browser, "tino")
    try:
        expect(pg.locator("#conn")).to_have_text("connected", timeout=T_UI)
        expect(pg.locator("#atomic")).to_have_text("state 0", timeout=T_UI)
        link = pg.locator('#health tr[data-name="hri_pulse: vr link"]')
        expect(link.locator(".connected")).to_have_text("False", timeout=T_UI)      # no headset yet
        expect(pg.locator('#health tr[data-name="atomic: leg/base controller"] .level')).to_have_text("OK",
                                                                                                     timeout=T_UI)
        expect(pg.locator("#pid-busy")).to_have_text("no PID tuning node (no status received)", timeout=T_UI)
        expect(pg.locator("#int-none")).to_have_text("no interaction controller (no state received)", timeout=T_UI)
        pg.click("#stop")
        expect(pg.locator("#ok")).to_have_text("safe_stop ok (reached 1 subscriber)", timeout=T_UI)
        expect(pg.locator("#atomic")).to_have_text("state 0 FAULT system_stop", timeout=T_UI)
        expect(pg.locator("#safestop")).to_have_text("STOPPED: console: SAFE STOP from the console", timeout=T_UI)
        # RESET: /safety/reset, then the atomic fault reset (reached the atomic node)
        release(pg)
        expect(pg.locator("#ok")).to_contain_text("release_stop ok: reset #", timeout=T_UI)
        expect(pg.locator("#ok")).to_contain_text("(reached 1 subscriber)", timeout=T_UI)
        expect(pg.locator("#atomic")).to_have_text("state 0", timeout=T_UI)
        expect(pg.locator("#safestop")).to_have_text("released", timeout=T_UI)
        assert pg.locator("#reason").inner_text() == ""
        assert errors == []
    finally:
        pg.close()
        text = launch.stop()
    assert launch.proc.returncode == 0, text
    assert "fault latched: system_stop" in text and "Traceback" not in text


#: every element of a panel (section) and the page: its right edge inside the panel's, no
#: horizontal scrolling (the raw-state details and every health row's values opened first)
OVERFLOW_JS = """() => {
  for (const d of document.querySelectorAll("details")) d.open = true;
  const out = [];
  const page = document.documentElement;
  if (page.scrollWidth > window.innerWidth) out.push(`page: scrollWidth ${page.scrollWidth} > ${window.innerWidth}`);
  for (const sec of document.querySelectorAll("main > section")) {
    const box = sec.getBoundingClientRect();
    const name = sec.id || (sec.querySelector("summary, h3") || {}).textContent;
    if (sec.scrollWidth > sec.clientWidth + 1) out.push(`${name}: scrollWidth ${sec.scrollWidth} > ${sec.clientWidth}`);
    for (const e of sec.querySelectorAll("*")) {
      const b = e.getBoundingClientRect();
      if (b.width > 0 && b.right > box.right + 1)
        out.push(`${name}: <${e.tagName.toLowerCase()} id=${e.id} class=${e.className}> right ${b.right.toFixed(0)} > ${box.right.toFixed(0)}`);
    }
  }
  return out;
}"""


def diagnostics_names(ep: str, seconds: float) -> set:
    """The status names on /diagnostics of the launched stack, from an own session on its router."""
    from hri_runtime.node import Node
    from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams

    ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))
    names: set = set()
    try:
        Node("diag_probe", context=ctx).create_subscription(
            "diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", lambda m: names.update(s.name for s in m.status), qos=50)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ctx.spin(timeout_s=0.05)
    finally:
        ctx.shutdown()
        ctx.close()
    return names


def test_fr3_every_link_is_a_health_row_and_no_text_overflows_a_panel_at_1280px(browser):
    """The link health table has a row per status on /diagnostics -- the arm's VR link
    (arm_teleop), the interaction loop, the stop supervisor -- and at 1280 px wide no text runs
    past its panel: the interaction state (one row per field, never a raw JSON line), the health
    rows' values, the raw state."""
    launch, pg, errors = open_page(browser, "fr3")
    try:
        pg.set_viewport_size({"width": 1280, "height": 900})
        expect(pg.locator("#conn")).to_have_text("connected", timeout=T_UI)
        for name in ("hri_arm_teleop: vr link", "interaction", "safety: system stop"):
            expect(pg.locator(f'#health tr[data-name="{name}"]')).to_have_count(1, timeout=T_UI)
        expect(pg.locator('#health tr[data-name="hri_arm_teleop: vr link"] .connected')).to_have_text(
            "False", timeout=T_UI)                            # no headset in this test
        published = diagnostics_names(launch.ep, 3.0)
        assert {"hri_arm_teleop: vr link", "interaction", "safety: system stop"} <= published, published
        rows = set(pg.evaluate("[...document.querySelectorAll('#health tbody tr')].map((r) => r.dataset.name)"))
        assert published <= rows, (published, rows)         # every link that reports is a row
        # the interaction state: one row per field; the long ones (lists, counters) wrap in the panel
        expect(pg.locator('#int-state tr[data-key="stiffness_diag"] td')).not_to_have_text("", timeout=T_UI)
        assert pg.locator('#int-state tr[data-key="rejected"]').count() == 1
        assert pg.locator("#int-state").inner_text().count("{") == 0     # no raw JSON
        pg.wait_for_timeout(1500)                          # a few state frames: every row at its full text
        overflow = pg.evaluate(OVERFLOW_JS)
        assert overflow == [], overflow
        pg.screenshot(path=str(ROOT / "runs" / "console_1280.png"), full_page=True)
        assert errors == []
    finally:
        pg.close()
        text = launch.stop()
    assert launch.proc.returncode == 0, text
