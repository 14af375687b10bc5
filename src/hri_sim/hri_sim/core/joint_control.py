"""Per-joint position/effort control of a simulated robot: the logic of the ``joint_robot`` node.

Every control period (:meth:`JointController.step`, the node's clock injected as ``now_s``):

    command (per joint)  ──►  position mode: the joint's own PID, target clamped to its limits
                              effort mode:   the commanded effort
                         ──►  C++ SafetyChecker (torque, torque rate, NaN, stale: clamp AND flag)
                         ──►  plant.step(tau)

Hold rules (each a flag, counted in ``flags`` and latched in ``flagged`` until :meth:`clear_flags`):

* ``stale``: an effort-mode joint whose last command is older than ``limits.stale_after_s``
  returns to position mode holding where it is (silence = hold);
* ``position``: an effort-mode joint within ``limit_margin_rad`` of a limit is held at the margin;
* any checker violation is a flag of its name; a checker rejection holds every joint (tau = 0);
* ``sim_diverged``: a non-finite joint position (MuJoCo instability under unstable gains)
  re-homes the plant at its base pose with every joint held;
* ``system_stop`` (:meth:`on_system_stop`) and ``rehomed`` (:meth:`rehome`).

A *hold* switches a joint to position mode at the given angle with a fresh PID; holding every
joint where it is (:meth:`hold_all`) keeps a position-mode joint's controller state (its integral
carries the gravity load). No middleware: the plant (``n``, ``dt_s``, ``t_s``, ``q_rad``,
``q_min``, ``q_max``, ``effort_max``, ``base_pose_rad``, ``reset``, ``step``) is injected.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Optional, Sequence

import numpy as np

from hri_core.pid import PID, PIDGains, PIDParams
from hri_core.safety import SafetyChecker, SafetyLimits, arm_limits
from hri_runtime.parameter_library.typed import params_type
from hri_safety.parameters_gen import SafetyParams

__all__ = ["GAIN_TERMS", "JointController", "joint_safety_limits", "pid_gains_refusal"]

GAIN_TERMS = ("kp", "ki", "kd")


def pid_gains_refusal(gains) -> Optional[str]:
    """Why ``[kp, ki, kd]`` cannot be a joint's PID gains (3 finite numbers >= 0), or None: the
    one check of gains from the service and from a parameter set."""
    try:
        g = [float(x) for x in gains]
    except (TypeError, ValueError):
        return f"gains must be 3 finite numbers >= 0, got {gains!r}"
    if len(g) != 3 or not all(math.isfinite(x) and x >= 0 for x in g):
        return f"gains must be 3 finite numbers >= 0, got {g}"
    return None


def joint_safety_limits(robot: str, cfg: dict, plant) -> SafetyLimits:
    """SafetyLimits: the FR3's from its config; the humanoid arm's from its model (its torque
    limits per setup; rates not limited beyond a full swing per control period) and the config's
    ``safety.command_stale_after_s``."""
    if robot == "fr3":
        return SafetyLimits(**arm_limits(cfg).as_kwargs())
    n, dt = plant.n, plant.dt_s
    free = np.full(n, 2.0 * float(np.max(plant.effort_max)) / dt)   # never binds: not a source number
    return SafetyLimits(q_min=plant.q_min, q_max=plant.q_max, v_max=free, a_max=free,
                        tau_max=plant.effort_max.copy(), tau_rate_max=free,
                        workspace_min=np.full(3, -1e3), workspace_max=np.full(3, 1e3), ee_speed_max=1e3,
                        stale_after_s=SafetyParams.from_tree(cfg).command_stale_after_s)


class JointController:
    """One PID per joint (``gains[i]``, ``pid_params`` with the joint's effort limit as output
    bounds), the safety checker on ``limits`` and the hold rules of the module docstring."""

    def __init__(self, plant, gains: Sequence[PIDGains], pid_params: PIDParams, limits: SafetyLimits,
                 limit_margin_rad: float):
        p = self.plant = plant
        self.names: list[str] = list(p.joint_names)
        self.pids = [PID(gains[i], replace(pid_params, output_min=-float(p.effort_max[i]),
                                           output_max=float(p.effort_max[i])))
                     for i in range(p.n)]
        self.position_mode = np.ones(p.n, dtype=bool)
        self.q_ref = np.array(p.q_rad, dtype=float)
        self.effort_cmd = np.zeros(p.n)
        self.cmd_t = np.full(p.n, -math.inf)
        self.applied = np.zeros(p.n)
        self.stale_after_s = float(limits.stale_after_s)
        self.limit_margin = float(limit_margin_rad)
        self.checker = SafetyChecker(limits)
        self.checker.reset(q=np.array(p.q_rad, float), tau=np.zeros(p.n))
        self.flags: Counter[str] = Counter()
        self.flagged: set[str] = set()
        self.ticks = 0

    @classmethod
    def from_config(cls, robot: str, cfg: dict, plant) -> "JointController":
        """The controller of ``robot``'s ``plant`` from a merged config: initial gains
        ``pid_tuning.initial_gains`` (``pid_tuning.humanoid_arm.initial_gains`` for the humanoid
        arm), ``pid_tuning.pid``, :func:`joint_safety_limits` and the relay's
        ``joint_limit_margin_deg``."""
        pt = params_type("pid_tuning").from_tree(cfg)
        from ..pid_plants_mujoco import ARM_ROBOT

        ig = (pt.humanoid_arm if robot == ARM_ROBOT else pt).initial_gains
        return cls(plant, [PIDGains(*g) for g in zip(ig.kp, ig.ki, ig.kd)], PIDParams.from_config(pt.pid),
                   joint_safety_limits(robot, cfg, plant), math.radians(pt.relay.joint_limit_margin_deg))

    # --- inputs ---------------------------------------------------------------------------------
    def command(self, names: Sequence[str], position: Sequence[float], effort: Sequence[float],
                now_s: float) -> Optional[tuple[str, str]]:
        """A per-joint command: a finite position selects position mode with that target (clamped
        to the joint's limits), else a finite effort selects effort mode. All or nothing: the
        first problem is returned as ``(cause, detail)`` and nothing changes; None = taken."""
        names, pos, eff = list(names), list(position), list(effort)
        if (pos and len(pos) != len(names)) or (eff and len(eff) != len(names)):
            return "length_mismatch", f"{len(names)} names, {len(pos)} positions, {len(eff)} efforts"
        todo = []
        for k, n in enumerate(names):
            if n not in self.names:
                return "unknown_joint", f"unknown joint {n!r}"
            q = float(pos[k]) if pos else math.nan
            u = float(eff[k]) if eff else math.nan
            if not math.isfinite(q) and not math.isfinite(u):
                return "non_finite", f"{n}: neither a finite position nor a finite effort"
            todo.append((self.names.index(n), q, u))
        p = self.plant
        for i, q, u in todo:
            if math.isfinite(q):
                if not self.position_mode[i]:
                    self.pids[i].reset()
                self.position_mode[i] = True
                self.q_ref[i] = min(max(q, p.q_min[i]), p.q_max[i])
            else:
                self.position_mode[i] = False
                self.effort_cmd[i] = u
            self.cmd_t[i] = now_s
        return None

    def set_joint_gains(self, joint: str, gains) -> tuple[bool, str]:
        """``joint``'s gains = ``[kp, ki, kd]`` from the next period on: ``(True, what runs)``, or
        ``(False, why not)`` with nothing changed."""
        refused = pid_gains_refusal(gains)
        if joint not in self.names:
            return False, f"unknown joint {joint!r}"
        if refused:
            return False, refused
        g = [float(x) for x in gains]
        self._apply_gains(self.names.index(joint), g)
        return True, f"{joint}: kp={g[0]:.6g} ki={g[1]:.6g} kd={g[2]:.6g}"

    def gain_term(self, term: str) -> list[float]:
        """Every joint's gain ``term`` (kp, ki or kd), in the order of the joints."""
        return [getattr(pid.gains, term) for pid in self.pids]

    def set_gain_term(self, term: str, values) -> Optional[str]:
        """Gain ``term`` for every joint (one value per joint): every joint's gains are checked
        first (nothing changes when one is refused: its sentence is returned), then the joints
        whose gains change get theirs."""
        if len(values) != len(self.names):
            return f"{len(values)} values for {len(self.names)} joints ({', '.join(self.names)})"
        new = []
        for i, v in enumerate(values):
            g = {t: getattr(self.pids[i].gains, t) for t in GAIN_TERMS}
            g[term] = v
            refused = pid_gains_refusal([g[t] for t in GAIN_TERMS])
            if refused:
                return f"{self.names[i]}: {refused}"
            new.append([float(g[t]) for t in GAIN_TERMS])
        for i, g in enumerate(new):
            if g != [getattr(self.pids[i].gains, t) for t in GAIN_TERMS]:
                self._apply_gains(i, g)
        return None

    def _apply_gains(self, i: int, g: list) -> None:
        pid = self.pids[i]
        if g[1] == 0.0:
            # no integral action: a controller without memory, as a fresh one (a bumpless
            # transfer would freeze whatever the integral held – e.g. after an unstable rule)
            pid.set_gains(PIDGains(*g), bumpless=False)
            pid.reset()
        else:
            pid.set_gains(PIDGains(*g))          # bumpless: the integral absorbs the change

    def on_system_stop(self, stopped: bool) -> None:
        """Stopped: every joint holds where it is (flag ``system_stop``)."""
        if stopped:
            self.hold_all()
            self._flag("system_stop")

    def rehome(self) -> None:
        """The plant back at its base pose at rest, every joint held there (flag ``rehomed``)."""
        self._reset_plant()
        self._flag("rehomed")

    # --- holds and flags ------------------------------------------------------------------------
    def _flag(self, name: str) -> None:
        self.flags[name] += 1
        self.flagged.add(name)

    def clear_flags(self) -> None:
        self.flagged.clear()

    def hold_all(self) -> None:
        """Every joint held where it is: a position-mode joint keeps its controller's state, an
        effort-mode joint switches to a fresh hold."""
        q = np.array(self.plant.q_rad, dtype=float)
        for i in range(self.plant.n):
            if self.position_mode[i]:
                self.q_ref[i] = q[i]
            else:
                self._hold(i, q[i])

    def _hold(self, i: int, q: float) -> None:
        self.position_mode[i] = True
        self.q_ref[i] = q
        self.pids[i].reset()

    def _reset_plant(self) -> np.ndarray:
        p = self.plant
        p.reset(p.base_pose_rad)
        q = np.array(p.q_rad, dtype=float)
        for i in range(p.n):
            self._hold(i, q[i])
        return q

    # --- control period -------------------------------------------------------------------------
    def step(self, now_s: float, stopped: bool = False) -> np.ndarray:
        """One control period at ``now_s`` (``stopped``: the system stop holds every joint,
        checked every period): the torques the checker let through are applied to the plant
        and returned (also ``applied``)."""
        p = self.plant
        q = np.array(p.q_rad, dtype=float)
        if not np.all(np.isfinite(q)):
            self._flag("sim_diverged")
            q = self._reset_plant()
        if stopped and not self.position_mode.all():
            self.hold_all()
        t = p.t_s
        tau = np.zeros(p.n)
        lo, hi = np.asarray(p.q_min) + self.limit_margin, np.asarray(p.q_max) - self.limit_margin
        for i in range(p.n):
            if not self.position_mode[i]:
                if now_s - self.cmd_t[i] > self.stale_after_s:
                    self._flag("stale")
                    self._hold(i, q[i])
                elif q[i] < lo[i] or q[i] > hi[i]:
                    self._flag("position")
                    self._hold(i, min(max(q[i], lo[i]), hi[i]))
            tau[i] = self.pids[i].update(self.q_ref[i], q[i], t) if self.position_mode[i] else self.effort_cmd[i]
        r = self.checker.check(tau=tau, dt_s=p.dt_s, now_s=now_s, stamp_s=now_s)
        for v in r.violations:
            self._flag(v)
        if r.rejected:
            for i in range(p.n):
                self._hold(i, q[i])
            tau = np.zeros(p.n)
        else:
            tau = np.asarray(r.tau, dtype=float)
        self.applied = tau
        p.step(tau)
        self.ticks += 1
        return tau
