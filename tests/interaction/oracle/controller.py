"""The interaction tick written in Python: the test oracle of the C++ engine
(``InteractionTick``, cpp/include/hri_core/interaction.hpp), on the Python laws of this package
(:mod:`oracle.impedance`, :mod:`oracle.admittance`, :mod:`oracle.passivity`) with the engine's own
slow side (:class:`hri_interaction.core.controller.ControllerBase`: the input rules, mode switch,
stop hold, freeze). Used by tests/interaction (parity to 1e-9) and bench/interaction (the
Python / C++ ratio); no configuration selects it."""
from __future__ import annotations

import logging
import math
from typing import Optional

import numpy as np

from hri_interaction.core.controller import ArmState, ControllerBase, InteractionParams, TickResult
from hri_interaction.core.inputs import finite
from hri_interaction.core.spd import blend

from oracle.admittance import CartesianAdmittance, LieAdmittance
from oracle.impedance import cartesian_impedance_torque, lie_impedance_torque, sigma_min
from oracle.passivity import make_filter


class PyInteractionController(ControllerBase):
    """The gated tick in Python: the TEST ORACLE of the C++ engine
    (:class:`hri_interaction.core.controller.InteractionController`, whose slow side it shares).
    tests/interaction/test_interaction_backends.py holds both to 1e-9 on every tick."""

    def __init__(self, params: InteractionParams, world_T_d: np.ndarray, n_joints: int,
                 law: str = "lie", logger: Optional[logging.Logger] = None, safety=None,
                 torque_max_nm=None):
        if law not in ("lie", "cartesian"):   # gic, lie_osd: their own oracles (oracle/geometric_laws.py)
            raise ValueError(f"the oracle tick runs the laws lie and cartesian, not {law!r}")
        T = self._init_inputs(params, world_T_d, n_joints, law, logger, safety, torque_max_nm)
        self.world_T_d = T.copy()          # the reference the controller tracks (rate-governed)
        self.world_T_target = T.copy()     # the latest accepted reference
        # law "lie": Lie-PD impedance + app. H admittance; "cartesian": the classical pair
        self.admittance = (LieAdmittance(params.admittance) if law == "lie"
                           else CartesianAdmittance(params.admittance))
        self.filter = make_filter(params.passivity)
        self.K = params.impedance.stiffness.copy()
        self.D = params.impedance.damping.copy()
        self._blend_from = (self.K, self.D)
        self._blend_to = (self.K, self.D)
        self._blend_t = 0.0
        self._blend_total = 0.0
        self.time_s = 0.0
        self.last_tau = np.zeros(self.n)
        self.last_ref = T.copy()
        self._safety_seeded = False

    wrench = property(lambda self: self.inputs.wrench)
    wrench_ok = property(lambda self: self.inputs.wrench_ok)

    # ------------------------------------------------------------------ the accepted inputs
    def _push_target(self, T) -> None:
        self.world_T_target = T.copy()

    def _push_wrench(self) -> None:
        pass                               # the tick reads inputs.wrench / wrench_ok

    def _push_mode(self) -> None:
        pass                               # the tick reads mode / _settle_until

    def _push_gains(self, K, D) -> None:
        self._blend_from = (self.K.copy(), self.D.copy())
        self._blend_to = (K, D)
        self._blend_t = 0.0
        self._blend_total = self.p.blend_s
        if self._blend_total <= 0:
            self.K, self.D = K, D

    def _anchor(self, T: np.ndarray) -> None:
        self.world_T_target = T
        self.world_T_d = T.copy()
        self._t_v = self._t_w = self._v_arr = self._w_arr = -1.0
        self.admittance.reset()

    def _set_frozen(self, on: bool) -> None:
        if on:
            self.admittance.lam_dot[:] = 0.0

    # ------------------------------------------------------------------ the reference governor
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

    def tick(self, state: ArmState, dt: float) -> TickResult:
        flags: set = set()
        self.time_s += dt
        self._dt = dt
        if not (finite(state.q, state.dq, state.world_T_ee, state.body_twist, state.body_jacobian,
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
