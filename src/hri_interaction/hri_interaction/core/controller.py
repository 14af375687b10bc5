"""The 1 kHz interaction controller: the C++ ``InteractionTick`` with its inputs, modes and flags.

One ``tick(state, dt)`` = read state → (wrench filter → admittance) → reference → impedance τ →
safety gate (finite, torque limits) → command, as one C++ call
(``hri_core._hri_core.interaction.InteractionTick``, cpp/include/hri_core/interaction.hpp; the
real-time loop ``hri_core.rt.RtLoop`` builds its own from the same :func:`tick_params`). Python
keeps the slow inputs, each checked by the one set of input rules
(:mod:`hri_interaction.core.inputs`): a bad one is refused, counted and the last value held.
Accepted gains are blended convexly from the current ones over ``blend_s`` (SPD throughout, no
torque jump); a mode switch seeds the new controller from the old state and bounds the admittance
twist by the tightened ``switch.settle_*`` bounds for ``settle_s``.

Modes (Chang 2026 §12 "Modes"): every mode tracks T_ref = T_d exp(λ) with one shared admittance state
(λ, λ̇); they differ in the wrench that drives it: ADMITTANCE the full (filtered) wrench, HYBRID
S ⊙ wrench with S = diag(compliant_axes) (the other axes stay stiff at T_d), IMPEDANCE none, so an
admittance displacement left from a previous mode decays under its own M, D, K. A switch
therefore never moves the reference (seeded, torque-continuous); only the settle bound applies.
``freeze(reason)`` (a safety flag) holds reference and admittance until ``release()``.
A non-finite state or a singular Jacobian never yields a NaN torque: the last finite command is
held (state) or the admittance is held and ``singular`` flagged with σ_min (no division by J_b).

The same tick written in Python is the test oracle (tests/interaction/oracle/controller.py),
held to this one to 1e-9 by tests/interaction/test_interaction_backends.py.
"""
from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

import numpy as np

from hri_interaction.core.admittance import AdmittanceParams
from hri_interaction.core.impedance import ImpedanceParams
from hri_interaction.core.inputs import LAWS, MODES, InputRules, is_rigid
from hri_interaction.core.passivity import PassivityParams, energy_deficit_dof_j, energy_deficit_j
from hri_interaction.core.spd import GainError, ImpedanceGainLimits, validate_impedance_gains
from hri_interaction import parameters_gen

STOP_PREFIX = "system stop"      # frozen_reason of a freeze by the stop input (hold)


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
    (:data:`LAWS`; None: ``params.law``), clamping the command to ``torque_max_nm`` (per joint, N·m; None: no
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


class ControllerBase:
    """The slow side of an interaction controller, written once for the engine
    (:class:`InteractionController`) and its Python test oracle: every input through the one set
    of rules (:class:`InputRules`; rejections counted in ``rejected``), the mode switch, the stop
    hold, freeze / release, the ``events`` counter and the diagnostics. A subclass owns the tick
    state (``admittance``, ``filter``, ``world_T_d``, ``K``, ``time_s``, …) and takes each accepted
    input through its hooks: ``_push_target(T)``, ``_push_wrench()``, ``_push_gains(K, D)``,
    ``_push_mode()``, ``_anchor(T)``, ``_set_frozen(on)``.

    ``safety``: an ``hri_core.safety.SafetyChecker`` (torque, torque rate, workspace, EE speed,
    NaN) run on every command; None = only the built-in NaN/torque-limit gate. ``torque_max_nm``:
    per-joint clamp of the command (the robot's ``joints.torque_max_nm``; None: none). Stateful,
    one per loop; not thread-safe."""

    # violations that freeze the controller (hold + report); torque / torque-rate are clamped
    FREEZE_ON = frozenset({"position", "workspace", "ee_speed"})

    def _init_inputs(self, params: InteractionParams, world_T_d, n_joints: int, law: str,
                     logger: Optional[logging.Logger], safety, torque_max_nm) -> np.ndarray:
        """Check and keep the constructor arguments; returns the initial T_d."""
        if law not in LAWS:
            raise ValueError(f"law must be one of {LAWS}")
        T = np.asarray(world_T_d, float)
        if not is_rigid(T):
            raise ValueError("initial reference must be a finite rigid transform")
        self.p, self.law, self.n = params, law, int(n_joints)
        self.log = logger or logging.getLogger("hri_interaction")
        self.torque_max_nm = None if torque_max_nm is None else np.asarray(torque_max_nm, float)
        self.safety = safety
        self.inputs = InputRules(params, T, self.log)
        self.mode = params.mode
        self._settle_until = -1.0
        self.frozen_reason: Optional[str] = None
        self.events: Counter = Counter()
        self.last_flags: frozenset = frozenset()
        return T

    rejected = property(lambda self: self.inputs.rejected, doc="refused inputs per cause")
    last_rejection = property(lambda self: self.inputs.last_rejection, doc="(cause, why) of the last")
    held = property(lambda self: self.inputs.held, doc="the stop input holds")

    # ------------------------------------------------------------------ inputs (latest values)
    def reject_input(self, cause: str, why: str) -> bool:
        return self.inputs.reject(cause, why)

    def set_reference(self, world_T_d) -> bool:
        """A new target pose (4x4, or None for a message that did not convert); the tick's
        governor approaches it at most at ``limits.reference_max_*``."""
        T = self.inputs.reference(world_T_d)
        if T is None:
            return False
        self._push_target(T)
        return True

    def set_wrench(self, wrench_body) -> bool:
        ok = self.inputs.set_wrench(wrench_body)
        self._push_wrench()
        return ok

    def set_impedance_gains(self, K, D) -> bool:
        """Validated (:meth:`InputRules.gains`), then blended over ``blend_s``."""
        g = self.inputs.gains(K, D)
        if g is None:
            return False
        self._push_gains(*g)
        self.events["gain_change"] += 1
        return True

    def set_gain_vector(self, values) -> bool:
        """Impedance gains as on ``interaction.topics.gains``: [K diag (6), D diag (6)]."""
        g = self.inputs.gain_vector(values)
        return g is not None and self.set_impedance_gains(*g)

    def set_admittance(self, M, D, K) -> bool:
        """Admittance M, D, K (:meth:`InputRules.admittance`), from the next tick on."""
        a = self.inputs.admittance(M, D, K)
        return a is not None and self.set_admittance_params(a)

    def set_admittance_params(self, params: AdmittanceParams) -> bool:
        """Admittance gains act on λ̈ only: λ and T_mod stay continuous, so no blend is needed."""
        self.admittance.set_params(params)
        self.events["admittance_gain_change"] += 1
        return True

    def request_mode(self, mode: str, state: "ArmState") -> bool:
        if not self.inputs.mode(mode, self.frozen_reason, state):
            return False
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
        self._push_mode()
        return True

    def hold(self, on: bool, reason: str = "stop", world_T_ee=None) -> None:
        """The system-stop input. ``hold(True, reason, world_T_ee)``: reference and target are
        re-anchored at ``world_T_ee`` (the measured EE pose; default: the tracked reference), the
        admittance state is zeroed and the controller freezes; references and mode switches are
        refused while held. ``hold(False)`` releases a freeze of the stop (a safety freeze keeps
        holding); the target stays at the anchor, so nothing jumps back after a reset."""
        T = None
        if bool(on) and not self.held:
            T = np.array(self.world_T_d if world_T_ee is None else world_T_ee, float)
        if not self.inputs.hold(on, reason, T):
            return
        if on:
            self._anchor(T)
            if self.frozen_reason is None:
                self.freeze(f"{STOP_PREFIX}: {reason}")
        elif (self.frozen_reason or "").startswith(STOP_PREFIX):
            self.release()

    def freeze(self, reason: str) -> None:
        if self.frozen_reason is None:
            self.log.warning("interaction: frozen (%s)", reason)
            self.events["freeze"] += 1
        self.frozen_reason = reason
        self._set_frozen(True)

    def release(self) -> None:
        self.frozen_reason = None
        self._set_frozen(False)

    # ------------------------------------------------------------------ what the tick tracks
    def reference(self) -> np.ndarray:
        """The pose the torque law tracks, in every mode: T_d exp(λ) (classical law: the split
        R³ × SO(3) modified pose)."""
        if not self.admittance.lam.any():
            return self.world_T_d.copy()
        return self.admittance.modified_pose(self.world_T_d)

    def diagnostics(self) -> dict:
        return {"mode": self.mode, "law": self.law, "time_s": self.time_s, "frozen": self.frozen_reason,
                "flags": sorted(self.last_flags), "rejected": dict(self.rejected),
                "events": dict(self.events), "lambda": self.admittance.lam.tolist(),
                "energy_j": self.filter.energy_j, "energy_violations": self.filter.violations,
                "pc_saturations": self.filter.saturations,
                "stiffness_diag": np.diag(self.K).tolist()}


class InteractionController(ControllerBase):
    """The interaction controller: the whole gated tick in one C++ call
    (``hri_core._hri_core.interaction.InteractionTick``, cpp/include/hri_core/interaction.hpp).

    The slow inputs are :class:`ControllerBase`'s; each accepted one is pushed to the C++ object.
    The tick state (T_d, λ, λ̇, K, D, energy, time, last command) lives in C++ and is read through
    properties. The safety checker passed in is the same ``hri_core.safety.SafetyChecker``
    object, called from C++ directly."""

    def __init__(self, params: InteractionParams, world_T_d: np.ndarray, n_joints: int,
                 law: Optional[str] = None, logger: Optional[logging.Logger] = None, safety=None,
                 torque_max_nm=None):
        from hri_core.safety import FLAGS as SAFETY_FLAGS
        from hri_interaction.core.impedance import cxx_kernels

        T = self._init_inputs(params, world_T_d, n_joints, law or params.law, logger, safety, torque_max_nm)
        t = tick_params(params, self.n, self.law, torque_max_nm)   # ImportError without the C++ core
        cx = cxx_kernels()
        self._flag_bits = dict(cx.TICK_FLAGS)
        self._safety_bits = dict(SAFETY_FLAGS)
        self._cx = cx.InteractionTick(t, T, safety)
        self.admittance = _CxxAdmittanceView(self._cx, params.admittance, self.law)
        self.filter = _CxxFilterView(self._cx, params.passivity)
        self._push_mode()
        self._flag_sets: dict = {}

    # ---- state that lives in C++ (read) and in the input rules
    time_s = property(lambda self: self._cx.time_s)
    world_T_d = property(lambda self: np.asarray(self._cx.world_T_d))
    K = property(lambda self: np.asarray(self._cx.K))
    D = property(lambda self: np.asarray(self._cx.D))
    last_tau = property(lambda self: np.asarray(self._cx.last_tau))
    last_ref = property(lambda self: np.asarray(self._cx.last_ref))
    world_T_target = property(lambda self: self.inputs.target, doc="the latest accepted reference")

    law_blending = property(lambda self: bool(self._cx.law_blending), doc="a law switch blends in")

    def set_law(self, law: str) -> bool:
        """The torque law (``interaction.law``) from the next tick on, checked by
        :meth:`InputRules.law` (refused: counted, the law unchanged). The reference does not move
        (one admittance state); the command blends convexly from the old law's torque to the new
        one's over ``switch.law_blend_s``."""
        if not self.inputs.law(self.law, law, self.admittance.lam, self.admittance.lam_dot, self.law_blending):
            return False
        if law == self.law:
            return True
        if not self._cx.set_law(law, self.p.switch.law_blend_s):      # the same rule: cannot differ here
            return self.reject_input("law_switch_refused", f"law {self.law} -> {law}: refused by the tick")
        self.events[f"law_{self.law}_to_{law}"] += 1
        self.log.info("interaction: law %s -> %s (blended over %.3f s)", self.law, law, self.p.switch.law_blend_s)
        self.law = self.admittance.law = law
        return True

    # ---- each accepted input, pushed to C++
    def _push_target(self, T) -> None:
        self._cx.set_target(T)

    def _push_wrench(self) -> None:
        self._cx.set_wrench(self.inputs.wrench, self.inputs.wrench_ok)

    def _push_gains(self, K, D) -> None:
        self._cx.set_gains(K, D, self.p.blend_s)

    def _push_mode(self) -> None:
        self._cx.set_mode(MODES.index(self.mode), self._settle_until)

    def _anchor(self, T) -> None:
        self._cx.hold_at(T)

    def _set_frozen(self, on: bool) -> None:
        self._cx.set_frozen(bool(on))

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
