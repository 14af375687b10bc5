"""The 1 kHz interaction controller: modes, validated inputs, safety gate, hold-last semantics.

One ``tick(state, dt)`` = read state → (wrench filter → admittance) → reference → impedance τ →
safety gate (finite, torque limits) → command. Inputs arrive as *latest values* (Chang 2026 §12: a
single-slot buffer, "reuse last" on an upper-layer stall):

- ``set_reference(world_T_d)``: non-finite, non-rigid or jumping (> ``max_pose_step_m``) → rejected,
  counted, the last reference is held;
- ``set_wrench(F_body)``: non-finite or beyond ``max_force_n`` / ``max_torque_nm`` → rejected,
  counted, the admittance holds (λ kept, λ̇ = 0) until a valid wrench arrives;
- ``set_impedance_gains(K, D)``: non-SPD (``gains_invalid``) or a diagonal entry outside
  ``interaction.gain_limits`` (``gains_out_of_range``) → rejected and counted, from any source
  (:func:`hri_interaction.core.spd.validate_impedance_gains`, the console uses the same); valid gains are blended convexly from the
  current ones over ``blend_s`` (SPD throughout, no torque jump);
- ``request_mode(mode, state)``: validated; the new controller is seeded from the old state and
  the admittance twist is bounded by the tightened ``switch.settle_*`` bounds for ``settle_s``.

Modes (Chang 2026 §12 "Modes"): every mode tracks T_ref = T_d exp(λ) with one shared admittance state
(λ, λ̇); they differ in the wrench that drives it: ADMITTANCE the full (filtered) wrench, HYBRID
S ⊙ wrench with S = diag(compliant_axes) (the other axes stay stiff at T_d), IMPEDANCE none, so an
admittance displacement left from a previous mode decays under its own M, D, K. A switch
therefore never moves the reference (seeded, torque-continuous); only the settle bound applies.
``freeze(reason)`` (a safety flag) holds reference and admittance until ``release()``.
A non-finite state or a singular Jacobian never yields a NaN torque: the last finite command is
held (state) or the admittance is held and ``singular`` flagged with σ_min (no division by J_b).
"""
from __future__ import annotations

import dataclasses
import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

import numpy as np

from hri_interaction.core.admittance import AdmittanceParams, CartesianAdmittance, LieAdmittance
from hri_interaction.core.impedance import (ImpedanceParams, cartesian_impedance_torque,
                                            lie_impedance_torque, sigma_min)
from hri_interaction.core.passivity import (PassivityParams, energy_deficit_dof_j, energy_deficit_j,
                                            make_filter)
from hri_interaction.core.spd import (GainError, ImpedanceGainLimits, blend, gains_from_vector,
                                      validate_impedance_gains)
from hri_interaction import parameters_gen

MODES = ("impedance", "admittance", "hybrid")
STOP_PREFIX = "system stop"      # frozen_reason of a freeze by the stop input (hold)
LAWS = ("lie", "cartesian", "gic", "lie_osd")   # interaction.law; gic, lie_osd: the C++ tick only


class InteractionParams(parameters_gen.InteractionParams):
    """``interaction`` as declared (hri_interaction/parameters.yaml), with the gain sections as
    their typed params: ``impedance`` (:class:`ImpedanceParams`), ``admittance``
    (:class:`AdmittanceParams`), ``passivity`` (:class:`PassivityParams`), ``gain_limits``
    (:class:`ImpedanceGainLimits`)."""

    @cached_property
    def compliant_axes(self) -> np.ndarray:
        """Hybrid S = diag(``hybrid.compliant_axes``) as 6 floats in {0, 1}."""
        return np.asarray(self.hybrid.compliant_axes, dtype=float)

    @classmethod
    def from_config(cls, section: dict) -> "InteractionParams":
        """From the ``interaction`` section: the declaration's checks (ConfigError naming the key), the
        gain matrices SPD and the configured impedance inside ``gain_limits`` (GainError)."""
        p = super().from_config(section)
        p = dataclasses.replace(p, **{k: t.from_config(section[k]) for k, t in _TYPED_SECTIONS.items()})
        try:
            validate_impedance_gains(p.impedance.stiffness, p.impedance.damping, p.gain_limits)
        except GainError as exc:
            raise GainError(f"interaction.impedance: {exc}", exc.cause) from None
        return p


_TYPED_SECTIONS = {"impedance": ImpedanceParams, "admittance": AdmittanceParams,
                   "passivity": PassivityParams, "gain_limits": ImpedanceGainLimits}


def tick_params(params: InteractionParams, n_joints: int, law: Optional[str] = None, torque_max_nm=None):
    """The C++ ``TickParams`` (named fields) of ``params`` for ``n_joints`` joints and ``law``
    ("lie" | "cartesian"), clamping the command to ``torque_max_nm`` (per joint, N·m; None: no
    clamp): what ``InteractionTick`` and ``hri_core.rt.RtLoop`` are built from."""
    from hri_interaction.core.impedance import cxx_kernels

    cx = cxx_kernels()
    if cx is None:
        raise ImportError("hri_core (cpp/) is not built: the interaction engine is its C++ tick")
    law = law or params.law
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}")
    a, ps, sw, lim = params.admittance, params.passivity, params.switch, params.limits
    t = cx.TickParams()
    t.n = int(n_joints)
    t.law = law
    t.filter = ps.filter
    t.gravity_compensation = params.gravity_compensation
    t.coriolis_compensation = params.impedance.coriolis_compensation
    t.reference_feedforward = params.reference_feedforward
    t.K, t.D = params.impedance.stiffness, params.impedance.damping
    t.M_adm, t.D_adm, t.K_adm = a.mass, a.damping, a.stiffness
    t.M_osd = np.diag(np.asarray(params.lie_osd.inertia_diag, float))
    t.compliant_axes = params.compliant_axes
    t.wave_damping = np.asarray(ps.wave_damping, float)
    t.jitter_alpha_base = np.asarray(ps.jitter.alpha_base, float)
    t.jitter_alpha_scale = np.asarray(ps.jitter.alpha_scale, float)
    t.energy_floor_j = ps.energy_floor_j
    t.max_damping = ps.po_pc.max_damping
    t.settle_max_linear_m_s, t.settle_max_angular_rad_s = sw.settle_max_linear_m_s, sw.settle_max_angular_rad_s
    for name in ("max_linear_m_s", "max_angular_rad_s", "reference_max_linear_m_s", "reference_max_angular_rad_s",
                 "singular_sigma_min", "reference_interpolation_max_s"):   # same names as interaction.limits
        setattr(t, name, getattr(lim, name))
    t.torque_max_nm = None if torque_max_nm is None else np.asarray(torque_max_nm, float)
    return t


def loop_config(params: InteractionParams, trace_capacity: int = 0):
    """The ``hri_core.rt.LoopConfig`` of ``params`` (``rate_hz``, ``rt.*``,
    ``limits.max_force_n`` / ``max_torque_nm``); ``trace_capacity``: ticks of wake/cost times the
    loop records (bench only)."""
    from hri_core import rt

    r = params.rt
    c = rt.LoopConfig()
    c.rate_hz = params.rate_hz
    c.sched_fifo, c.priority, c.lock_memory = r.sched_fifo, r.priority, r.lock_memory
    c.cpu, c.wrench_from_robot = r.cpu, r.wrench_from_robot
    c.max_force_n, c.max_torque_nm = params.limits.max_force_n, params.limits.max_torque_nm
    c.trace_capacity = int(trace_capacity)
    return c


@dataclass
class ArmState:
    """What one tick reads: joint state, EE pose/twist/Jacobian (body frame) and model terms."""
    q: np.ndarray
    dq: np.ndarray
    world_T_ee: np.ndarray
    body_twist: np.ndarray       # (ω, v) in the EE frame
    body_jacobian: np.ndarray    # (6, n)
    gravity: np.ndarray          # (n,) g(q), the torque that holds the arm against gravity
    coriolis: np.ndarray         # (n,) c(q, dq)
    mass_matrix: Optional[np.ndarray] = None   # (n, n) M(q): law lie_osd


@dataclass
class TickResult:
    tau: np.ndarray
    world_T_ref: np.ndarray
    flags: frozenset = field(default_factory=frozenset)
    sigma_min: float = float("nan")


def _finite(*arrays) -> bool:
    """All entries finite (a sum is non-finite iff an entry is NaN/Inf, barring overflow)."""
    for a in arrays:
        if not math.isfinite(float(np.asarray(a, float).sum())):
            return False
    return True


def reference_fault(T: np.ndarray, last_target: np.ndarray, max_step_m: float) -> Optional[tuple]:
    """Why a new reference ``T`` is bad input, as ``(cause, sentence)``, or None: not a finite
    4x4 (``reference_nonfinite``), not a rigid transform (``reference_not_rigid``), or farther
    than ``max_step_m`` from the last accepted one (``reference_jump``)."""
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return "reference_nonfinite", "non-finite or malformed pose; holding the last"
    if not _is_rigid(T):
        return "reference_not_rigid", "rotation not orthonormal; holding the last"
    step = float(np.linalg.norm(T[:3, 3] - last_target[:3, 3]))
    if step > max_step_m:
        return "reference_jump", f"jump {step:.3f} m > {max_step_m} m"
    return None


def _is_rigid(T: np.ndarray) -> bool:
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return False
    R = T[:3, :3]
    return (np.abs(R.T @ R - np.eye(3)).max() < 1e-6 and abs(np.linalg.det(R) - 1.0) < 1e-6
            and np.allclose(T[3], [0, 0, 0, 1]))


class PyInteractionController:
    """The gated tick in Python: the TEST ORACLE of the C++ engine (tests only).

    The engine is :class:`InteractionController` (the whole tick as one C++ call,
    ``hri_core._hri_core.interaction.InteractionTick``; in the nodes it runs inside the C++
    real-time loop ``hri_core.rt.RtLoop``). This class keeps the reference arithmetic in Python;
    tests/interaction/test_interaction_backends.py holds both to 1e-9 on every tick. Its input
    methods (validation, rejection counters) are the ones the engine inherits.
    Stateful, one per loop; not thread-safe (as the dissertation's controllers)."""

    def __init__(self, params: InteractionParams, world_T_d: np.ndarray, n_joints: int,
                 law: str = "lie", logger: Optional[logging.Logger] = None, safety=None,
                 torque_max_nm=None):
        """``safety``: an ``hri_core.safety.SafetyChecker`` (torque, torque rate, workspace, EE
        speed, NaN) run on every command; None = only the built-in NaN/torque-limit gate.
        ``torque_max_nm``: per-joint clamp of the command (the robot's ``joints.torque_max_nm``;
        None: none)."""
        T = self._setup(params, world_T_d, n_joints, law, logger, torque_max_nm)
        self.world_T_d = T.copy()          # the reference the controller tracks (rate-governed)
        self.world_T_target = T.copy()     # the latest accepted reference
        self.mode = params.mode
        # law "lie": Lie-PD impedance + app. H admittance; "cartesian": the classical pair
        self.admittance = (LieAdmittance(params.admittance) if law == "lie"
                           else CartesianAdmittance(params.admittance))
        self.filter = make_filter(params.passivity)
        self.wrench = np.zeros(6)
        self.wrench_ok = True
        self.K = params.impedance.stiffness.copy()
        self.D = params.impedance.damping.copy()
        self._blend_from = (self.K, self.D)
        self._blend_to = (self.K, self.D)
        self._blend_t = 0.0
        self._blend_total = 0.0
        self.time_s = 0.0
        self._settle_until = -1.0
        self.frozen_reason: Optional[str] = None
        self.held = False                  # the stop input (hold)
        self.rejected: Counter = Counter()
        self.events: Counter = Counter()
        self.last_tau = np.zeros(self.n)
        self.last_ref = T.copy()
        self.last_flags: frozenset = frozenset()
        self.safety = safety
        self._safety_seeded = False

    def _setup(self, params, world_T_d, n_joints, law, logger, torque_max_nm) -> np.ndarray:
        """The constructor arguments both controllers check and keep; returns the initial T_d."""
        if law not in LAWS:
            raise ValueError(f"law must be one of {LAWS}")
        T = np.asarray(world_T_d, float)
        if not _is_rigid(T):
            raise ValueError("initial reference must be a finite rigid transform")
        self.p, self.law, self.n = params, law, int(n_joints)
        self.log = logger or logging.getLogger("hri_interaction")
        self.torque_max_nm = None if torque_max_nm is None else np.asarray(torque_max_nm, float)
        return T

    # ------------------------------------------------------------------ inputs (latest values)
    def reject_input(self, cause: str, why: str) -> bool:
        """Count (``rejected[cause]``) and log (at counts 1, 10, 100, …) a bad input; False.
        ``last_rejection`` keeps ``(cause, why)`` (a parameter set answers with ``why``)."""
        self.rejected[cause] += 1
        self.last_rejection = (cause, why)
        if self.rejected[cause] in (1, 10, 100, 1000) or self.rejected[cause] % 10000 == 0:
            self.log.warning("interaction: rejected %s (%s), count %d", cause, why, self.rejected[cause])
        return False

    def set_reference(self, world_T_d) -> bool:
        """A new target pose (4x4, or None for a message that did not convert): refused while the
        stop holds (``reference_during_stop``) or when :func:`reference_fault` finds it bad."""
        if self.held:
            return self.reject_input("reference_during_stop", "system stop: reference ignored")
        T = np.asarray(world_T_d if world_T_d is not None else np.nan, float)
        fault = reference_fault(T, self.world_T_target, self.p.limits.max_pose_step_m)
        if fault is not None:
            return self.reject_input(*fault)
        self.world_T_target = T.copy()
        return True

    def hold(self, on: bool, reason: str = "stop", world_T_ee=None) -> None:
        """The system-stop input. ``hold(True, reason, world_T_ee)``: reference and target are
        re-anchored at ``world_T_ee`` (the measured EE pose; default: the tracked reference), the
        admittance state is zeroed and the controller freezes; references and mode switches are
        refused while held. ``hold(False)`` releases a freeze of the stop (a safety freeze keeps
        holding); the target stays at the anchor, so nothing jumps back after a reset."""
        on = bool(on)
        if on == self.held:
            return
        self.held = on
        if on:
            T = np.array(self.world_T_d if world_T_ee is None else world_T_ee, float)
            self._anchor(T)
            if self.frozen_reason is None:
                self.freeze(f"{STOP_PREFIX}: {reason}")
        elif (self.frozen_reason or "").startswith(STOP_PREFIX):
            self.release()

    def _anchor(self, T: np.ndarray) -> None:
        self.world_T_target = T
        self.world_T_d = T.copy()
        self._t_v = self._t_w = self._v_arr = self._w_arr = -1.0
        self.admittance.reset()

    def set_gain_vector(self, values) -> bool:
        """Impedance gains as on ``interaction.topics.gains``: [K diag (6), D diag (6)]."""
        try:
            K, D = gains_from_vector(values)
        except GainError as exc:
            return self.reject_input(exc.cause, str(exc))
        return self.set_impedance_gains(K, D)

    @property
    def world_T_target(self) -> np.ndarray:
        """The latest accepted reference. Setting it also estimates the target stream's arrival
        speed (|step| / time since the previous target that moved, when at most
        ``reference_interpolation_max_s`` apart): the governor then approaches it at that speed,
        capped by the max speeds (a first-order hold of e.g. 50 Hz teleop steps; V_d continuous)."""
        return self._T_target

    @world_T_target.setter
    def world_T_target(self, T) -> None:
        T = np.asarray(T, float)
        prev = getattr(self, "_T_target", None)
        if prev is not None:
            se3 = self.admittance.se3
            step = np.asarray(se3.minus(T, prev))
            self._t_v, self._v_arr = self._arrival(float(np.linalg.norm(step[3:])), "_t_v", "_v_arr")
            self._t_w, self._w_arr = self._arrival(float(np.linalg.norm(step[:3])), "_t_w", "_w_arr")
        self._T_target = T

    def _arrival(self, step: float, t_name: str, v_name: str):
        """(time, speed) of the stream after a target step (m or rad; below 1e-9: noise, no motion)."""
        t_prev, speed = getattr(self, t_name, -1.0), getattr(self, v_name, -1.0)
        if not step > 1e-9:
            return t_prev, speed
        now = getattr(self, "time_s", 0.0)
        dt_arr = now - t_prev
        if t_prev >= 0.0 and 0.0 < dt_arr <= self.p.limits.reference_interpolation_max_s:
            speed = step / dt_arr
        elif dt_arr != 0.0:
            speed = -1.0            # no stream (first target, or after a pause): the max speed
        return now, speed

    def _govern_reference(self, dt: float, flags: set) -> None:
        """T_d moves towards the latest target along the geodesic, at most
        ``reference_max_linear_m_s`` / ``reference_max_angular_rad_s`` (a step becomes a ramp:
        torque and torque rate stay inside the robot's limits). ``self._vd``: the body twist of that
        motion on this tick, Log(T_d,prev⁻¹ T_d) / dt (the reference feed-forward)."""
        self._vd = None
        if self.frozen_reason is not None or self.world_T_d is self.world_T_target:
            return
        se3 = self.admittance.se3
        xi = se3.minus(self.world_T_target, self.world_T_d)
        if not xi.any():
            self.world_T_d = self.world_T_target
            return
        s = 1.0
        nw, nv = float(np.linalg.norm(xi[:3])), float(np.linalg.norm(xi[3:]))
        w_arr, v_arr = getattr(self, "_w_arr", -1.0), getattr(self, "_v_arr", -1.0)
        wcap = min(self.p.limits.reference_max_angular_rad_s, w_arr) if w_arr > 0 else self.p.limits.reference_max_angular_rad_s
        vcap = min(self.p.limits.reference_max_linear_m_s, v_arr) if v_arr > 0 else self.p.limits.reference_max_linear_m_s
        if nw > wcap * dt:
            s = min(s, wcap * dt / nw)
        if nv > vcap * dt:
            s = min(s, vcap * dt / nv)
        if s < 1.0:
            flags.add("reference_ramping")
            self.world_T_d = se3.plus(self.world_T_d, s * xi)
            self._vd = (s / dt) * xi
        else:
            self.world_T_d = self.world_T_target     # reached (same object: no work next tick)
            self._vd = xi / dt

    def set_wrench(self, wrench_body) -> bool:
        w = np.asarray(wrench_body, float)
        if w.shape != (6,) or not np.all(np.isfinite(w)):
            self.wrench_ok = False
            return self.reject_input("wrench_nonfinite", "NaN/Inf wrench; admittance holds")
        if np.linalg.norm(w[3:]) > self.p.limits.max_force_n or np.linalg.norm(w[:3]) > self.p.limits.max_torque_nm:
            self.wrench_ok = False
            return self.reject_input("wrench_too_large", f"|f| {np.linalg.norm(w[3:]):.1f} N beyond limits")
        self.wrench = w.copy()
        self.wrench_ok = True
        return True

    def set_impedance_gains(self, K, D) -> bool:
        """Validated (:func:`validate_impedance_gains`), then blended over ``blend_s``."""
        try:
            K, D = validate_impedance_gains(K, D, self.p.gain_limits)
        except GainError as exc:
            return self.reject_input(exc.cause, str(exc))
        self._blend_gains(K, D)
        self.events["gain_change"] += 1
        return True

    def _blend_gains(self, K, D) -> None:
        self._blend_from = (self.K.copy(), self.D.copy())
        self._blend_to = (K, D)
        self._blend_t = 0.0
        self._blend_total = self.p.blend_s
        if self._blend_total <= 0:
            self.K, self.D = K, D

    def set_admittance_params(self, params: AdmittanceParams) -> bool:
        """Admittance gains act on λ̈ only: λ and T_mod stay continuous, so no blend is needed."""
        self.admittance.set_params(params)
        self.events["admittance_gain_change"] += 1
        return True

    def request_mode(self, mode: str, state: ArmState) -> bool:
        if mode not in MODES:
            return self.reject_input("mode_invalid", f"unknown mode {mode!r}")
        if self.frozen_reason is not None:
            return self.reject_input("mode_switch_refused", f"frozen: {self.frozen_reason}")
        if not _finite(state.q, state.dq, state.world_T_ee, state.body_twist):
            return self.reject_input("mode_switch_refused", "state not finite")
        if mode == self.mode:
            return True
        # Seeding: the admittance state (λ, λ̇) is shared by every mode, so the reference
        # T_d exp(λ) and its twist are continuous across the switch (no torque jump); the load the
        # old mode held stays in the inner loop and is handed over at the admittance's own rate.
        self.filter.reset()
        self.events[f"switch_{self.mode}_to_{mode}"] += 1
        self.log.info("interaction: mode %s -> %s", self.mode, mode)
        self.mode = mode
        self._settle_until = self.time_s + self.p.switch.settle_s
        return True

    def freeze(self, reason: str) -> None:
        if self.frozen_reason is None:
            self.log.warning("interaction: frozen (%s)", reason)
            self.events["freeze"] += 1
        self.frozen_reason = reason
        self._set_frozen(True)

    def release(self) -> None:
        self.frozen_reason = None
        self._set_frozen(False)

    def _set_frozen(self, on: bool) -> None:
        if on:
            self.admittance.lam_dot[:] = 0.0

    # ------------------------------------------------------------------ the tick
    def _gains(self, dt: float):
        if self._blend_total > 0 and self._blend_t < self._blend_total:
            self._blend_t = min(self._blend_total, self._blend_t + dt)
            a = self._blend_t / self._blend_total
            self.K = blend(self._blend_from[0], self._blend_to[0], a)
            self.D = blend(self._blend_from[1], self._blend_to[1], a)
        return self.K, self.D

    def _bound_twist(self, flags: set) -> None:
        settling = self.time_s < self._settle_until
        lin = self.p.switch.settle_max_linear_m_s if settling else self.p.limits.max_linear_m_s
        ang = self.p.switch.settle_max_angular_rad_s if settling else self.p.limits.max_angular_rad_s
        if settling:
            flags.add("settling")
        V = self.admittance.twist()
        s = 1.0
        nw, nv = float(np.linalg.norm(V[:3])), float(np.linalg.norm(V[3:]))
        if nw > ang:
            s = min(s, ang / nw)
        if nv > lin:
            s = min(s, lin / nv)
        if s < 1.0:
            self.admittance.lam_dot *= s
            flags.add("twist_bounded")
            self.events["twist_bounded_settle" if settling else "twist_bounded"] += 1

    def reference(self) -> np.ndarray:
        """The pose the torque law tracks, in every mode: T_d exp(λ) (classical law: the split
        R³ × SO(3) modified pose)."""
        if not self.admittance.lam.any():
            return self.world_T_d.copy()
        return self.admittance.modified_pose(self.world_T_d)

    def tick(self, state: ArmState, dt: float) -> TickResult:
        flags: set = set()
        self.time_s += dt
        self._dt = dt
        if not (_finite(state.q, state.dq, state.world_T_ee, state.body_twist, state.body_jacobian,
                        state.gravity, state.coriolis) and dt > 0 and math.isfinite(dt)):
            self.reject_input("state_nonfinite", "non-finite joint state; holding the last command")
            flags |= {"hold", "state_invalid"}
            self.last_flags = frozenset(flags)
            return TickResult(self.last_tau.copy(), self.last_ref.copy(), self.last_flags)
        self._govern_reference(dt, flags)
        smin = sigma_min(state.body_jacobian)
        singular = smin < self.p.limits.singular_sigma_min
        if singular:
            flags.add("singular")
            self.events["singular_ticks"] += 1
        hold_adm = self.frozen_reason is not None or not self.wrench_ok or singular
        if self.frozen_reason is not None:
            flags |= {"frozen", "hold"}
        if not self.wrench_ok:
            flags |= {"wrench_invalid", "hold"}
        # admittance: driven by the filtered wrench in admittance/hybrid, free decay in impedance
        if hold_adm:
            self.admittance.lam_dot[:] = 0.0
        else:
            if self.mode == "admittance":
                w = self.wrench
            elif self.mode == "hybrid":
                w = self.wrench * self.p.compliant_axes
            else:
                w = np.zeros(6)
            w_safe = self.filter.filter(w, self.admittance.lam_dot, dt)
            if self.admittance.lam.any() or self.admittance.lam_dot.any() or w_safe.any():
                self.admittance.step(w_safe, dt)
                self._bound_twist(flags)
        T_ref = self.reference()
        V_ref = self.admittance.body_twist() if self.admittance.lam_dot.any() else None
        if self.p.reference_feedforward and self.law == "lie" and self._vd is not None and self._vd.any():
            lam, se3 = self.admittance.lam, self.admittance.se3   # Ad_{exp(-λ)} V_d: body twist of T_d exp(λ)
            ff = se3.adjoint(se3.exp(-lam)) @ self._vd if lam.any() else self._vd
            V_ref = ff if V_ref is None else V_ref + ff
        K, D = self._gains(dt)
        ff = np.zeros(self.n)
        if self.p.gravity_compensation:
            ff += state.gravity
        if self.p.impedance.coriolis_compensation:
            ff += state.coriolis
        if self.law == "lie":
            tau = lie_impedance_torque(state.world_T_ee, state.body_twist, state.body_jacobian, ff,
                                       T_ref, K, D, V_ref)
        else:
            tau = cartesian_impedance_torque(state.world_T_ee, state.body_twist, state.body_jacobian,
                                             ff, T_ref, K, D)
        if not np.all(np.isfinite(tau)):
            self.reject_input("torque_nonfinite", "controller produced NaN; holding the last command")
            flags |= {"hold", "torque_invalid"}
            tau = self.last_tau.copy()
        if self.safety is not None:
            tau = self._safety_gate(tau, ff, state, flags)
        if self.torque_max_nm is not None:
            clipped = np.clip(tau, -self.torque_max_nm, self.torque_max_nm)
            if np.any(clipped != tau):
                flags.add("torque_clamped")
                self.events["torque_clamped"] += 1
            tau = clipped
        self.last_tau = tau
        self.last_ref = T_ref
        self.last_flags = frozenset(flags)
        return TickResult(tau, T_ref, self.last_flags, smin)

    # violations that freeze the controller (hold + report); torque / torque-rate are clamped
    FREEZE_ON = frozenset({"position", "workspace", "ee_speed"})

    def _safety_gate(self, tau, ff, state: ArmState, flags: set) -> np.ndarray:
        """The hri_core safety checker on the command: clamped and flagged (never silent); a
        rejected command (non-finite) holds the last one; position/workspace/EE-speed freeze."""
        R = state.world_T_ee[:3, :3]
        p = state.world_T_ee[:3, 3]
        if not self._safety_seeded:
            self.safety.reset(tau=np.asarray(ff, float), ee_pos=p)
            self._safety_seeded = True
        r = self.safety.check(tau=tau, ee_pos=p, ee_vel=R @ state.body_twist[3:], dt_s=self._dt,
                              now_s=self.time_s, stamp_s=self.time_s)
        if r.ok:
            return tau
        for v in r.violations:
            flags.add(f"safety_{v}")
            self.events[f"safety_{v}"] += 1
        if r.rejected:
            flags.add("hold")
            return self.last_tau.copy()
        hit = self.FREEZE_ON.intersection(r.violations)
        if hit:
            self.freeze("safety: " + ",".join(sorted(hit)))
            flags |= {"frozen", "hold"}
        return np.asarray(r.tau, float)

    def diagnostics(self) -> dict:
        return {"mode": self.mode, "time_s": self.time_s, "frozen": self.frozen_reason,
                "flags": sorted(self.last_flags), "rejected": dict(self.rejected),
                "events": dict(self.events), "lambda": self.admittance.lam.tolist(),
                "energy_j": self.filter.energy_j, "energy_violations": self.filter.violations,
                "pc_saturations": self.filter.saturations,
                "stiffness_diag": np.diag(self.K).tolist()}


# ---------------------------------------------------------------------------- the C++ tick
class _CxxAdmittanceView:
    """``controller.admittance`` of the C++ path: (λ, λ̇) live in the C++ tick object."""

    def __init__(self, tick, params: AdmittanceParams, law: str):
        from hri_core import se3

        self.se3 = se3
        self._t = tick
        self.params = params
        self.law = law

    lam = property(lambda self: np.asarray(self._t.lam), lambda self, v: setattr(self._t, "lam", v))
    lam_dot = property(lambda self: np.asarray(self._t.lam_dot),
                       lambda self, v: setattr(self._t, "lam_dot", v))

    def reset(self, lam=None, lam_dot=None) -> None:
        self._t.lam = np.zeros(6) if lam is None else np.asarray(lam, float)
        self._t.lam_dot = np.zeros(6) if lam_dot is None else np.asarray(lam_dot, float)

    def set_params(self, params: AdmittanceParams) -> None:
        self.params = params
        self._t.set_admittance(params.mass, params.damping, params.stiffness)

    def twist(self) -> np.ndarray:
        return np.asarray(self._t.twist())

    def body_twist(self) -> np.ndarray:
        if self.law != "cartesian":     # the Lie family (lie, gic, lie_osd) shares the Lie admittance
            return self.se3.right_jacobian(self.lam) @ self.lam_dot
        return self.lam_dot

    def energy(self) -> float:
        V, lam, p = self.twist(), self.lam, self.params
        return float(0.5 * V @ p.mass @ V + 0.5 * lam @ p.stiffness @ lam)

    def modified_pose(self, world_T_d: np.ndarray) -> np.ndarray:
        return np.asarray(self._t.modified_pose(np.asarray(world_T_d, float)))


class _CxxFilterView:
    """``controller.filter`` of the C++ path: the energy accounts live in the C++ tick object."""

    def __init__(self, tick, params: PassivityParams):
        self._t = tick
        self.name = {"none": "baseline"}.get(params.filter, params.filter)
        self.energy_floor_j = params.energy_floor_j
        self.max_damping = params.po_pc.max_damping

    energy_j = property(lambda self: self._t.energy_j)
    dissipated_j = property(lambda self: self._t.dissipated_j)
    min_energy_j = property(lambda self: self._t.min_energy_j)
    violations = property(lambda self: self._t.violations)
    energy_dof_j = property(lambda self: np.asarray(self._t.energy_dof_j))
    # ticks where the C++ PO/PC (TDPC) α hit max_damping (same rule as passivity.py)
    saturations = property(lambda self: self._t.saturations)

    @property
    def last_alpha(self):
        """α applied on the last filtered tick, as ``PassivityFilter.last_alpha`` (float) /
        ``TDPCFilter.last_alpha`` (6 values)."""
        a = np.asarray(self._t.last_alpha)
        return a if self.name == "tdpc" else float(a[0])

    @property
    def deficit_j(self) -> float:
        """As ``WrenchFilter.deficit_j`` / ``TDPCFilter.deficit_j``: the energy (J) below the
        floor(s) now, carried until it is dissipated."""
        if self.name == "tdpc":
            return energy_deficit_dof_j(self.energy_floor_j, self.energy_dof_j)
        return energy_deficit_j(self.energy_floor_j, self.energy_j)

    def reset(self) -> None:
        self._t.reset_filter()


class InteractionController(PyInteractionController):
    """The interaction controller: the whole gated tick in one C++ call
    (``hri_core._hri_core.interaction.InteractionTick``, cpp/include/hri_core/interaction.hpp).

    Python keeps the slow inputs (validation, rejection counters, logging: inherited) and pushes
    each accepted one to the C++ object; the tick state (T_d, λ, λ̇, K, D, energy, time, last
    command) lives in C++ and is read through properties. The safety checker passed in is the
    same ``hri_core.safety.SafetyChecker`` object, called from C++ directly."""

    def __init__(self, params: InteractionParams, world_T_d: np.ndarray, n_joints: int,
                 law: Optional[str] = None, logger: Optional[logging.Logger] = None, safety=None,
                 torque_max_nm=None):
        from hri_interaction.core.impedance import cxx_kernels

        T = self._setup(params, world_T_d, n_joints, law or params.law, logger, torque_max_nm)
        cx = cxx_kernels()
        if cx is None:
            raise ImportError("hri_core (cpp/) is not built: the interaction engine is its C++ tick")
        self._flag_bits = dict(cx.TICK_FLAGS)
        from hri_core.safety import FLAGS as SAFETY_FLAGS

        self._safety_bits = dict(SAFETY_FLAGS)
        a, ps = params.admittance, params.passivity
        self._cx = cx.InteractionTick(tick_params(params, self.n, self.law, torque_max_nm), T, safety)
        self.admittance = _CxxAdmittanceView(self._cx, a, self.law)
        self.filter = _CxxFilterView(self._cx, ps)
        self._target = T.copy()
        self._mode = params.mode
        self._settle = -1.0
        self._cx.set_mode(MODES.index(self._mode), self._settle)
        self.wrench = np.zeros(6)
        self.wrench_ok = True
        self.frozen_reason: Optional[str] = None
        self.held = False                  # the stop input (hold)
        self.rejected: Counter = Counter()
        self.events: Counter = Counter()
        self.last_flags: frozenset = frozenset()
        self.safety = safety
        self._flag_sets: dict = {}

    # ---- state that lives in C++ (read) / is pushed to C++ (write)
    time_s = property(lambda self: self._cx.time_s)
    world_T_d = property(lambda self: np.asarray(self._cx.world_T_d))
    K = property(lambda self: np.asarray(self._cx.K))
    D = property(lambda self: np.asarray(self._cx.D))
    last_tau = property(lambda self: np.asarray(self._cx.last_tau))
    last_ref = property(lambda self: np.asarray(self._cx.last_ref))

    @property
    def world_T_target(self) -> np.ndarray:
        return self._target

    @world_T_target.setter
    def world_T_target(self, T) -> None:
        self._target = np.asarray(T, float)
        self._cx.set_target(self._target)

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, m: str) -> None:
        self._mode = m
        self._cx.set_mode(MODES.index(m), self._settle)

    @property
    def _settle_until(self) -> float:
        return self._settle

    @_settle_until.setter
    def _settle_until(self, t: float) -> None:
        self._settle = float(t)
        self._cx.set_mode(MODES.index(self._mode), self._settle)

    # ---- inputs
    def set_wrench(self, wrench_body) -> bool:
        ok = super().set_wrench(wrench_body)
        self._cx.set_wrench(self.wrench, self.wrench_ok)
        return ok

    def _blend_gains(self, K, D) -> None:
        self._cx.set_gains(K, D, self.p.blend_s)

    def _set_frozen(self, on: bool) -> None:
        self._cx.set_frozen(bool(on))

    def _anchor(self, T: np.ndarray) -> None:
        self._cx.hold_at(T)
        self._target = T.copy()

    # ---- the tick: one C++ call, then counters/logging only when a flag is raised
    def _flags_of(self, bits: int, sbits: int) -> frozenset:
        key = (bits, sbits)
        fs = self._flag_sets.get(key)
        if fs is None:
            names = {n for n, b in self._flag_bits.items() if bits & b and n != "safety_freeze"}
            names |= {f"safety_{n}" for n, b in self._safety_bits.items() if sbits & b}
            fs = self._flag_sets[key] = frozenset(names)
        return fs

    def tick(self, state: ArmState, dt: float) -> TickResult:
        tau, T_ref, bits, sbits, smin = self._cx.tick(
            state.q, state.dq, state.world_T_ee, state.body_twist, state.body_jacobian,
            state.gravity, state.coriolis, dt, state.mass_matrix)
        self._dt = dt
        flags = self._flags_of(bits, sbits) if (bits or sbits) else frozenset()
        if bits or sbits:
            self._account(bits, sbits)
        self.last_flags = flags
        return TickResult(tau, T_ref, flags, smin)

    def _account(self, bits: int, sbits: int) -> None:
        fb = self._flag_bits
        if bits & fb["state_invalid"]:
            self.reject_input("state_nonfinite", "non-finite joint state; holding the last command")
            return
        if bits & fb["singular"]:
            self.events["singular_ticks"] += 1
        if bits & fb["twist_bounded"]:
            self.events["twist_bounded_settle" if bits & fb["settling"] else "twist_bounded"] += 1
        if bits & fb["torque_invalid"]:
            self.reject_input("torque_nonfinite", "controller produced NaN; holding the last command")
        if sbits:
            names = [n for n, b in self._safety_bits.items() if sbits & b]
            for n in names:
                self.events[f"safety_{n}"] += 1
            if bits & fb["safety_freeze"]:
                hit = self.FREEZE_ON.intersection(names)
                self.freeze("safety: " + ",".join(sorted(hit)))
        if bits & fb["torque_clamped"]:
            self.events["torque_clamped"] += 1
