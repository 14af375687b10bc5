"""ConsoleCommands (hri_console.core.commands) without a node: what each command asks of the
stack through its ports, what it replies, refusals with the stack's sentence, the busy state
around a PID call, and the safe-stop bookkeeping (bounded). The ports here record the requests
and answer as the stack would; the node tests run the same commands against real services."""
import json
from types import SimpleNamespace

import pytest

from hri_console.core.commands import STOP_EVENTS_KEPT, ConsoleCommands
from hri_console.core.protocol import Command, ConsoleParams, Rejected
from hri_console.core.state import ConsoleState, state_view
from hri_runtime.config.tree import load_robot_config

P = ConsoleParams.from_tree(load_robot_config("fr3"))
IMPEDANCE = {"stiffness": "interaction.impedance.stiffness_diag", "damping": "interaction.impedance.damping_diag"}


class Stack:
    """The other side of the ports: records what was asked and answers with ``self.answer``."""

    def __init__(self):
        self.t = 10.0
        self.state = ConsoleState(P.state, P.forward, clock=lambda: self.t, joint_names=["a", "b"],
                                  position_min_rad=[-1.0, -1.0], position_max_rad=[1.0, 1.0])
        self.calls, self.busy_seen, self.logs = [], [], []
        self.answer = SimpleNamespace(success=True, message="done", result_json="")
        self.params_answer = (True, "", "/interaction")
        self.cmds = ConsoleCommands(
            self.state, lambda: self.t, call_pid=self.call_pid, set_parameters=self.set_parameters,
            reset_stop=lambda: self._record("reset"), publish_atomic_reset=self.publish_reset,
            publish_stop=lambda: {"topic": "/safety/stop_request", "subscribers": 1},
            mode_param="interaction.mode", impedance_params=IMPEDANCE, log=self.logs.append)

    def _record(self, *call):
        self.calls.append(call)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def call_pid(self, name, **fields):
        self.busy_seen.append(self.state.snapshot()["pid"]["busy"])
        return self._record("pid", name, fields)

    def set_parameters(self, values):
        self.calls.append(("params", dict(values)))
        return self.params_answer

    def publish_reset(self, expected):
        self.calls.append(("atomic_reset", expected))
        return {"topic": "/atomic/reset", "subscribers": 0}

    def run(self, type_, msg_id=7, **args):
        return self.cmds.dispatch(Command(type_, msg_id, args))


@pytest.fixture
def stack():
    return Stack()


def test_mode_and_gains_are_one_parameter_set_each(stack):
    assert stack.run("set_mode", mode="impedance") == {
        "mode": "impedance", "message": "interaction.mode set on /interaction", "node": "/interaction"}
    K, D = [60, 60, 60, 90, 90, 90], [1, 1, 2, 3, 4, 5]
    r = stack.run("set_gains", gains={"stiffness": K, "damping": D})
    assert stack.calls[-1] == ("params", {IMPEDANCE["stiffness"]: [float(k) for k in K],
                                          IMPEDANCE["damping"]: [float(d) for d in D]})
    assert r["stiffness"] == K and r["message"].startswith(IMPEDANCE["stiffness"])
    stack.params_answer = (False, "mode 'x' is not one of ...", "/interaction")
    with pytest.raises(Rejected) as e:
        stack.run("set_mode", mode="x")
    assert (e.value.cause, e.value.reason, e.value.msg_id) == ("service_refused", "mode 'x' is not one of ...", 7)


def test_pid_commands_call_their_service_and_show_busy_only_while_it_runs(stack):
    stack.answer = SimpleNamespace(success=True, message="applied",
                                   result_json=json.dumps({"gains": {"kp": 2.0}, "tuning": None}))
    r = stack.run("pid_apply", joint="elbow", heuristic="ziegler_nichols")
    assert stack.calls[-1] == ("pid", "apply", {"joint": "elbow", "heuristic": "ziegler_nichols", "gains": []})
    assert r["message"] == "applied" and r["gains"] == {"kp": 2.0}
    assert stack.busy_seen[-1]["command"] == "pid_apply" and stack.state.snapshot()["pid"]["busy"] is None
    stack.run("pid_start", joint="elbow")
    assert stack.calls[-1][1] == "evaluate"
    stack.run("pid_apply_all", gains={"kp": 1.0, "ki": 0.0, "kd": 0.1})
    assert stack.calls[-1] == ("pid", "apply_all", {"joint": "", "heuristic": "", "gains": [1.0, 0.0, 0.1]})
    stack.run("pid_replay", motion="wave")
    assert stack.calls[-1] == ("pid", "replay", {"motion": "wave"})
    stack.run("pid_save")
    assert stack.calls[-1] == ("pid", "save", {})


def test_a_refused_or_unreachable_pid_call_is_rejected_with_its_sentence(stack):
    stack.answer = SimpleNamespace(success=False, message="gains leave their limits")
    with pytest.raises(Rejected) as e:
        stack.run("pid_autotune", joint="elbow")
    assert (e.value.cause, e.value.reason) == ("service_refused", "gains leave their limits")
    assert stack.state.snapshot()["pid"]["last_reply"]["success"] is False
    stack.answer = Rejected("unavailable", "service /pid/auto_tune is not available")
    with pytest.raises(Rejected) as e:
        stack.run("pid_autotune", msg_id=9, joint="elbow")
    assert e.value.cause == "unavailable" and e.value.msg_id == 9
    assert stack.state.snapshot()["pid"]["busy"] is None                  # cleared on every path
    with pytest.raises(Rejected) as e:                                     # an index needs the tuning node's joints
        stack.run("pid_flip", joint=3)
    assert e.value.cause == "out_of_range"


def test_release_stop_resets_then_clears_an_atomic_fault_only_when_the_reset_is_taken(stack):
    stack.answer = SimpleNamespace(success=False, message="no stop to release")
    with pytest.raises(Rejected):
        stack.run("release_stop")
    assert stack.calls == [("reset",)]                                     # nothing published
    stack.answer = SimpleNamespace(success=True, message="released")
    r = stack.run("release_stop")
    assert stack.calls[-1] == ("atomic_reset", False)                      # no atomic node seen: no warning due
    assert r == {"message": "released", "topic": "/atomic/reset", "subscribers": 0}
    stack.state.on_atomic_state({"mode": "idle"})
    stack.run("release_stop")
    assert stack.calls[-1] == ("atomic_reset", True)
    assert stack.logs[-1] == "RESET from the console: released"


def test_safe_stops_are_counted_and_their_times_bounded(stack):
    for k in range(STOP_EVENTS_KEPT + 5):
        stack.t = 100.0 + k
        r = stack.cmds.safe_stop()
    assert r == {"topic": "/safety/stop_request", "subscribers": 1, "t_s": stack.t}
    assert stack.cmds.stops_published == STOP_EVENTS_KEPT + 5 and len(stack.cmds.stop_events) == STOP_EVENTS_KEPT
    assert stack.cmds.stop_events[-1] == stack.t and stack.state.snapshot()["robot"]["safe_stop"] is True


def test_ping_and_an_unknown_command(stack):
    assert stack.run("ping") == {"t_s": 10.0}
    with pytest.raises(Rejected) as e:
        stack.run("warp_drive")
    assert e.value.cause == "unavailable"


def test_state_view_flattens_counts_and_gains():
    d = state_view({"stamp": 1, "rejected": [{"name": "nan", "count": 2}], "admittance_lambda": 0.5},
                   "hri_interfaces/msg/InteractionState")
    assert d == {"rejected": {"nan": 2}, "lambda": 0.5}
    s = state_view({"gains": [{"joint": "elbow", "kp": 1.0, "ki": 0.0, "kd": 0.1, "acknowledged": False}]},
                   "hri_interfaces/msg/PidTuningStatus")
    assert s == {"gains": {"elbow": {"kp": 1.0, "ki": 0.0, "kd": 0.1}}, "acknowledged": {"elbow": None}}


def test_delivery_warns_only_when_nobody_received_what_someone_was_expected_to():
    from hri_console.core.commands import delivery

    assert delivery("/safety/stop_request", 2) == {"topic": "/safety/stop_request", "subscribers": 2}
    assert delivery("/atomic/reset", 0, expected=False) == {"topic": "/atomic/reset", "subscribers": 0}
    warned = delivery("/safety/stop_request", 0)
    assert warned["warning"] == "no subscriber on /safety/stop_request: nothing received it"


def test_a_service_port_answers_its_reply_or_one_rejection_per_cause():
    from hri_console.core.commands import require_ready, service_reply
    from hri_runtime.task import Future

    require_ready(True, "/pid_tuning/apply")
    with pytest.raises(Rejected) as rej:
        require_ready(False, "/safety/reset", " (is the stop supervisor running?)")
    assert (rej.value.cause, str(rej.value.reason)) == (
        "unavailable", "service /safety/reset is not available (is the stop supervisor running?)")
    answered = Future()
    answered.set_result("reply")
    assert service_reply(answered, "/pid_tuning/apply", 0.5) == "reply"
    with pytest.raises(Rejected) as rej:
        service_reply(Future(), "/pid_tuning/apply", 0.01)          # nobody answers
    assert rej.value.cause == "timeout" and "no reply within 0.01 s" in rej.value.reason
    failed = Future()
    failed.set_exception(RuntimeError("transport closed"))
    with pytest.raises(Rejected) as rej:
        service_reply(failed, "/pid_tuning/apply", 0.5)
    assert rej.value.cause == "unavailable" and rej.value.reason == "/pid_tuning/apply: transport closed"


def test_the_snapshot_adds_the_stops_published_and_the_nodes_fields(stack):
    stack.cmds.safe_stop()
    snap = stack.cmds.snapshot(modes=["impedance"], safe_stop_topic="/safety/stop_request")
    assert snap["stops_published"] == 1 and snap["modes"] == ["impedance"]
    assert snap["safe_stop_topic"] == "/safety/stop_request"
    assert set(stack.state.snapshot()) <= set(snap)


def test_the_state_of_the_robots_joints_takes_their_limits_in_degrees():
    import math

    st = ConsoleState.of_joints(P, ["a", "b"], [-90.0, -45.0], [90.0, 45.0], clock=lambda: 1.0)
    st.on_joint_states(["a", "b"], [0.5, 0.0])
    a, b = st.snapshot()["robot"]["joints"]
    assert (a["min_rad"], a["max_rad"]) == pytest.approx((-math.pi / 2, math.pi / 2))
    assert a["margin_rad"] == pytest.approx(math.pi / 2 - 0.5) and b["max_rad"] == pytest.approx(math.pi / 4)
    bare = ConsoleState.of_joints(P, None, None, None, clock=lambda: 1.0)
    bare.on_joint_states(["a"], [0.5])
    assert bare.snapshot()["robot"]["joints"][0]["min_rad"] is None
