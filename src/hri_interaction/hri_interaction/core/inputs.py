"""The interaction controller's input rules: one implementation for every engine.

Inputs arrive as *latest values* (Chang 2026 §12: a single-slot buffer, "reuse last" on an
upper-layer stall). A bad input is refused, counted per cause in ``rejected`` (logged at counts
1, 10, 100, 1000 and every 10 000th), its ``(cause, why)`` kept in ``last_rejection``, and the
last good value is held:

- reference (4x4; None for a message that did not convert): refused while the stop holds
  (``reference_during_stop``), non-finite or malformed (``reference_nonfinite``), not a rigid
  transform (``reference_not_rigid``), farther than ``limits.max_pose_step_m`` from the last
  accepted one (``reference_jump``);
- wrench (body frame, (moment, force)): non-finite (``wrench_nonfinite``) or beyond
  ``limits.max_force_n`` / ``max_torque_nm`` (``wrench_too_large``): ``wrench_ok`` is False and the
  admittance holds until a valid wrench arrives;
- impedance gains K, D: not SPD (``gains_invalid``) or a diagonal entry outside ``gain_limits``
  (``gains_out_of_range``) (:func:`hri_interaction.core.spd.validate_impedance_gains`, the console
  uses the same check), also as a vector [K diag, D diag] (:func:`gains_from_vector`);
- admittance M, D, K: checked as the config's (:func:`admittance_gains`);
- mode: one of :data:`MODES` (``mode_invalid``); refused while frozen or with a non-finite state
  (``mode_switch_refused``);
- torque law: one of :data:`LAWS` (``law_invalid``); a switch the C++ tick's rule does not allow now
  (``hri_core`` ``interaction.law_switch_error``: to or from ``cartesian`` with the admittance
  engaged, or while a previous switch still blends in) is refused (``law_switch_refused``);
- the stop input :meth:`InputRules.hold`: while held, references are refused and the target is
  the anchor (the measured EE pose).

Who owns the accepted values: :class:`hri_interaction.core.controller.InteractionController`
(the C++ tick stepped from Python) and :class:`hri_interaction.engine.RtEngine` (the C++
real-time loop) push them to C++; the test oracle uses the same rules.
"""
from __future__ import annotations

import logging
import math
from collections import Counter
from typing import Optional

import numpy as np

from hri_interaction.core.admittance import AdmittanceParams
from hri_interaction.core.spd import GainError, gains_from_vector, validate_impedance_gains

MODES = ("impedance", "admittance", "hybrid")
LAWS = ("lie", "cartesian", "gic", "lie_osd")   # interaction.law (cpp/include/hri_core/interaction.hpp Law)


def finite(*arrays) -> bool:
    """All entries finite (a sum is non-finite iff an entry is NaN/Inf, barring overflow)."""
    for a in arrays:
        if not math.isfinite(float(np.asarray(a, float).sum())):
            return False
    return True


def is_rigid(T: np.ndarray) -> bool:
    """A finite 4x4 rigid transform (orthonormal rotation, det 1, last row [0, 0, 0, 1])."""
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return False
    R = T[:3, :3]
    return (np.abs(R.T @ R - np.eye(3)).max() < 1e-6 and abs(np.linalg.det(R) - 1.0) < 1e-6
            and np.allclose(T[3], [0, 0, 0, 1]))


def reference_fault(T: np.ndarray, last_target: np.ndarray, max_step_m: float) -> Optional[tuple]:
    """Why a new reference ``T`` is bad input, as ``(cause, sentence)``, or None: not a finite
    4x4 (``reference_nonfinite``), not a rigid transform (``reference_not_rigid``), or farther
    than ``max_step_m`` from the last accepted one (``reference_jump``)."""
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return "reference_nonfinite", "non-finite or malformed pose; holding the last"
    if not is_rigid(T):
        return "reference_not_rigid", "rotation not orthonormal; holding the last"
    step = float(np.linalg.norm(T[:3, 3] - last_target[:3, 3]))
    if step > max_step_m:
        return "reference_jump", f"jump {step:.3f} m > {max_step_m} m"
    return None


def admittance_gains(params, M, D, K) -> AdmittanceParams:
    """``interaction.admittance`` with the gains M, D, K (6 diagonal values or 6x6 each) and the
    other keys of ``params`` (``InteractionParams``): checked as the config's are (the
    declaration, then M and D SPD and K SPSD, :func:`hri_interaction.core.spd.validate_spd`);
    GainError saying why otherwise."""
    try:
        return AdmittanceParams.from_gains(mass=M, damping=D, stiffness=K,
                                           dexp_dot_step_s=params.admittance.dexp_dot_step_s)
    except GainError:
        raise
    except ValueError as exc:            # the declaration's checks (ConfigError): shape, bounds
        raise GainError(str(exc)) from None


class InputRules:
    """The accepted inputs and the rejection counters of one controller (module doc).
    ``params``: ``InteractionParams``; ``world_T_d``: the initial target."""

    def __init__(self, params, world_T_d: np.ndarray, logger: Optional[logging.Logger] = None):
        self.p = params
        self.log = logger or logging.getLogger("hri_interaction")
        self.rejected: Counter = Counter()
        self.last_rejection: Optional[tuple] = None
        self.target = np.array(world_T_d, float)     # the latest accepted reference
        self.wrench = np.zeros(6)
        self.wrench_ok = True
        self.held = False                            # the stop input
        self.hold_reason = ""

    def reject(self, cause: str, why: str) -> bool:
        """Count (``rejected[cause]``) and log (at counts 1, 10, 100, …) a bad input; False."""
        self.rejected[cause] += 1
        self.last_rejection = (cause, why)
        if self.rejected[cause] in (1, 10, 100, 1000) or self.rejected[cause] % 10000 == 0:
            self.log.warning("interaction: rejected %s (%s), count %d", cause, why, self.rejected[cause])
        return False

    def reference(self, world_T_d) -> Optional[np.ndarray]:
        """The new target (a copy, also kept in ``target``), or None when refused."""
        if self.held:
            self.reject("reference_during_stop", "system stop: reference ignored")
            return None
        T = np.asarray(world_T_d if world_T_d is not None else np.nan, float)
        fault = reference_fault(T, self.target, self.p.limits.max_pose_step_m)
        if fault is not None:
            self.reject(*fault)
            return None
        self.target = T.copy()
        return self.target

    def set_wrench(self, wrench_body) -> bool:
        """``wrench`` := the new wrench; a bad one leaves ``wrench`` and sets ``wrench_ok`` False."""
        w = np.asarray(wrench_body, float)
        if w.shape != (6,) or not np.all(np.isfinite(w)):
            self.wrench_ok = False
            return self.reject("wrench_nonfinite", "NaN/Inf wrench; admittance holds")
        lim = self.p.limits
        if np.linalg.norm(w[3:]) > lim.max_force_n or np.linalg.norm(w[:3]) > lim.max_torque_nm:
            self.wrench_ok = False
            return self.reject("wrench_too_large", f"|f| {np.linalg.norm(w[3:]):.1f} N beyond limits")
        self.wrench = w.copy()
        self.wrench_ok = True
        return True

    def gains(self, K, D) -> Optional[tuple]:
        """(K, D) as 6x6 arrays (:func:`validate_impedance_gains`), or None when refused."""
        try:
            return validate_impedance_gains(K, D, self.p.gain_limits)
        except GainError as exc:
            self.reject(exc.cause, str(exc))
            return None

    def gain_vector(self, values) -> Optional[tuple]:
        """(K diag, D diag) of [K diag (6), D diag (6)] (``interaction.topics.gains``), or None
        when it is not 12 values; the caller checks them as gains (:meth:`gains`)."""
        try:
            return gains_from_vector(values)
        except GainError as exc:
            self.reject(exc.cause, str(exc))
            return None

    def admittance(self, M, D, K) -> Optional[AdmittanceParams]:
        """The admittance section with M, D, K (:func:`admittance_gains`), or None when refused."""
        try:
            return admittance_gains(self.p, M, D, K)
        except GainError as exc:
            self.reject(exc.cause, str(exc))
            return None

    def mode(self, mode: str, frozen_reason: Optional[str] = None, state=None) -> bool:
        """May the controller switch to ``mode``: a known mode, not frozen (``frozen_reason``
        None), a finite ``state`` (an ``ArmState``; None: not checked)."""
        if mode not in MODES:
            return self.reject("mode_invalid", f"unknown mode {mode!r}")
        if frozen_reason is not None:
            return self.reject("mode_switch_refused", f"frozen: {frozen_reason}")
        if state is not None and not finite(state.q, state.dq, state.world_T_ee, state.body_twist):
            return self.reject("mode_switch_refused", "state not finite")
        return True

    def law(self, current: str, law: str, lam, lam_dot, blending: bool) -> bool:
        """May the torque law switch from ``current`` to ``law`` now, with the admittance state
        (``lam``, ``lam_dot``) and a previous switch still blending in or not (``blending``): a
        known law, and the rule the C++ tick applies again at its boundary
        (``law_switch_error``: within the Lie family always; to or from ``cartesian`` only with
        the admittance at rest; never while a previous switch blends in)."""
        if law not in LAWS:
            return self.reject("law_invalid", f"unknown law {law!r} (one of {', '.join(LAWS)})")
        from hri_interaction.core.impedance import cxx_kernels

        why = cxx_kernels().law_switch_error(current, law, np.asarray(lam, float), np.asarray(lam_dot, float),
                                             bool(blending))
        return True if why is None else self.reject("law_switch_refused", f"law {current} -> {law}: {why}")

    def hold(self, on: bool, reason: str = "stop", anchor=None) -> bool:
        """The stop input: ``held`` := ``on``; on, the target becomes ``anchor`` (the measured EE
        pose; None: unchanged). True when ``held`` changed."""
        on = bool(on)
        if on == self.held:
            return False
        self.held = on
        self.hold_reason = reason
        if on and anchor is not None:
            self.target = np.array(anchor, float)
        return True
