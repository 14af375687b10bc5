"""End-to-end: the console page in headless Debian chromium (Playwright) against the real stack
on hri_runtime's in-process transport, in simulation:

  console node (HTTP/WebSocket) ── /safety/stop_request ──> stop supervisor ── /safety/stop ──> atomic node
                                                                   (Tino, embedded MuJoCo)
        │  <── /diagnostics ── vr_interface node (hri_pulse) <── UDP ── `hri vr-emulate` (subprocess)
        │  <── /joint_states, /ee_pose, /teleop/mode ── arm_teleop node (FR3, embedded MuJoCo)
        └── services ──> pid_tuning node (hri_pid_tuning, simulated humanoid arm)

The in-process context runs on a background thread whose fake clock follows the wall clock
(``InprocContext.spin``); the page, the WebSocket server and the `hri vr-emulate` process are
real. The stop latency is measured in *simulated* time: from the console's publish of the safe
stop to the first zero velocity command the atomic controller sends to the simulated base.
Screenshots of every state go to runs/console-screenshots/ (git-ignored); with
HRI_CONSOLE_SCREENSHOT=1 (after a page change) the invalid-gain page is copied to docs/img/console.png."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from .chromium import chromium, new_page, require_chromium

require_chromium()
from playwright import sync_api  # noqa: E402

from hri_runtime import msgs  # noqa: E402
from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_runtime.inproc import InprocContext  # noqa: E402
from hri_runtime.node import Node  # noqa: E402

from hri_console.nodes.console_node import ConsoleNode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ART = ROOT / "runs" / "console-screenshots"
HRI = str(Path(sys.executable).with_name("hri"))
T_UI = 20000          # ms: generous UI wait (2 shared cores); no timing is asserted on it
LINK = "hri_pulse: vr link"


class Recorder(Node):
    """Records, in arrival order with the node clock, the safe stop and the base velocity
    commands; publishes operator pulses and PID recording samples."""

    def __init__(self, atomic_topics, **kw):
        super().__init__("recorder", **kw)
        self.events: list[tuple] = []
        self._lock = threading.Lock()
        self.create_subscription("hri_interfaces/msg/SafetyStop", "/safety/stop",
                                 lambda m: self._add("stop", bool(m.stopped)), qos="latched")
        self.create_subscription("geometry_msgs/msg/Twist", atomic_topics["cmd_vel"],
                                 lambda m: self._add("vel", float(m.linear.x), float(m.angular.z)))
        self.pulse = self.create_publisher("geometry_msgs/msg/Twist", atomic_topics["pulse"])
        self.sp = self.create_publisher("sensor_msgs/msg/JointState", "/joint_setpoints")
        self.js = self.create_publisher("sensor_msgs/msg/JointState", "/joint_states")

    def _add(self, *ev):
        with self._lock:
            self.events.append((self.get_clock().now_s(),) + ev)

    def snapshot(self):
        with self._lock:
            return list(self.events)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_atomic_motion.nodes.atomic_node import AtomicNode
    from hri_pid_tuning.nodes.tuning_node import PidTuningNode
    from hri_pid_tuning.session import TuningSession
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode

    tmp = tmp_path_factory.mktemp("console")
    fr3, tino = load_robot_config("fr3", overrides=["teleop.output=joint"]), load_robot_config("tino")
    ctx = InprocContext(start_time_s=100.0)
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    nodes = {
        "supervisor": StopSupervisorNode(cfg=fr3, context=ctx),
        "atomic": AtomicNode(cfg=tino, context=ctx, parameters={"atomic.node.driver": "sim"}),
        "vr": VrInterfaceNode(context=ctx, parameters={"robot": "tino", "pulse.udp.port": 0}),
        "arm": ArmTeleopNode(cfg=fr3, context=ctx, parameters={"teleop.vr.enabled": False}),
        "pid": PidTuningNode(session=TuningSession.create("humanoid_arm", "s2", clock=lambda: 1.7e9),
                             context=ctx, parameters={"pid_tuning.node.configuration_path": str(tmp / "pid.json")}),
        "rec": Recorder(tino["atomic"]["topics"], context=ctx),
    }
    nodes["console"] = ConsoleNode(cfg=fr3, context=ctx, parameters={"console.port": 0})
    spinner = threading.Thread(target=ctx.spin, name="inproc-spin", daemon=True)
    spinner.start()
    yield ctx, nodes, tino
    ctx.shutdown()
    spinner.join(10)
    for n in reversed(list(nodes.values())):
        n.destroy_node()


@pytest.fixture(scope="module")
def page(stack, tmp_path_factory):
    ART.mkdir(parents=True, exist_ok=True)
    for old in ART.glob("*.png"):           # this run's artefacts only
        old.unlink()
    port = stack[1]["console"].port
    with chromium(tmp_path_factory.mktemp("profile"), viewport={"width": 1400, "height": 1450}) as browser:
        pg, errors = new_page(browser)
        pg.goto(f"http://127.0.0.1:{port}/")
        yield pg, errors


def expect(locator):
    return sync_api.expect(locator)


def shot(pg, name):
    pg.screenshot(path=str(ART / f"{name}.png"))


def wait_for(pred, pg, what, timeout_s=30.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return
        pg.wait_for_timeout(50)
    raise AssertionError(f"timed out waiting for {what}")


def test_page_loads_and_shows_the_robot_without_console_errors(stack, page):
    pg, errors = page
    expect(pg.locator("#conn")).to_have_text("connected", timeout=T_UI)
    expect(pg.locator("#seq")).not_to_have_text("-", timeout=T_UI)
    expect(pg.locator("#joints tbody tr")).to_have_count(7, timeout=T_UI)      # FR3 from arm_teleop
    expect(pg.locator("#teleop-mode")).not_to_have_text("-", timeout=T_UI)
    expect(pg.locator("#ee-pos")).not_to_have_text("-", timeout=T_UI)
    expect(pg.locator("#pid-joint option")).not_to_have_count(0, timeout=T_UI)
    shot(pg, "01_loaded")
    assert errors == []


def test_safe_stop_from_the_page_stops_the_simulated_base_within_100ms_sim_time(stack, page):
    ctx, nodes, tino = stack
    pg, errors = page
    rec, atomic, console = nodes["rec"], nodes["atomic"], nodes["console"]
    assert atomic.ctrl.fault is None
    # the operator's pulse (what hri_pulse sends): state 3 forward -> the base drives
    for _ in range(3):
        rec.pulse.publish(msgs.new("geometry_msgs/msg/Twist", linear=msgs.new("geometry_msgs/msg/Vector3", x=3.0)))
        pg.wait_for_timeout(40)
    rec.pulse.publish(msgs.new("geometry_msgs/msg/Twist"))
    wait_for(lambda: any(e[1] == "vel" and e[2] > 0 for e in rec.snapshot()), pg, "the base moving")
    shot(pg, "02_moving")
    pg.click("#stop")
    wait_for(lambda: console.stop_events, pg, "the console publishing the stop")
    t_stop = console.stop_events[-1]
    ev = rec.snapshot()

    def zero_after_stop(events):
        i = next((k for k, e in enumerate(events) if e[1] == "stop" and e[2]), None)
        if i is None:
            return None
        return next((e for e in events[i:] if e[1] == "vel" and e[2] == 0.0 and e[3] == 0.0), None)

    wait_for(lambda: zero_after_stop(rec.snapshot()) is not None, pg, "a zero velocity command")
    ev = rec.snapshot()
    t_zero = zero_after_stop(ev)[0]
    latency_s = t_zero - t_stop
    (ART / "stop_latency.txt").write_text(f"safe stop -> zero base command: {latency_s * 1e3:.1f} ms simulated time "
                                          f"(atomic period {tino['atomic']['node']['period_s'] * 1e3:.1f} ms)\n")
    assert 0.0 <= latency_s <= 0.100
    assert atomic.ctrl.fault is not None and atomic.ctrl.fault.value == "system_stop"
    assert atomic.sim.leg_rpm_cmd == 0.0
    # nothing moves afterwards: every later base command is zero while the fault is latched
    wait_for(lambda: "FAULT" in pg.locator("#atomic").inner_text(), pg, "the fault on the page")
    expect(pg.locator("#safestop")).to_contain_text("STOPPED", timeout=T_UI)
    expect(pg.locator("#ok")).to_contain_text("safe_stop ok (reached 1 subscriber)", timeout=T_UI)
    shot(pg, "03_safe_stop")
    later = [e for e in rec.snapshot() if e[0] > t_zero and e[1] == "vel"]
    assert later and all(e[2] == 0.0 and e[3] == 0.0 for e in later)
    # a command nobody can take is refused with why: this stack runs no interaction node
    pg.click("#setmode")
    expect(pg.locator("#reason")).to_contain_text(
        "set_mode refused: service /interaction/set_parameters_atomically is not available", timeout=T_UI)
    # release: the explicit reset (/safety/reset) + atomic fault reset, as a script would do it
    pg.click("#release")
    wait_for(lambda: atomic.ctrl.fault is None, pg, "the fault reset")
    expect(pg.locator("#safestop")).to_have_text("released", timeout=T_UI)
    assert errors == []


def emulate(port, *extra):
    return subprocess.Popen([HRI, "vr-emulate", "--robot", "tino", "--host", "127.0.0.1", "--port", str(port),
                             *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def health(pg):
    return pg.evaluate("last && last.health ? last.health : {}").get(LINK)


def test_link_health_follows_vr_emulate_start_loss_and_stop(stack, page):
    """One `hri vr-emulate` run over real UDP: connected and OK, then a burst loss (0.5 s, less
    than the link timeout) counted in the lost column while still connected, then the emulator
    ends: not connected, not OK, and hri_pulse's link safe stop latches on the base."""
    ctx, nodes, tino = stack
    pg, errors = page
    port = nodes["vr"].port
    row = pg.locator(f'#health tr[data-name="{LINK}"]')
    seen = {"ok": False, "lost": False}

    def during_run():
        v = (health(pg) or {}).get("values", {})
        if v.get("connected") == "True":
            seen["ok"] |= row.locator(".level").inner_text() == "OK" and int(v["seq_lost"]) == 0
            if int(v["seq_lost"]) > 0 and not seen["lost"]:
                seen["lost"] = True
                shot(pg, "05_link_loss")
            elif seen["ok"] and not seen.get("shot"):
                seen["shot"] = True
                shot(pg, "04_link_ok")
        return seen["ok"] and seen["lost"]

    proc = emulate(port, "--duration", "3.5", "--burst", "2.0:0.5", "--seed", "1")
    try:
        wait_for(during_run, pg, "connected/OK, then the burst loss counted")
        expect(row.locator(".connected")).to_have_text("True", timeout=T_UI)
        assert int(row.locator(".lost").inner_text()) > 0
    finally:
        proc.wait(30)
    assert proc.returncode == 0, proc.stderr.read()
    wait_for(lambda: (health(pg) or {}).get("values", {}).get("connected") == "False", pg, "disconnected")
    expect(row.locator(".connected")).to_have_text("False", timeout=T_UI)
    expect(row.locator(".level")).not_to_have_text("OK", timeout=T_UI)
    wait_for(lambda: nodes["atomic"].ctrl.fault is not None, pg, "the link safe stop latched")
    expect(pg.locator("#atomic")).to_contain_text("FAULT", timeout=T_UI)
    shot(pg, "06_link_lost")
    # the link monitor keeps requesting the stop while the headset is gone: RESET is refused
    # with the supervisor's sentence, and the base stays stopped
    pg.click("#release")
    expect(pg.locator("#reason")).to_contain_text("link_loss still requested", timeout=T_UI)
    assert nodes["atomic"].ctrl.fault is not None and nodes["supervisor"].latch.stopped
    assert errors == []


def test_pid_window_autotune_apply_recording_and_invalid_gain(stack, page):
    ctx, nodes, tino = stack
    pg, errors = page
    tuner, rec = nodes["pid"], nodes["rec"]
    pg.select_option("#pid-joint", "hand")
    pg.click("#pid-autotune")
    rows = pg.locator("#autotune tbody tr")
    expect(rows).not_to_have_count(0, timeout=60000)
    expect(pg.locator("#ok")).to_contain_text("pid_autotune ok", timeout=T_UI)
    table = pg.evaluate("last.pid.autotune.hand")
    assert table["relay"]["ok"] and rows.count() == len(table["heuristics"]) >= 3
    shot(pg, "07_autotune")
    row = next(h for h in table["heuristics"] if h != table["applied"])
    pg.locator(f'#autotune tr[data-heuristic="{row}"] button.apply').click()
    wait_for(lambda: tuner.session.storage.acknowledged["hand"] is not None and
             tuner.session.storage.acknowledged["hand"].to_dict() == pytest.approx(table["heuristics"][row]),
             pg, f"{row} acknowledged by the controller")
    expect(pg.locator(f'#autotune tr[data-heuristic="{row}"]')).to_have_class("applied", timeout=T_UI)
    shot(pg, "08_applied")
    # manual recording with the live signed-error graph
    joints = tuner.server.joints
    pg.click("#pid-record")
    expect(pg.locator("#ok")).to_contain_text("pid_record ok", timeout=T_UI)
    for k in range(30):
        sp = [0.3 if j == "hand" else 0.0 for j in joints]
        rec.sp.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=sp))
        rec.js.publish(msgs.new("sensor_msgs/msg/JointState", name=joints,
                                position=[x - 0.02 * (1 - k / 30) for x in sp]))
        pg.wait_for_timeout(10)
    wait_for(lambda: pg.evaluate("(last.pid.error.hand || []).length") >= 30, pg, "error samples on the page")
    shot(pg, "09_error_graph")
    pg.click("#pid-stop")
    expect(pg.locator("#ok")).to_contain_text("pid_stop ok", timeout=T_UI)
    # invalid gains: refused with the reason shown, nothing reaches the controller
    before = tuner.session.storage.acknowledged["hand"].to_dict()
    hand = pg.locator('#gains tr[data-joint="hand"]')
    hand.locator("input.new-kp").fill("-3")
    hand.locator("button.apply").click()
    expect(pg.locator("#reason")).to_contain_text("pid_apply refused: kp=-3 outside", timeout=T_UI)
    pg.fill("#stiff3", "abc")
    pg.click("#setgains")
    expect(pg.locator("#reason")).to_contain_text("set_gains refused: stiffness[3] must be a number, got null", timeout=T_UI)
    shot(pg, "10_invalid_gain")
    assert tuner.session.storage.acknowledged["hand"].to_dict() == before
    assert tuner.server.rejected == {}
    assert errors == []
    if os.environ.get("HRI_CONSOLE_SCREENSHOT") == "1":      # only when the page changed
        (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
        shutil.copy(ART / "10_invalid_gain.png", ROOT / "docs" / "img" / "console.png")
    json.dumps(table)  # the table is plain JSON (what the page got)


def test_token_in_the_browser_page_and_websocket(page):
    """With console.token set (here with a non-loopback-capable config, bound on loopback):
    without the token the page is refused (401); with ?token= the page and its WebSocket work."""
    pg, errors = page
    cfg = load_robot_config("fr3")
    cfg["console"] = {**cfg["console"], "token": "t0ken-for-test"}
    node = ConsoleNode(cfg=cfg, context=InprocContext(), parameters={"console.port": 0})
    try:
        p2 = pg.context.new_page()
        resp = p2.goto(f"http://127.0.0.1:{node.port}/")
        assert resp.status == 401
        resp = p2.goto(f"http://127.0.0.1:{node.port}/?token=wrong")
        assert resp.status == 401
        p2.goto(f"http://127.0.0.1:{node.port}/?token=t0ken-for-test")
        expect(p2.locator("#conn")).to_have_text("connected", timeout=T_UI)
        expect(p2.locator("#seq")).not_to_have_text("-", timeout=T_UI)
        p2.close()
        assert node.server.refused >= 2         # chromium may retry a refused navigation
    finally:
        node.destroy_node()
    assert errors == []
