"""The console's PID tuning panel in headless Debian chromium (Playwright) against the real
tuning node (hri_pid_tuning, simulated humanoid arm in MuJoCo) on hri_runtime's in-process
transport: the thesis's test-control window (Webel's thesis §3.4) – the evaluation table under
the graph (the selected joint per motion, then all joints and motions), the sign-flip step, "reset
all PIDs" to one configuration, a manual recording saved as a motion and replayed, and "Save
Results" exporting the run in the thesis's folder layout. Bad input is refused with its reason on
the page and changes nothing. Screenshots go to runs/console-screenshots/ (git-ignored)."""
from __future__ import annotations

import json
import math
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
from hri_pid_tuning.nodes.tuning_node import PidTuningNode  # noqa: E402
from hri_pid_tuning.report import read_run  # noqa: E402
from hri_pid_tuning.session import TuningSession  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ART = ROOT / "runs" / "console-screenshots"
T_UI = 60000          # ms: generous UI wait (a service runs a simulated test on 2 shared cores); not asserted


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tuning_panel")
    ctx = InprocContext(start_time_s=100.0)
    tuner = PidTuningNode(session=TuningSession.create("humanoid_arm", "s2"), context=ctx, parameters={
        "pid_tuning.node.configuration_path": str(tmp / "pid.json"),
        "pid_tuning.node.results_dir": str(tmp / "results"), "pid_tuning.node.motions_dir": str(tmp / "motions")})
    operator = Node("operator", context=ctx)
    pubs = (operator.create_publisher("sensor_msgs/msg/JointState", "/joint_setpoints"),
            operator.create_publisher("sensor_msgs/msg/JointState", "/joint_states"))
    console = ConsoleNode(cfg=load_robot_config("fr3"), context=ctx, parameters={"console.port": 0})
    spinner = threading.Thread(target=ctx.spin, name="inproc-spin", daemon=True)
    spinner.start()
    yield tuner, console, pubs, tmp
    ctx.shutdown()
    spinner.join(10)
    for n in (console, operator, tuner):
        n.destroy_node()


@pytest.fixture(scope="module")
def page(stack, tmp_path_factory):
    ART.mkdir(parents=True, exist_ok=True)
    with chromium(tmp_path_factory.mktemp("profile"), viewport={"width": 1400, "height": 1600}) as browser:
        pg, errors = new_page(browser)
        pg.goto(f"http://127.0.0.1:{stack[1].port}/")
        sync_api.expect(pg.locator("#pid-joint option")).not_to_have_count(0, timeout=T_UI)
        yield pg, errors


def expect(locator):
    return sync_api.expect(locator)


def eval_rows(pg) -> dict[str, dict[str, str]]:
    """The evaluation table under the graph: row label -> {metric: cell text}."""
    return pg.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#pid-eval tbody tr')]
        .filter(tr => tr.querySelector('th')).map(tr => [tr.querySelector('th').textContent,
        Object.fromEntries([...tr.querySelectorAll('td')].map(td => [td.dataset.metric, td.textContent]))]))""")


def click_ok(pg, button, command):
    pg.click(button)
    expect(pg.locator("#ok")).to_contain_text(f"{command} ok", timeout=T_UI)


def test_a_test_fills_the_evaluation_table_under_the_graph(stack, page):
    tuner, *_ = stack
    pg, errors = page
    expect(pg.locator("#pid-eval tbody tr.none")).to_have_count(1)
    pg.select_option("#pid-joint", "shoulder_y")
    click_ok(pg, "#pid-start", "pid_start")
    expect(pg.locator("#pid-eval tbody tr.joint")).to_have_count(1, timeout=T_UI)
    run = tuner.session.runner.last_run
    rows = eval_rows(pg)
    assert list(rows) == ["shoulder_y · step_shoulder_y", "all joints, all motions"]
    mine = run.motions[0].joint_evaluations["shoulder_y"]
    assert rows["shoulder_y · step_shoulder_y"]["AvgAbsoluteError"] == f"{mine.avg_absolute_error:.2f}"
    assert rows["all joints, all motions"]["AvgAbsoluteError"] == f"{run.evaluation.avg_absolute_error:.2f}"
    assert rows["all joints, all motions"]["Samples"] == str(run.evaluation.samples)
    # another joint selected: its row of the same run
    pg.select_option("#pid-joint", "elbow")
    expect(pg.locator("#pid-eval tbody tr.joint th")).to_have_text("elbow · step_shoulder_y")
    pg.screenshot(path=str(ART / "20_tuning_evaluation.png"))
    assert errors == []


def test_sign_flip_step_of_the_selected_joint(stack, page):
    tuner, *_ = stack
    pg, errors = page
    pg.select_option("#pid-joint", "hand")
    click_ok(pg, "#pid-flip", "pid_flip")
    expect(pg.locator("#pid-eval tbody tr.joint th")).to_have_text("hand · flip_hand", timeout=T_UI)
    m = tuner.session.runner.last_run.motions[0]
    a = math.radians(tuner.session.params.sign_flip_angle_deg)
    assert m.motion == "flip_hand" and min(m.samples["hand"].desired_rad) == pytest.approx(-a)
    # the elbow (30 deg) cannot go negative: refused with the reason, nothing played
    pg.select_option("#pid-joint", "elbow")
    pg.click("#pid-flip")
    expect(pg.locator("#reason")).to_contain_text("pid_flip refused: elbow: a sign flip 30.0 -> -30.0 deg leaves",
                                                  timeout=T_UI)
    assert tuner.session.runner.last_run.motions[0] is m
    assert errors == []


def test_reset_all_pids_to_one_configuration(stack, page):
    tuner, *_ = stack
    pg, errors = page
    st = tuner.session.storage
    pg.fill("#all-kp", "7.5")
    pg.fill("#all-ki", "0.25")
    pg.fill("#all-kd", "0.4")
    click_ok(pg, "#pid-apply-all", "pid_apply_all")
    want = {"kp": 7.5, "ki": 0.25, "kd": 0.4}
    assert all(st.acknowledged[j].to_dict() == want for j in tuner.server.joints)
    for j in tuner.server.joints:            # the gains table shows it after the next status
        expect(pg.locator(f'#gains tr[data-joint="{j}"] td.kp')).to_have_text("7.5000", timeout=T_UI)
    before = dict(st.local)
    pg.fill("#all-kd", "")
    pg.click("#pid-apply-all")
    expect(pg.locator("#reason")).to_contain_text("pid_apply_all refused: kd must be a number, got null",
                                                  timeout=T_UI)
    pg.fill("#all-kd", "-1")
    pg.click("#pid-apply-all")
    expect(pg.locator("#reason")).to_contain_text("pid_apply_all refused: kd=-1 outside", timeout=T_UI)
    assert st.local == before
    assert errors == []


def test_recording_saved_as_a_motion_replayed_and_the_results_saved(stack, page):
    tuner, console, (sp_pub, js_pub), tmp = stack
    pg, errors = page
    joints = tuner.server.joints
    base = [float(q) for q in tuner.session.plant.base_pose_rad]
    i = joints.index("shoulder_y")
    pg.select_option("#pid-joint", "shoulder_y")
    click_ok(pg, "#pid-record", "pid_record")
    expect(pg.locator("#pid-eval tbody tr.none")).to_have_count(1, timeout=T_UI)   # the old data discarded
    for k in range(80):                       # the operator waves shoulder_y (±10 deg); the robot lags 1 deg
        sp = list(base)
        sp[i] += math.radians(10.0) * math.sin(2 * math.pi * k / 80)
        sp_pub.publish(msgs.new("sensor_msgs/msg/JointState", name=joints, position=sp))
        m = msgs.new("sensor_msgs/msg/JointState", name=joints, position=[x - math.radians(1.0) for x in sp])
        m.header.stamp.sec, m.header.stamp.nanosec = 200 + k // 50, (k % 50) * 20_000_000
        js_pub.publish(m)
        end = time.monotonic() + 30
        while tuner.session.runner.recorded_frames < k + 1 and time.monotonic() < end:
            time.sleep(0.002)
    click_ok(pg, "#pid-stop", "pid_stop")
    expect(pg.locator("#pid-eval tbody tr.joint th")).to_have_text("shoulder_y · recording", timeout=T_UI)
    assert eval_rows(pg)["shoulder_y · recording"]["AvgAbsoluteError"] == "1.00"
    # a bad name is refused on the page; a good one becomes a motion the status lists
    pg.fill("#pid-motion-name", "../wave")
    pg.click("#pid-save-motion")
    expect(pg.locator("#reason")).to_contain_text("pid_save_motion refused: motion must be a name", timeout=T_UI)
    pg.fill("#pid-motion-name", "wave")
    click_ok(pg, "#pid-save-motion", "pid_save_motion")
    assert json.loads((tmp / "motions" / "wave.json").read_text())["name"] == "wave"
    expect(pg.locator("#pid-motion option")).to_have_text(["wave"], timeout=T_UI)
    pg.select_option("#pid-motion", "wave")
    click_ok(pg, "#pid-replay", "pid_replay")
    expect(pg.locator("#pid-eval tbody tr.joint th")).to_have_text("shoulder_y · wave", timeout=T_UI)
    played = tuner.session.runner.last_run.motions[0]
    assert played.motion == "wave"
    assert max(played.samples["shoulder_y"].desired_rad) == pytest.approx(base[i] + math.radians(10.0), abs=1e-3)
    # Save Results: the replay in the thesis's folder layout, with the configuration
    click_ok(pg, "#pid-save", "pid_save")
    expect(pg.locator("#ok")).to_contain_text("exported to")
    (folder,) = list((tmp / "results").iterdir())
    run = read_run(folder)
    assert run["run"]["motions"] == ["wave"] and set(run["motions"]["wave"]["joints"]) == set(joints)
    assert f"{run['motions']['wave']['joints']['shoulder_y']['AvgAbsoluteError']:.2f}" == \
        eval_rows(pg)["shoulder_y · wave"]["AvgAbsoluteError"]
    pg.screenshot(path=str(ART / "21_tuning_replay_saved.png"))
    assert errors == []
