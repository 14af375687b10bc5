"""The console's view of the robot: what the page shows, built from plain values (pure logic).

The node (``nodes/console_node.py``) converts ROS messages into plain Python values and calls
the ``on_*`` methods from its executor thread; the WebSocket server calls :meth:`snapshot` from
its asyncio thread. One lock guards both sides, so a snapshot is always self-consistent. Every
input is checked and bounded here (``console.forward``): a bad sample is dropped and counted in
``dropped`` (the ``on_*`` method returns its ``(cause, detail)`` so the node can count it per
topic), a large one is cut.

Contents of the snapshot (JSON-ready, seconds on the injected clock):

* ``health``: one row per ``/diagnostics`` status name: ``level`` (0 OK, 1 WARN, 2 ERROR,
  3 STALE), ``message``, ``values`` (key -> string) and ``age_s = now - received_at``; a row not
  refreshed for ``health_stale_s`` is reported with ``level = 3`` and ``stale = true``, one not
  refreshed for ``health_expire_s`` is removed. At most ``health_max_rows`` rows: a new name
  beyond that evicts the least recently refreshed row (counted ``health_evicted``), so a flood of
  fake names costs bounded memory and real publishers, which refresh, keep their rows.
* ``robot``: ``joints`` (name, position_rad, min_rad, max_rad, ``margin_rad`` = distance to the
  nearest limit, negative outside), ``ee_pose`` (position m, quaternion xyzw), ``teleop_mode``
  (TRACK/HOLD), ``interaction`` (the controller's JSON state), ``atomic`` (the base controller's
  JSON state), ``safe_stop`` (last value the console published on the safe-stop topic).
* ``pid``: the tuning node's status (joints, gains, acknowledged gains, rejected counts),
  ``autotune`` (joint -> last auto-tune table: relay result, heuristics' gains, applied row),
  ``error`` (joint -> last ``error_history_len`` samples ``[t_s, e_rad]`` of the signed error
  ``e = setpoint - measured``), ``busy`` (the command running, with ``since_s``), ``evaluation``
  (the last test, flip, replay or recording: the run's evaluation and per motion its evaluation
  and its joints', thesis names; None after a new recording or a reset).
"""
from __future__ import annotations

import json
import math
import threading
from collections import deque
from typing import Any, Callable, Mapping, Optional, Sequence


from .protocol import ForwardLimits, Rejected, bound_value
from hri_console.parameters_gen import ConsoleStateParams

STALE = 3

#: what an ``on_*`` input method returns for a dropped input: (cause, detail)
Dropped = Optional[tuple[str, str]]


#: ``console.state`` (declared in parameters.yaml)
StateParams = ConsoleStateParams


def state_view(d: dict, type_name: str) -> dict:
    """A typed state message (hri_interfaces AtomicState, InteractionState, PidTuningStatus), as a
    dict (``msgs.to_dict``) of type ``type_name``, in the plain form the page shows: stamp dropped,
    ``Count[]`` -> ``{name: count}``, ``admittance_lambda`` -> ``lambda``; PidTuningStatus's
    ``JointGains[]`` -> ``gains`` and ``acknowledged`` maps ``{joint: {kp, ki, kd}}`` (``None``: not
    acknowledged). ``d`` is changed in place and returned."""
    d.pop("stamp", None)
    for k in ("rejected", "events", "served"):
        if isinstance(d.get(k), list):
            d[k] = {c["name"]: c["count"] for c in d[k]}
    if "admittance_lambda" in d:
        d["lambda"] = d.pop("admittance_lambda")
    if type_name == "hri_interfaces/msg/PidTuningStatus":
        gains = {g["joint"]: {"kp": g["kp"], "ki": g["ki"], "kd": g["kd"]} for g in d["gains"]}
        d["acknowledged"] = {g["joint"]: (gains[g["joint"]] if g["acknowledged"] else None) for g in d["gains"]}
        d["gains"] = gains
    return d


def _finite_or_none(v: float):
    return v if math.isfinite(v) else None


class ConsoleState:
    """Thread-safe accumulator of everything the page shows (see module docstring)."""

    def __init__(self, params: StateParams, forward: ForwardLimits, clock: Callable[[], float],
                 joint_names: Sequence[str] = (), position_min_rad: Sequence[float] = (),
                 position_max_rad: Sequence[float] = ()):
        self.p = params
        self.forward = forward
        self.clock = clock
        self._lock = threading.Lock()
        self._limits = {n: (float(lo), float(hi)) for n, lo, hi in
                        zip(joint_names, position_min_rad, position_max_rad)}
        self._health: dict[str, dict] = {}
        self._joints: dict[str, float] = {}
        self._setpoints: dict[str, float] = {}
        self._errors: dict[str, deque] = {}
        self._ee: dict | None = None
        self._teleop_mode: str | None = None
        self._interaction: Any = None
        self._atomic: Any = None
        self._safe_stop: bool | None = None
        self._pid_status: dict = {}
        self._pid_progress: dict | None = None
        self._autotune: dict[str, dict] = {}
        self._evaluation: dict | None = None     # the last test/flip/replay/recording's evaluations
        self._busy: dict | None = None
        self._last_reply: dict | None = None
        self.dropped: dict[str, int] = {}

    @classmethod
    def of_joints(cls, params, names, position_min_deg, position_max_deg, clock: Callable[[], float]) -> "ConsoleState":
        """The state of the console ``params`` (``state``, ``forward``) for the robot's joints
        (``joints.names`` and their limits in degrees; any may be None: no joints / no limits)."""
        return cls(params.state, params.forward, clock=clock, joint_names=list(names or []),
                   position_min_rad=[math.radians(x) for x in (position_min_deg or [])],
                   position_max_rad=[math.radians(x) for x in (position_max_deg or [])])

    # ---------------------------------------------------------------- inputs
    def drop(self, cause: str, detail: str = "") -> tuple[str, str]:
        """Count a dropped input; returns ``(cause, detail)``."""
        with self._lock:
            self.dropped[cause] = self.dropped.get(cause, 0) + 1
        return cause, detail

    def bounded(self, value: Any) -> Any:
        """``value`` within ``console.forward`` (:func:`bound_value`); a cut is counted
        ``truncated``."""
        value, cuts = bound_value(value, self.forward)
        if cuts:
            self.drop("truncated")
        return value

    def _text(self, s: str) -> str:
        return str(s)[:self.forward.max_string_chars]

    def on_diagnostics(self, statuses: Sequence[Any]) -> Dropped:
        """``statuses``: objects with the fields of diagnostic_msgs/DiagnosticStatus (``name``,
        ``level``, ``message``, ``values`` of ``key``/``value``). At most ``health_max_rows``
        statuses are read (the rest dropped: ``too_many_statuses``), ``forward.max_items``
        values each, strings cut to ``forward.max_string_chars``."""
        rows, items = self.p.health_max_rows, self.forward.max_items
        now = self.clock()
        with self._lock:
            h = self._health
            for st in statuses[:rows]:
                name, level, message = self._text(st.name), int(st.level), self._text(st.message)
                values = {self._text(kv.key): self._text(kv.value) for kv in st.values[:items]}
                if name in h:
                    del h[name]                      # re-insert: dict order = refresh order
                elif len(h) >= self.p.health_max_rows:
                    del h[next(iter(h))]             # the least recently refreshed row
                    self.dropped["health_evicted"] = self.dropped.get("health_evicted", 0) + 1
                h[name] = {"level": level, "message": message, "values": values, "t_s": now}
        if len(statuses) > rows:
            return self.drop("too_many_statuses", f"{len(statuses)} > {rows}")
        return None

    def _positions(self, names: Sequence[str], positions: Sequence[float]) -> tuple[Dropped, list, list]:
        """(drop, names, positions) of a JointState; the drop (``length_mismatch``,
        ``non_finite``) or None."""
        names, pos = list(names), [float(x) for x in positions]
        if len(names) != len(pos):
            return self.drop("length_mismatch", f"{len(names)} names, {len(pos)} positions"), [], []
        if not all(math.isfinite(x) for x in pos):
            return self.drop("non_finite", "NaN/Inf position"), [], []
        return None, names, pos

    def _joint_slot(self, table: dict, name: str) -> bool:
        """Room for ``name`` in a per-joint table: known joints (config) always, others while the
        table holds fewer than ``health_max_rows`` names (a message with 100k fake joint names
        costs bounded memory; counted ``joints_ignored``)."""
        if name in table or name in self._limits or len(table) < self.p.health_max_rows:
            return True
        self.dropped["joints_ignored"] = self.dropped.get("joints_ignored", 0) + 1
        return False

    def on_joint_states(self, names: Sequence[str], positions: Sequence[float], t_s: float | None = None) -> Dropped:
        """Measured positions (rad); the error graph pairs them with the last set-points."""
        bad, names, positions = self._positions(names, positions)
        if bad:
            return bad
        t = self.clock() if t_s is None else t_s
        with self._lock:
            for n, q in zip(names, positions):
                if not self._joint_slot(self._joints, n):
                    continue
                self._joints[n] = float(q)
                sp = self._setpoints.get(n)
                if sp is not None and math.isfinite(q):
                    buf = self._errors.get(n)
                    if buf is None:
                        buf = self._errors[n] = deque(maxlen=self.p.error_history_len)
                    buf.append((t, sp - float(q)))
        return None

    def on_setpoints(self, names: Sequence[str], positions: Sequence[float]) -> Dropped:
        """Set-points (rad) of the error graph."""
        bad, names, positions = self._positions(names, positions)
        if bad:
            return bad
        with self._lock:
            for n, q in zip(names, positions):
                if self._joint_slot(self._setpoints, n):
                    self._setpoints[n] = q
        return None

    def on_ee_pose(self, position_m: Sequence[float], quat_xyzw: Sequence[float]) -> Dropped:
        vals = [float(x) for x in (*position_m, *quat_xyzw)]
        if not all(math.isfinite(x) for x in vals):
            return self.drop("non_finite", "NaN/Inf pose")
        with self._lock:
            self._ee = {"position_m": vals[:3], "quat_xyzw": vals[3:], "t_s": self.clock()}
        return None

    def on_teleop_mode(self, mode: str) -> None:
        with self._lock:
            self._teleop_mode = self._text(mode)

    def on_interaction_state(self, state: Any) -> None:
        """The interaction controller's state (a plain dict), bounded (:meth:`bounded`)."""
        state = self.bounded(state)
        with self._lock:
            self._interaction = state

    def on_atomic_state(self, state: Any) -> None:
        """The base controller's state (a plain dict), bounded (:meth:`bounded`)."""
        state = self.bounded(state)
        with self._lock:
            self._atomic = state

    def has_atomic(self) -> bool:
        """An atomic (Tino) controller has reported its state: the stack has one."""
        return self._atomic is not None

    def on_safe_stop(self, value: bool) -> None:
        with self._lock:
            self._safe_stop = bool(value)

    def on_pid_status(self, status: Mapping[str, Any]) -> None:
        """The tuning node's status (a plain dict), bounded (:meth:`bounded`)."""
        status = self.bounded(dict(status))
        with self._lock:
            self._pid_status = status

    def pid_joint(self, joint: int | str, msg_id: Any = None) -> str:
        """A joint of a PID command: a name as given, an index into the tuning node's joints
        (:class:`Rejected` ``out_of_range`` when there is no such joint in its last status)."""
        if isinstance(joint, str):
            return joint
        with self._lock:
            joints = list(self._pid_status.get("joints") or [])
        if not 0 <= joint < len(joints):
            raise Rejected("out_of_range", f"joint {joint} not in the tuning node's joints {joints}", msg_id)
        return joints[joint]

    def pid_gains(self, joint: str, gains: Mapping[str, float], msg_id: Any = None) -> list[float]:
        """``[kp, ki, kd]`` of ``joint``: the given ``gains``, the others from the tuning node's
        last status (:class:`Rejected` ``missing_field`` when one is still unknown)."""
        with self._lock:
            cur = dict((self._pid_status.get("gains") or {}).get(joint) or {})
        full = {**{k: cur.get(k) for k in ("kp", "ki", "kd")}, **gains}
        missing = [k for k, v in full.items() if v is None]
        if missing:
            raise Rejected("missing_field", f"{joint}: current {missing} unknown (no status yet); "
                           "give kp, ki and kd", msg_id)
        return [float(full[k]) for k in ("kp", "ki", "kd")]

    def on_pid_progress(self, phase: str, joint: str, fraction: float, detail: str = "") -> None:
        """The tuning node's progress (phase, joint, fraction 0..1 of that joint or request)."""
        f = float(fraction)
        with self._lock:
            self._pid_progress = {"phase": str(phase), "joint": str(joint),
                                  "fraction": min(max(f, 0.0), 1.0) if math.isfinite(f) else 0.0,
                                  "detail": str(detail), "t_s": self.clock()}

    def on_autotune(self, tuning: Mapping[str, Any]) -> None:
        """``tuning``: the auto_tune result's ``tuning`` map (joint -> table)."""
        with self._lock:
            for j, table in tuning.items():
                self._autotune[str(j)] = dict(table)

    def on_applied(self, joint: str, heuristic: str | None) -> None:
        with self._lock:
            if joint in self._autotune:
                self._autotune[joint]["applied"] = heuristic

    def set_busy(self, command: str | None, detail: str = "") -> None:
        with self._lock:
            self._busy = None if command is None else {"command": command, "detail": detail,
                                                       "since_s": self.clock()}

    def on_pid_reply(self, command: str, success: bool, message: str, result_json: str = "") -> dict:
        """A tuning-node service's reply to ``command``: returns its JSON result (``{}`` when there
        is none or it is not a JSON object); an auto-tune table in it is kept (also the one of a
        failed relay), and the evaluations of a test, flip, replay or recording (the page's
        evaluation table; a new recording or a reset discards them, as on the node); the reply
        becomes the page's last reply. ``record_stop`` answers a Trigger: its JSON is the
        message, replaced by a sentence in the result's ``message``."""
        if command == "pid_stop" and success and not result_json:
            result_json, message = message, ""
        try:
            result = json.loads(result_json) if result_json else {}
        except ValueError:
            result = {}
        if not isinstance(result, dict):
            result = {}
        if command == "pid_stop" and isinstance(result.get("evaluation"), dict):
            result = {"evaluation": result["evaluation"],
                      "motions": {str(result.get("animation", "recording")):
                                  {"evaluation": result["evaluation"], "joints": result.get("joints") or {}}}}
            message = f"recording evaluated: {result['evaluation'].get('Samples', 0)} samples"
            result["message"] = message
        if isinstance(result.get("tuning"), dict):
            self.on_autotune(result["tuning"])
        evaluation = self.bounded({"command": command, "evaluation": result["evaluation"],
                                   "motions": result["motions"]}) \
            if success and isinstance(result.get("motions"), dict) and isinstance(result.get("evaluation"), dict) else None
        with self._lock:
            if evaluation is not None or (success and command in ("pid_record", "pid_reset")):
                self._evaluation = evaluation
            self._last_reply = {"command": command, "success": bool(success), "message": str(message)}
        return result

    # ---------------------------------------------------------------- output
    def health_rows(self, now: float) -> dict[str, dict]:
        """The table; rows older than ``health_expire_s`` are removed here (call under the lock)."""
        out = {}
        h = self._health
        while h:                                     # oldest first: expired rows lead
            first = next(iter(h))
            if now - h[first]["t_s"] <= self.p.health_expire_s:
                break
            del h[first]
            self.dropped["health_expired"] = self.dropped.get("health_expired", 0) + 1
        for name, row in h.items():
            age = now - row["t_s"]
            stale = age > self.p.health_stale_s
            out[name] = {"level": STALE if stale else row["level"], "message": row["message"],
                         "values": dict(row["values"]), "age_s": age, "stale": stale}
        return out

    def snapshot(self) -> dict:
        now = self.clock()
        with self._lock:
            joints = []
            for n, q in self._joints.items():
                lo, hi = self._limits.get(n, (-math.inf, math.inf))
                joints.append({"name": n, "position_rad": q, "min_rad": _finite_or_none(lo),
                               "max_rad": _finite_or_none(hi),
                               "margin_rad": _finite_or_none(min(q - lo, hi - q))})
            return {
                "health": self.health_rows(now),
                "robot": {"joints": joints, "ee_pose": self._ee, "teleop_mode": self._teleop_mode,
                          "interaction": self._interaction, "atomic": self._atomic,
                          "safe_stop": self._safe_stop},
                "pid": {"status": dict(self._pid_status),
                        "autotune": {j: dict(t) for j, t in self._autotune.items()},
                        "evaluation": self._evaluation,
                        "error": {j: [list(s) for s in buf] for j, buf in self._errors.items()},
                        "busy": None if self._busy is None else dict(self._busy),
                        "progress": None if self._pid_progress is None else dict(self._pid_progress),
                        "last_reply": self._last_reply},
                "dropped": dict(self.dropped),
            }
