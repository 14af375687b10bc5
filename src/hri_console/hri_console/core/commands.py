"""The console's commands: what each validated command (:class:`hri_console.core.protocol.Command`)
asks of the stack, and the safe-stop bookkeeping. The logic of the ``console`` node's dispatch.

No middleware: the stack is reached through ports the node injects (each a callable; a port that
cannot deliver raises :class:`Rejected` with cause ``unavailable`` or ``timeout`` and its sentence):

* ``call_pid(name, **fields)`` -> the reply of ``<pid_service>/<name>`` (``success``, ``message``,
  optionally ``result_json``);
* ``set_parameters(values)`` -> ``(successful, reason, node)``: one atomic parameter set on the
  interaction node (``values``: parameter name -> value);
* ``reset_stop()`` -> the reply of the stop supervisor's reset (``success``, ``message``);
* ``publish_atomic_reset(expected)`` and ``publish_stop()`` -> the delivery dict of the publish
  (``topic``, ``subscribers``, a ``warning`` when nobody received it and someone was expected).

Commands and what they do:

| command | calls | reply |
|---|---|---|
| ``ping`` | – | ``t_s`` |
| ``release_stop`` | ``reset_stop``; on success ``publish_atomic_reset`` (expected once an atomic state was seen) | the reset's message + delivery |
| ``set_mode`` | ``set_parameters({mode_param: mode})`` | ``mode``, message, node |
| ``set_gains`` | ``set_parameters`` of both impedance gains (stiffness, damping) at once | the gains, message, node |
| ``pid_autotune``, ``pid_apply``, ``pid_apply_all``, ``pid_start`` (evaluate), ``pid_flip``, ``pid_replay``, ``pid_save_motion``, ``pid_record``/``pid_stop``/``pid_reset``/``pid_save`` | ``call_pid`` | the service's message and result |

A refused call (``success`` false) is :class:`Rejected` ``service_refused`` with the service's
sentence. While a PID call runs, the state shows it as busy (``ConsoleState.set_busy``).
"""
from __future__ import annotations

import json
from collections import deque
from typing import Any, Callable, Mapping

from hri_console.core.protocol import PID_TRIGGERS, Command, Rejected
from hri_console.core.state import ConsoleState

__all__ = ["ConsoleCommands", "STOP_EVENTS_KEPT", "delivery", "require_ready", "service_reply"]

STOP_EVENTS_KEPT = 64     # safe-stop times kept in ``ConsoleCommands.stop_events`` (the last ones)


def delivery(topic: str, subscribers: int, expected: bool = True) -> dict:
    """The delivery dict of a publish: ``topic``, ``subscribers`` (matched subscriptions when it
    was sent) and a ``warning`` when that is 0 and someone was ``expected``."""
    out = {"topic": topic, "subscribers": int(subscribers)}
    if subscribers == 0 and expected:
        out["warning"] = f"no subscriber on {topic}: nothing received it"
    return out


def require_ready(ready: bool, srv_name: str, hint: str = "") -> None:
    """:class:`Rejected` ``unavailable`` unless the service is ``ready`` (``hint``: what to start)."""
    if not ready:
        raise Rejected("unavailable", f"service {srv_name} is not available{hint}")


def service_reply(future, srv_name: str, timeout_s: float) -> Any:
    """The reply a service call's ``future`` (``wait(timeout_s)``, ``exception()``, ``result()``)
    brings within ``timeout_s``; :class:`Rejected` ``timeout`` without one, ``unavailable`` when
    the call failed."""
    if not future.wait(timeout_s):
        raise Rejected("timeout", f"{srv_name}: no reply within {timeout_s:g} s")
    if future.exception() is not None:
        raise Rejected("unavailable", f"{srv_name}: {future.exception()}")
    return future.result()


class ConsoleCommands:
    def __init__(self, state: ConsoleState, clock: Callable[[], float], *, call_pid: Callable[..., Any],
                 set_parameters: Callable[[Mapping[str, Any]], tuple[bool, str, str]],
                 reset_stop: Callable[[], Any], publish_atomic_reset: Callable[[bool], dict],
                 publish_stop: Callable[[], dict], mode_param: str, impedance_params: Mapping[str, str],
                 log: Callable[[str], Any] = lambda s: None):
        self.state = state
        self.clock = clock
        self.call_pid = call_pid
        self.set_parameters = set_parameters
        self.reset_stop = reset_stop
        self.publish_atomic_reset = publish_atomic_reset
        self.publish_stop = publish_stop
        self.mode_param = mode_param
        self.impedance_params = dict(impedance_params)      # "stiffness" / "damping" -> parameter name
        self.log = log
        # clock times of the last safe stops published (bounded: a node runs for hours), and the count
        self.stop_events: deque[float] = deque(maxlen=STOP_EVENTS_KEPT)
        self.stops_published = 0

    def safe_stop(self) -> dict:
        """Publish the stop request at once (the caller's thread, no queue) and count it."""
        delivery = self.publish_stop()
        t = self.clock()
        self.stop_events.append(t)
        self.stops_published += 1
        self.state.on_safe_stop(True)
        return {**delivery, "t_s": t}

    def snapshot(self, **extra) -> dict:
        """What the page shows: the state's snapshot, ``stops_published`` and the node's ``extra``."""
        return {**self.state.snapshot(), "stops_published": self.stops_published, **extra}

    def dispatch(self, cmd: Command) -> Any:
        """Run one validated command (not ``safe_stop``): its reply, or :class:`Rejected`."""
        try:
            return self._dispatch(cmd)
        except Rejected as rej:
            if rej.msg_id is None:
                rej.msg_id = cmd.id
            raise

    def _pid(self, name: str, cmd: Command, **fields) -> tuple[Any, dict]:
        self.state.set_busy(cmd.type, json.dumps(cmd.args))
        try:
            resp = self.call_pid(name, **fields)
        finally:
            self.state.set_busy(None)
        result = self.state.on_pid_reply(cmd.type, resp.success, resp.message, getattr(resp, "result_json", ""))
        if not resp.success:
            raise Rejected("service_refused", resp.message, cmd.id)
        return resp, result

    def _set(self, cmd: Command, values: Mapping[str, Any]) -> dict:
        successful, reason, node = self.set_parameters(values)
        if not successful:
            raise Rejected("service_refused", reason, cmd.id)
        return {"message": f"{', '.join(values)} set on {node}", "node": node}

    def _dispatch(self, cmd: Command) -> Any:
        a, t = cmd.args, cmd.type
        if t == "ping":
            return {"t_s": self.clock()}
        if t == "release_stop":
            resp = self.reset_stop()
            if not resp.success:
                raise Rejected("service_refused", resp.message, cmd.id)
            self.log(f"RESET from the console: {resp.message}")
            # an arm stack has no atomic node: nobody on the atomic reset is only a warning on Tino
            return {"message": resp.message, **self.publish_atomic_reset(self.state.has_atomic())}
        if t == "set_mode":
            return {"mode": a["mode"], **self._set(cmd, {self.mode_param: str(a["mode"])})}
        if t == "set_gains":
            g = a["gains"]
            return {**g, **self._set(cmd, {self.impedance_params[k]: [float(x) for x in g[k]]
                                           for k in ("stiffness", "damping")})}
        if t == "pid_autotune":
            resp, result = self._pid("auto_tune", cmd, joint=self.state.pid_joint(a["joint"], cmd.id), heuristic="")
            return {"message": resp.message, "tuning": result.get("tuning"), "gains": result.get("gains")}
        if t == "pid_apply":
            joint = self.state.pid_joint(a["joint"], cmd.id)
            if "heuristic" in a:
                resp, result = self._pid("apply", cmd, joint=joint, heuristic=a["heuristic"], gains=[])
                self.state.on_applied(joint, a["heuristic"])
            else:
                resp, result = self._pid("apply", cmd, joint=joint, heuristic="",
                                         gains=self.state.pid_gains(joint, a["gains"], cmd.id))
                self.state.on_applied(joint, None)
            return {"message": resp.message, **result}
        if t in ("pid_start", "pid_flip"):
            joint = self.state.pid_joint(a["joint"], cmd.id)
            resp, result = self._pid("evaluate" if t == "pid_start" else "flip", cmd, joint=joint, heuristic="",
                                     gains=[])
            return {"message": resp.message, "evaluation": result.get("evaluation")}
        if t == "pid_apply_all":
            resp, result = self._pid("apply_all", cmd, joint="", heuristic="",
                                     gains=[a["gains"][k] for k in ("kp", "ki", "kd")])
            return {"message": resp.message, **result}
        if t in ("pid_replay", "pid_save_motion"):
            resp, result = self._pid(t[len("pid_"):], cmd, motion=a["motion"])
            return {"message": resp.message, "evaluation": result.get("evaluation")}
        if t in PID_TRIGGERS:
            resp, result = self._pid(PID_TRIGGERS[t], cmd)
            return {"message": result.get("message", resp.message)}
        raise Rejected("unavailable", f"{t} is not handled by the console node", cmd.id)
