"""Console wire protocol: JSON over WebSocket, typed client->server commands.

Pure logic (no sockets, injected clock). Every client frame is a JSON object
``{"type": <command>, "id": <optional int/str>, ...fields}``. :func:`parse_command`
either returns a validated :class:`Command` or raises :class:`Rejected` with a
machine-readable ``cause`` and a human-readable ``reason`` shown by the page.
:class:`CommandGate` wraps parsing with per-cause rejection counters; a rejected
frame has no side effect (it never reaches the dispatcher).

Server->client frames: ``{"type": "state", "t_s": ..., "seq": n, ...snapshot}``,
``{"type": "ack", "id": ..., "ok": true}`` and
``{"type": "reject", "id": ..., "cause": ..., "reason": ...}``.
"""
from __future__ import annotations

import hmac
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from hri_runtime.security.bind import StartupRefused, check_bind as _check_bind, is_loopback  # noqa: F401 (re-exported)
from hri_console.parameters_gen import ConsoleForwardParams, ConsoleParams

#: gain names accepted by pid_apply
GAIN_NAMES = ("kp", "ki", "kd")
#: interaction impedance gains accepted by set_gains: name -> length (body twist order w, v)
IMPEDANCE_GAINS = {"stiffness": 6, "damping": 6}
JOINT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: command -> the tuning node's std_srvs/Trigger service it calls (``<console.pid_service>/<name>``)
PID_TRIGGERS = {"pid_record": "record_start", "pid_stop": "record_stop", "pid_reset": "reset", "pid_save": "save"}


class Rejected(ValueError):
    """A client frame refused, with ``cause`` (counter key) and ``reason`` (for the operator)."""

    def __init__(self, cause: str, reason: str, msg_id: Any = None):
        super().__init__(f"{cause}: {reason}")
        self.cause = cause
        self.reason = reason
        self.msg_id = msg_id
        self.command: str | None = None


#: the console (config section ``console``, declared in parameters.yaml)
#: ``console.forward``: bounds on every value forwarded from a topic to the page
ForwardLimits = ConsoleForwardParams


@dataclass(frozen=True)
class CommandRules:
    """What a client frame is checked against: the console's parameters and the robot's facts,
    ``num_joints`` (``joints.names``) and ``gain_limits`` (the interaction controller's
    :class:`hri_interaction.core.spd.ImpedanceGainLimits` of the robot; None = SPD only), which
    ``set_gains`` is checked against by the controller's own function."""

    params: ConsoleParams
    num_joints: int = 1
    gain_limits: Any = None


#: what replaces a value cut by :func:`bound_value` (depth, item count or node budget)
TRUNCATED = "…"


def bound_value(value: Any, lim: ForwardLimits) -> tuple[Any, int]:
    """A JSON-ready copy of ``value`` within ``lim`` and the number of cuts made.

    Nesting deeper than ``max_depth`` becomes :data:`TRUNCATED`; lists/objects keep their first
    ``max_items`` entries (a trailing :data:`TRUNCATED` entry / key marks the cut); strings keep
    ``max_string_chars`` characters; after ``max_nodes`` values in total every further value is
    :data:`TRUNCATED`. NaN/Inf become ``null`` (browsers cannot parse them); keys become
    strings; numpy values their ``tolist()``; other types (bytes, objects) their bounded ``str``. Recursion depth is bounded by
    ``max_depth`` (<= 64), so no input can raise RecursionError."""
    budget = [lim.max_nodes]
    cuts = [0]

    def rec(v, depth):
        if budget[0] <= 0:
            cuts[0] += 1
            return TRUNCATED
        budget[0] -= 1
        if v is None or isinstance(v, (bool, int)):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, str):
            if len(v) > lim.max_string_chars:
                cuts[0] += 1
                return v[:lim.max_string_chars] + TRUNCATED
            return v
        if isinstance(v, (dict, list, tuple)):
            if depth >= lim.max_depth:
                cuts[0] += 1
                return TRUNCATED
            if isinstance(v, dict):
                out = {}
                for i, (k, x) in enumerate(v.items()):
                    if i >= lim.max_items:
                        cuts[0] += 1
                        out[TRUNCATED] = len(v) - i
                        break
                    k = k if isinstance(k, str) else str(k)
                    out[k[:lim.max_string_chars]] = rec(x, depth + 1)
                return out
            out = []
            for i, x in enumerate(v):
                if i >= lim.max_items:
                    cuts[0] += 1
                    out.append(TRUNCATED)
                    break
                out.append(rec(x, depth + 1))
            return out
        if hasattr(v, "tolist") and hasattr(v, "dtype"):       # numpy scalar / array
            budget[0] += 1
            return rec(v.tolist(), depth)
        return rec(str(v)[:lim.max_string_chars], depth)

    return rec(value, 0), cuts[0]


# ---------------------------------------------------------------- Host / Origin allow-lists
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _split_host(authority: str) -> tuple[str, str | None]:
    """``host[:port]`` / ``[v6]:port`` -> (lower-case host without brackets, port or None)."""
    a = authority.strip().lower()
    if a.startswith("["):
        end = a.find("]")
        if end < 0:
            return a, None
        host, rest = a[1:end], a[end + 1:]
        return host, (rest[1:] if rest.startswith(":") else None)
    if a.count(":") == 1:
        host, port = a.split(":")
        return host, port
    return a, None


def allowed_hostnames(params: ConsoleParams) -> frozenset:
    """Loopback names, the bind address (unless a wildcard) and ``allowed_hosts``."""
    names = set(LOOPBACK_NAMES) | {str(h).lower() for h in params.allowed_hosts}
    bind = params.bind_host.strip("[]").lower()
    if bind not in ("", "0.0.0.0", "::"):
        names.add(bind)
    return frozenset(names)


def host_ok(params: ConsoleParams, host_header: str | None) -> bool:
    """The HTTP ``Host`` header names an allowed host (any port): a page reached through
    another name (DNS rebinding: ``evil.example`` resolving to 127.0.0.1) is refused. A request
    without a Host header is refused (HTTP/1.1 requires it)."""
    if not host_header:
        return False
    return _split_host(host_header)[0] in allowed_hostnames(params)


def origin_ok(params: ConsoleParams, origin: str | None, port: int | None) -> bool:
    """A browser request's ``Origin``: absent (not a browser: curl, scripts, the CLI) is
    accepted; else it must be the console's own origin -- ``http(s)://<allowed host>:<port>``
    -- or listed in ``allowed_origins``. ``null`` (sandboxed pages, files) is refused."""
    if origin is None:
        return True
    o = origin.strip().lower().rstrip("/")
    if o in {str(a).lower().rstrip("/") for a in params.allowed_origins}:
        return True
    scheme, sep, authority = o.partition("://")
    if not sep or scheme not in ("http", "https"):
        return False
    host, oport = _split_host(authority)
    if oport is None:
        oport = "443" if scheme == "https" else "80"
    return host in allowed_hostnames(params) and port is not None and oport == str(port)


def check_bind(params: ConsoleParams) -> None:
    """Refuse a non-loopback bind without a non-empty token (raises :class:`StartupRefused`)."""
    _check_bind("console bind_host", params.bind_host, bool(params.token), "console.token must be set")


def token_ok(params: ConsoleParams, presented: str | None) -> bool:
    """Check a presented token (constant time). With no token configured, only loopback
    binds exist (see :func:`check_bind`), and every client is accepted."""
    if not params.token:
        return True
    if presented is None:
        return False
    return hmac.compare_digest(str(presented).encode(), str(params.token).encode())


@dataclass(frozen=True)
class Command:
    type: str
    id: Any
    args: dict = field(default_factory=dict)


def _finite(value: Any, name: str, lo: float, hi: float, msg_id: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        got = "null (empty or not a number)" if value is None else type(value).__name__
        raise Rejected("bad_field", f"{name} must be a number, got {got}", msg_id)
    v = float(value)
    if not math.isfinite(v):
        raise Rejected("bad_value", f"{name} must be finite, got {value!r}", msg_id)
    if not lo <= v <= hi:
        raise Rejected("out_of_range", f"{name}={v:g} outside [{lo:g}, {hi:g}]", msg_id)
    return v


def _joint(frame: dict, rules: CommandRules, msg_id: Any, required: bool = True) -> int | str | None:
    """A joint: an integer index in [0, num_joints) or a joint name (``[A-Za-z_][A-Za-z0-9_]*``,
    at most 64 characters; whether the name exists is the service's decision)."""
    if "joint" not in frame:
        if required:
            raise Rejected("missing_field", "joint is required", msg_id)
        return None
    j = frame["joint"]
    if isinstance(j, str):
        if not JOINT_NAME.fullmatch(j):
            raise Rejected("bad_field", f"joint name {j[:80]!r} is not [A-Za-z_][A-Za-z0-9_]* (<= 64 chars)", msg_id)
        return j
    if isinstance(j, bool) or not isinstance(j, int):
        raise Rejected("bad_field", "joint must be an integer index or a joint name", msg_id)
    if not 0 <= j < rules.num_joints:
        raise Rejected("out_of_range", f"joint {j} outside [0, {rules.num_joints - 1}]", msg_id)
    return j


def _gains(frame: dict, rules: CommandRules, msg_id: Any) -> dict:
    gains = frame.get("gains")
    if not isinstance(gains, dict) or not gains:
        raise Rejected("missing_field", "gains must be a non-empty object", msg_id)
    out = {}
    for name, value in gains.items():
        if name not in GAIN_NAMES:
            raise Rejected("bad_field", f"unknown gain {name!r} (allowed: {', '.join(GAIN_NAMES)})", msg_id)
        out[name] = _finite(value, name, 0.0, rules.params.gain_max, msg_id)
    return out


def _no_args(frame, rules, msg_id):
    return {}


def _set_mode(frame, rules, msg_id):
    mode = frame.get("mode")
    modes = rules.params.modes
    if not isinstance(mode, str):
        raise Rejected("missing_field", "mode must be a string", msg_id)
    if mode not in modes:
        raise Rejected("bad_value", f"unknown mode {mode!r} (allowed: {', '.join(modes)})", msg_id)
    return {"mode": mode}


def _set_gains(frame, rules, msg_id):
    """Interaction impedance gains: ``gains = {stiffness: [6], damping: [6]}`` (diagonals,
    N·m/rad x3 then N/m x3, and N·m·s/rad x3 then N·s/m x3), each a finite number; then exactly
    the interaction controller's own check
    (:func:`hri_interaction.core.spd.validate_impedance_gains`: SPD, within the robot's
    ``interaction.gain_limits``), so the page shows the controller's reason and never
    acknowledges gains the controller would refuse."""
    from hri_interaction.core.spd import GainError, validate_impedance_gains

    gains = frame.get("gains")
    if not isinstance(gains, dict) or set(gains) != set(IMPEDANCE_GAINS):
        raise Rejected("missing_field", "gains must be {stiffness: [6 numbers], damping: [6 numbers]}", msg_id)
    out = {}
    for name, n in IMPEDANCE_GAINS.items():
        v = gains[name]
        if not isinstance(v, list) or len(v) != n:
            raise Rejected("bad_field", f"{name} must be a list of {n} numbers", msg_id)
        out[name] = [_finite(x, f"{name}[{i}]", -math.inf, math.inf, msg_id) for i, x in enumerate(v)]
    try:
        validate_impedance_gains(out["stiffness"], out["damping"], rules.gain_limits)
    except GainError as exc:
        raise Rejected(exc.cause, str(exc), msg_id) from None
    return {"gains": out}


def _pid_joint(frame, rules, msg_id):
    return {"joint": _joint(frame, rules, msg_id)}


def _pid_apply(frame, rules, msg_id):
    out = {"joint": _joint(frame, rules, msg_id)}
    if "heuristic" in frame:  # apply one row of the auto-tune table
        h = frame["heuristic"]
        if not isinstance(h, str) or not h:
            raise Rejected("bad_field", "heuristic must be a non-empty string", msg_id)
        out["heuristic"] = h
    else:
        out["gains"] = _gains(frame, rules, msg_id)
    return out


def _pid_save(frame, rules, msg_id):
    out = {"joint": _joint(frame, rules, msg_id, required=False)}
    return out


#: command name -> validator(frame, rules, msg_id) -> args
VALIDATORS: dict[str, Callable] = {
    "safe_stop": _no_args,
    "release_stop": _no_args,
    "set_mode": _set_mode,
    "set_gains": _set_gains,
    "pid_start": _pid_joint,
    "pid_record": _pid_joint,
    "pid_stop": _no_args,
    "pid_reset": _no_args,
    "pid_save": _pid_save,
    "pid_apply": _pid_apply,
    "pid_autotune": _pid_joint,
    "ping": _no_args,
}


def parse_command(raw: str | bytes, rules: CommandRules) -> Command:
    """Decode and validate one client frame. Raises :class:`Rejected`."""
    limit = rules.params.max_frame_bytes
    if len(raw) > limit:
        raise Rejected("too_large", f"frame of {len(raw)} bytes > {limit}")
    try:
        frame = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Rejected("bad_json", f"not JSON: {exc}") from None
    except RecursionError:
        raise Rejected("bad_json", "nested too deeply") from None
    if not isinstance(frame, dict):
        raise Rejected("not_object", "frame must be a JSON object")
    msg_id = frame.get("id")
    if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, (int, str))):
        raise Rejected("bad_field", "id must be an integer or string")
    kind = frame.get("type")
    if not isinstance(kind, str):
        raise Rejected("missing_type", "frame has no string 'type'", msg_id)
    validator = VALIDATORS.get(kind)
    if validator is None:
        raise Rejected("unknown_type", f"unknown command {kind!r}", msg_id)
    try:
        return Command(kind, msg_id, validator(frame, rules, msg_id))
    except Rejected as rej:
        rej.command = kind
        raise


class CommandGate:
    """Parse frames, count rejections per cause, and dispatch accepted commands.

    ``dispatch(cmd)`` is called only for valid commands; it may raise :class:`Rejected`
    itself (e.g. the service refused) which is reported the same way. ``safe_stop`` is
    dispatched through ``on_safe_stop`` (if given) first, so it never waits behind
    other handlers.
    """

    def __init__(self, rules: CommandRules, dispatch: Callable[[Command], Any],
                 on_safe_stop: Callable[[], Any] | None = None,
                 log: Callable[[str], Any] | None = None):
        self.rules = rules
        self.dispatch = dispatch
        self.on_safe_stop = on_safe_stop
        self.log = log or (lambda s: None)
        self.rejected = Counter()
        self.accepted = Counter()

    def handle(self, raw: str | bytes) -> dict:
        """Return the reply frame (ack or reject) for one client frame."""
        cmd = self.parse(raw)
        return cmd if isinstance(cmd, dict) else self.execute(cmd)

    def parse(self, raw: str | bytes) -> "Command | dict":
        """Validated command, or the reject reply (counted) for a malformed frame."""
        try:
            return parse_command(raw, self.rules)
        except Rejected as rej:
            self.rejected[rej.cause] += 1
            self.log(f"console: rejected frame ({rej.cause}): {rej.reason}")
            reply = {"type": "reject", "id": rej.msg_id, "cause": rej.cause, "reason": rej.reason}
            if rej.command:
                reply["command"] = rej.command
            return reply

    def execute(self, cmd: Command) -> dict:
        """Run a validated command (safe_stop through ``on_safe_stop``); ack or reject reply."""
        try:
            if cmd.type == "safe_stop" and self.on_safe_stop is not None:
                result = self.on_safe_stop()
            else:
                result = self.dispatch(cmd)
        except Rejected as rej:
            self.rejected[rej.cause] += 1
            self.log(f"console: {cmd.type} refused ({rej.cause}): {rej.reason}")
            return {"type": "reject", "id": cmd.id, "command": cmd.type,
                    "cause": rej.cause, "reason": rej.reason}
        self.accepted[cmd.type] += 1
        reply = {"type": "ack", "id": cmd.id, "command": cmd.type, "ok": True}
        if result is not None:
            reply["result"] = result
        return reply


def state_frame(seq: int, t_s: float, snapshot: Mapping[str, Any], limits: ForwardLimits) -> tuple[str, int]:
    """Encode a server->client state snapshot within ``limits`` (:func:`bound_value`: NaN/Inf
    become null, depth/items/strings/total bounded); returns the text and the number of cuts."""
    body, cuts = bound_value(dict(snapshot), limits)
    body.update({"type": "state", "seq": seq, "t_s": t_s})
    return json.dumps(body), cuts          # ASCII: a lone surrogate from a topic cannot break the UTF-8 send
