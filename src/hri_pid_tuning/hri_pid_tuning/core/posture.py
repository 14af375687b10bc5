"""Safe relay test: a tuning posture clear of limits and self-collision, a bias from
holding it, and a relay sized from a first identification so the excursion stays bounded.

Sequence for joint i (``safe_relay_tune``), every step on the ``JointPlant`` it is given (a joint of
an in-process simulation or of a robot running as another node):

1. **Posture** (:func:`tuning_posture`): the base pose with joint i moved to the middle of its
   usable range ``[q_min + e + c, q_max − e − c]`` (e = ``excursion_max_deg``, c =
   ``limit_clearance_deg``), or – if that collides – the first of ``posture_candidates`` angles on
   the way back to the base angle whose path from the base pose and whose excursion band
   ``[q − e, q + e]`` are free of self-collision (``collides(q)``, sampled ``collision_samples``
   times each).
2. **Hold**: the joint's current gains hold the posture for at least ``hold_s`` and until the
   angle of the last ``hold_s``/2 varies less than ``hold_still_deg`` (at most ``hold_max_s``);
   that window's mean effort is the static load b₀ (gravity), the relay's initial bias, and its
   mean angle the relay's target (a weak hold under a heavy load rests below the posture).
3. **Identification**: a relay of d₀ = ``id_amplitude_fraction`` · effort max (at most the
   setup's relay amplitude, ``relay_amplitude_nm``) around the target
   (bias b₀, adapted per period) for ``id_duration_s``; d₀ doubles (up to ``id_doublings``
   times, by ``id_step_factor``) while there are fewer than ``id_min_peaks`` peaks (friction
   holds the joint) or the amplitude is below half the target f · e (f =
   ``target_excursion_fraction``). Result: the last stage's d₀, amplitude a₀ and period T₀.
4. **Sizing**: the relay amplitude grows with d (linearly for a linear joint, a = 4d/(π Ku); much
   faster where the actuator's torque rate is limited: the switch itself takes longer), so the
   relay keeps the last stage's d₀ – scaled down linearly, d = d₀ · (f · e)/a₀, if that stage
   overshot the target – clamped to effort max − |b₀|; warm-up =
   ``warmup_periods`` · T₀ and window = ``window_periods`` · T₀ within [``window_min_s``,
   ``window_max_s``].
5. **Relay** (:func:`~.relay.relay_tune`) continuing from the identification (no reset); it aborts
   the moment the joint leaves target ± e (``excursion``), nears a limit, or diverges. After an
   excursion the joint returns to the posture and the relay runs again with half the force, up
   to ``relay_retries`` times.

Any failure returns one reason (``no_posture``, ``hold_failed``, ``no_oscillation``, ``effort``, or
the relay's ``excursion`` / ``joint_limit`` / ``divergence`` / ``non_finite`` / ``too_few_peaks``);
the caller restores gains and posture and runs no test motion.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from hri_core.pid import PID, PIDGains, PIDParams

from .plant import JointPlant
from .relay import RelayParams, RelayResult, relay_tune
from hri_pid_tuning.parameters_gen import PidTuningSafeTuningParams


#: the safe relay test (``pid_tuning.safe_tuning``, declared in parameters.yaml)
SafeTuningParams = PidTuningSafeTuningParams


def tuning_posture(base_rad: Sequence[float], index: int, q_min_rad: float, q_max_rad: float,
                   p: SafeTuningParams, collides: Callable[[np.ndarray], bool] | None = None
                   ) -> tuple[np.ndarray | None, str]:
    """``(posture, '')`` or ``(None, why)`` – see the module docstring, step 1. Angles in rad."""
    base = np.asarray(base_rad, dtype=float)
    e = math.radians(p.excursion_max_deg)
    lo = q_min_rad + e + math.radians(p.limit_clearance_deg)
    hi = q_max_rad - e - math.radians(p.limit_clearance_deg)
    if lo > hi:
        return None, (f"range {math.degrees(q_max_rad - q_min_rad):.1f}° is too small for an excursion of "
                      f"±{p.excursion_max_deg:g}° with {p.limit_clearance_deg:g}° clearance")
    mid = 0.5 * (lo + hi)
    home = min(max(float(base[index]), lo), hi)
    n = max(1, p.posture_candidates)
    candidates = [mid + (home - mid) * k / max(1, n - 1) for k in range(n)] if n > 1 else [mid]
    m = max(2, p.collision_samples)
    for c in candidates:
        if collides is None:
            q = base.copy(); q[index] = c
            return q, ""
        angles = list(np.linspace(float(base[index]), c, m)) + list(np.linspace(c - e, c + e, m))
        free = True
        for a in angles:
            q = base.copy(); q[index] = a
            if collides(q):
                free = False
                break
        if free:
            q = base.copy(); q[index] = c
            return q, ""
    return None, f"every candidate posture between {math.degrees(mid):.1f}° and {math.degrees(home):.1f}° self-collides"


@dataclass
class SafeRelayResult:
    """What the safe relay test did (JSON in the run folder and the service's result)."""

    relay: RelayResult
    posture_deg: float | None = None
    bias0: float | None = None
    id_amplitude: float | None = None          # d0 that oscillated
    id_excursion_deg: float | None = None      # a0
    id_period_s: float | None = None           # T0
    sized: dict[str, float] = field(default_factory=dict)   # amplitude, warmup_s, duration_s
    detail: str = ""                           # the one clear reason of a failure

    def to_json(self) -> dict[str, Any]:
        return {**self.relay.to_json(), "posture_deg": self.posture_deg, "bias0": self.bias0,
                "identification": {"amplitude": self.id_amplitude, "excursion_deg": self.id_excursion_deg,
                                   "period_s": self.id_period_s},
                "sized": dict(self.sized), "detail": self.detail}


def _fail(reason: str, detail: str, relay: RelayResult | None = None, **kw) -> SafeRelayResult:
    r = relay if relay is not None else RelayResult(ok=False, reason=reason)
    r.ok = False
    r.reason = reason
    return SafeRelayResult(r, detail=detail, **kw)


def _hold(jp: JointPlant, gains: PIDGains, r: float, p: SafeTuningParams, pid_params: PIDParams,
          divergence_rad: float) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Hold ``r`` with ``gains`` (effort commands) from where the joint is, for at least
    ``hold_s`` and until the angle of the last ``hold_s``/2 varies less than ``hold_still_deg``
    (at most ``hold_max_s``). Returns that last half-window's angles and efforts, or
    ``(None, None)`` when the hold diverged or never came to rest."""
    pid = PID(gains, replace(pid_params, output_min=-jp.effort_max, output_max=jp.effort_max))
    # bumpless hand-over from the robot's own hold: its effort (a live joint reports it) seeds
    # the integral term, so the load is held from the first sample instead of sagging
    u0 = getattr(jp, "effort", None)
    if u0 is not None and math.isfinite(u0):
        pid.reset(integral=float(u0) - gains.kp * (r - jp.q_rad))
    t0 = jp.t_s
    n_half = max(2, int(round(0.5 * p.hold_s / jp.dt_s)))
    ys: list[float] = []
    us: list[float] = []
    still = math.radians(p.hold_still_deg)
    while jp.t_s - t0 <= p.hold_max_s:
        y = jp.q_rad
        if not math.isfinite(y) or abs(r - y) > divergence_rad:
            return None, None
        u = pid.update(r, y, jp.t_s - t0)
        ys.append(y); us.append(u)
        jp.step(u)
        if jp.t_s - t0 >= p.hold_s and len(ys) >= n_half:
            w = np.array(ys[-n_half:])
            if float(w.max() - w.min()) <= still:
                return w, np.array(us[-n_half:])
    return None, None


def safe_relay_tune(jp: JointPlant, posture_rad: float, hold_gains: PIDGains, relay: RelayParams,
                    p: SafeTuningParams, pid_params: PIDParams,
                    progress: Callable[[str, float], None] | None = None,
                    d0_max: float | None = None) -> SafeRelayResult:
    """Steps 2–5 of the module docstring on ``jp`` (already at, or reset to, ``posture_rad``).
    ``progress(phase, fraction)`` with phase ``hold`` / ``identify`` / ``relay``."""
    say = progress or (lambda phase, f: None)
    e = math.radians(p.excursion_max_deg)
    deg = math.degrees(posture_rad)
    # 2. hold with the joint's current gains: the static load
    say("hold", 0.0)
    ys, us = _hold(jp, hold_gains, posture_rad, p, pid_params, math.radians(relay.divergence_deg))
    say("hold", 1.0)
    if ys is None:
        return _fail("hold_failed", f"the joint's gains did not hold it near {deg:.1f}°", posture_deg=deg)
    bias0 = float(np.mean(us))
    # the relay centres where the hold rests (a weak hold under a heavy load sags), if still
    # clear of the limits by the excursion band
    rest = float(np.mean(ys))
    lo = jp.q_min_rad + e + math.radians(p.limit_clearance_deg)
    hi = jp.q_max_rad - e - math.radians(p.limit_clearance_deg)
    if not lo <= rest <= hi:
        return _fail("hold_failed", f"the joint's gains hold it at {math.degrees(rest):.1f}°, too close to a limit",
                     posture_deg=deg, bias0=bias0)
    posture_rad, deg = rest, math.degrees(rest)
    if abs(bias0) >= jp.effort_max:
        return _fail("effort", f"holding {deg:.1f}° takes {abs(bias0):.3g} N·m, the effort limit is {jp.effort_max:.3g}",
                     posture_deg=deg, bias0=bias0)
    # 3. identification relay, d0 doubling until the joint oscillates
    rel = replace(relay, start_angle_deg=deg, target_angle_deg=deg, warmup_s=0.0, duration_s=p.id_duration_s,
                  max_attempts=1, min_peaks=p.id_min_peaks)
    d0 = p.id_amplitude_fraction * jp.effort_max
    if d0_max is not None:
        d0 = min(d0, d0_max)
    target = p.target_excursion_fraction * e
    ident = None
    bias = bias0
    for k in range(p.id_doublings + 1):
        say("identify", k / (p.id_doublings + 1))
        res = relay_tune(jp, replace(rel, amplitude=d0), bias0=bias, excursion_rad=e, reset=False,
                         check_every_s=p.check_every_s)
        if res.ok:
            ident, bias = res, res.bias
            # a ladder: the amplitude grows faster than d where the torque rate is limited, so
            # the relay is sized from a stage that reached at least half the target (≤ 2× scaling)
            if res.amplitude_rad >= 0.5 * target:
                break
        elif res.reason != "too_few_peaks":
            return _fail(res.reason, f"identification relay (d={d0:.3g}) aborted: {res.reason}", res,
                         posture_deg=deg, bias0=bias0, id_amplitude=d0)
        if p.id_step_factor * d0 + abs(bias) > jp.effort_max:
            break
        d0 *= p.id_step_factor
    if ident is not None and ident.relay_amplitude != d0:
        d0 = ident.relay_amplitude
    if ident is None:
        return _fail("no_oscillation", f"no relay oscillation up to d={d0:.3g} (friction or a stuck joint)",
                     posture_deg=deg, bias0=bias0, id_amplitude=d0)
    say("identify", 1.0)
    a0, t0 = float(ident.amplitude_rad), float(ident.tu_s)
    # 4. sizing
    d = d0 * min(1.0, target / max(a0, 1e-9))
    d = min(d, jp.effort_max - abs(bias))
    if d <= 0:
        return _fail("effort", f"no effort left for a relay above the load {abs(bias):.3g}", posture_deg=deg,
                     bias0=bias0)
    warm = p.warmup_periods * t0
    window = min(max(p.window_periods * t0, p.window_min_s), p.window_max_s)
    sized = replace(relay, amplitude=d, start_angle_deg=deg, target_angle_deg=deg, warmup_s=warm, duration_s=window)
    # 5. the relay test proper, continuing from the identification
    res = relay_tune(jp, sized, lambda f: say("relay", f), bias0=bias, excursion_rad=e, reset=False,
                     check_every_s=p.check_every_s)
    for _ in range(p.relay_retries):
        # the longer run drifted out of the band (e.g. gravity that destabilises the posture):
        # back to the posture, half the relay force
        if res.reason != "excursion":
            break
        d *= 0.5
        jp.reset(posture_rad)
        sized = replace(sized, amplitude=d)
        res = relay_tune(jp, sized, lambda f: say("relay", f), bias0=bias, excursion_rad=e, reset=False,
                         check_every_s=p.check_every_s)
    out = SafeRelayResult(res, deg, bias0, d0, math.degrees(a0), t0,
                          {"amplitude": d, "warmup_s": warm, "duration_s": window})
    if not res.ok:
        out.detail = f"relay (d={d:.3g}, window {window:.2f} s) aborted: {res.reason}"
    return out
