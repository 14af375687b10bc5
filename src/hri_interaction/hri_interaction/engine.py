"""The 1 kHz interaction loop with its robot, behind one interface for nodes, scenario and tests.

``make_engine(cfg, q0)`` builds the configured engine (``interaction.engine``):

- ``rt``: ``hri_core.rt.RtLoop`` — the C++ real-time loop (read -> tick -> write, MuJoCo stepped
  through its C API inside the loop; ``start()`` runs it on its own thread with absolute
  deadlines, ``step(n)`` runs n ticks in lockstep without a thread). Falls back to ``python``
  (one WARNING line) when the installed core has no ``rt`` module.
- ``python``: the same controller (``InteractionController``: the C++ tick per call, or the
  Python oracle) on ``ArmTorqueSim``, stepped from Python: the lockstep fallback and the test
  oracle. ``start()`` is refused (a Python timer is not a real-time loop).

Both take validated inputs only: the reference (finite rigid transform, step <=
``limits.max_pose_step_m`` from the last accepted one), the mode (impedance | admittance |
hybrid; settle bound for ``switch.settle_s``), the impedance gains (SPD, blended over
``blend_s``); a bad input is rejected, counted in ``rejected`` and logged once, the last value is
held. ``hold(True)`` is the stop input: the reference and the admittance freeze where they are
(the governed reference: the arm holds its pose, zero reference velocity, gravity compensated)
until ``hold(False)``. ``state()`` is one snapshot dict (keys as ``hri_core.rt``'s state()).
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Optional, Sequence

import numpy as np

from hri_interaction.core.controller import (MODES, InteractionController, InteractionParams,
                                             _is_rigid)
from hri_interaction.core.spd import GainError, validate_impedance_gains

log = logging.getLogger("hri_interaction.engine")
ENGINES = ("rt", "python")


def rt_available() -> bool:
    try:
        from hri_core import rt  # noqa: F401
    except ImportError:
        return False
    return hasattr(rt, "RtLoop")


class _Inputs:
    """Validation + rejection counters shared by both engines (the controller's input rules)."""

    def __init__(self, params: InteractionParams, world_T_d: np.ndarray):
        self.p = params
        self.rejected: Counter = Counter()
        self.target = np.array(world_T_d, float)
        self.mode = params.mode
        self.held = False

    def reject(self, cause: str, why: str) -> bool:
        self.rejected[cause] += 1
        if self.rejected[cause] in (1, 10, 100, 1000):
            log.warning("interaction: rejected %s (%s), count %d", cause, why, self.rejected[cause])
        return False

    def reference(self, T) -> Optional[np.ndarray]:
        T = np.asarray(T, float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            self.reject("reference_nonfinite", "non-finite or malformed pose; holding the last")
            return None
        if not _is_rigid(T):
            self.reject("reference_not_rigid", "rotation not orthonormal; holding the last")
            return None
        step = float(np.linalg.norm(T[:3, 3] - self.target[:3, 3]))
        if step > self.p.max_pose_step_m:
            self.reject("reference_jump", f"jump {step:.3f} m > {self.p.max_pose_step_m} m")
            return None
        self.target = T.copy()
        return self.target

    def mode_ok(self, mode: str) -> bool:
        if mode not in MODES:
            return self.reject("mode_invalid", f"unknown mode {mode!r}")
        if self.held:
            return self.reject("mode_switch_refused", "held (stop)")
        return True

    def gains(self, K, D):
        try:
            return validate_impedance_gains(K, D, getattr(self.p, "gain_limits", None))
        except GainError as exc:
            self.reject(getattr(exc, "cause", "gains_invalid"), str(exc))
            return None


class PythonEngine:
    """``ArmTorqueSim`` + ``InteractionController`` stepped from Python (lockstep only)."""

    kind = "python"

    def __init__(self, cfg: dict, q0: Sequence[float], params: Optional[InteractionParams] = None,
                 safety=None, oracle: bool = False):
        """``oracle``: the Python tick (``PyInteractionController``) instead of the C++ one."""
        from hri_interaction.core.controller import PyInteractionController
        from hri_interaction.sim import ArmTorqueSim

        sec = cfg["interaction"]
        self.params = params or InteractionParams.from_config(sec, cfg["joints"]["torque_max_nm"])
        self.joint_names = list(cfg["joints"]["names"])
        self.sim = ArmTorqueSim(cfg["robot"]["model"], self.params.rate_hz, q0, sec["ee_site"],
                                self.joint_names)
        self.dt = 1.0 / self.params.rate_hz
        cls = PyInteractionController if oracle else InteractionController
        self.ctrl = cls(self.params, self.sim.ee_pose(), self.sim.n, logger=log, safety=safety)
        self.inputs = _Inputs(self.params, self.sim.ee_pose())
        self.ticks = 0
        self._last = None

    @property
    def model(self):
        return self.sim.model

    # ------------------------------------------------------------------ inputs
    def set_target(self, T) -> bool:
        if self.inputs.held:
            return self.inputs.reject("reference_held", "stopped: references ignored until released")
        T = self.inputs.reference(T)
        if T is None:
            return False
        self.ctrl.world_T_target = T
        return True

    def set_mode(self, mode: str) -> bool:
        if not self.inputs.mode_ok(mode):
            return False
        ok = self.ctrl.request_mode(mode, self.sim.state())
        if ok:
            self.inputs.mode = mode
        return ok

    def set_gains(self, K, D) -> bool:
        return self.ctrl.set_impedance_gains(K, D)      # the controller's one check

    def set_push(self, force_world, torque_world=(0.0, 0.0, 0.0)) -> None:
        self.sim.push(force_world, torque_world)

    def hold(self, on: bool, reason: str = "stop") -> None:
        """Stop: re-anchor reference and target at the measured EE pose (C++ tick: its
        ``hold_at``, which also zeroes the admittance state), frozen; release keeps that anchor."""
        if bool(on) == self.inputs.held:
            return
        self.inputs.held = bool(on)
        if on:
            T = self.sim.ee_pose()
            self.inputs.target = T.copy()
            if hasattr(self.ctrl, "_cx"):
                self.ctrl._cx.hold_at(T)
                self.ctrl._target = T.copy()
            else:
                self.ctrl.world_T_target = T
                self.ctrl.world_T_d = T.copy()
                self.ctrl._t_v = self.ctrl._t_w = self.ctrl._v_arr = self.ctrl._w_arr = -1.0
            self.ctrl.freeze(reason)
        else:
            self.ctrl.release()

    # ------------------------------------------------------------------ stepping
    def step(self, n: int = 1) -> None:
        for _ in range(int(n)):
            st = self.sim.state()
            self.ctrl.set_wrench(self.sim.wrench_body())
            self._last = self.ctrl.tick(st, self.dt)
            self.sim.step(self._last.tau)
            self.ticks += 1

    def start(self) -> None:
        raise RuntimeError("the python engine runs in lockstep only (step); use interaction.engine rt")

    def stop(self) -> None:
        pass

    running = False

    def ee_pose(self) -> np.ndarray:
        return self.sim.ee_pose()

    def state(self) -> dict:
        c, d, sim = self.ctrl, self.sim.data, self.sim
        flags = sorted(c.last_flags)
        return {
            "ticks": self.ticks, "time_s": sim.time_s,
            "q": d.qpos[sim.qadr].copy(), "dq": d.qvel[sim.vadr].copy(), "tau": np.asarray(c.last_tau).copy(),
            "world_T_ee": sim.ee_pose(), "world_T_ref": np.asarray(c.last_ref).copy(),
            "world_T_d": np.asarray(c.world_T_d).copy(), "wrench_body": sim.wrench_body(),
            "lam": np.asarray(c.admittance.lam).copy(), "lam_dot": np.asarray(c.admittance.lam_dot).copy(),
            "energy_j": float(c.filter.energy_j), "energy_violations": int(c.filter.violations),
            "pc_saturations": int(c.filter.saturations),
            "flags": [f for f in flags if not f.startswith("safety_")],
            "safety_flags": [f[7:] for f in flags if f.startswith("safety_")],
            "mode": c.mode, "frozen": c.frozen_reason is not None,
            "missed": 0, "period_error_us": None, "tick_cost_us": None, "running": False,
            "rejected": dict(self.inputs.rejected + c.rejected), "events": dict(c.events),
        }


class RtEngine:
    """``hri_core.rt.RtLoop`` with Python-side input validation (see the module doc)."""

    kind = "rt"

    def __init__(self, cfg: dict, q0: Sequence[float], params: Optional[InteractionParams] = None,
                 safety=None):
        import mujoco
        from hri_core import rt
        from hri_interaction.core.controller import loop_config, tick_params
        from hri_sim.models import load_arm

        sec = cfg["interaction"]
        self.params = params or InteractionParams.from_config(sec, cfg["joints"]["torque_max_nm"])
        self.joint_names = list(cfg["joints"]["names"])
        robot = cfg["robot"]["model"]
        kw = {"add_ft_sensor": True} if robot == "fr3" else {}
        self._model = load_arm(robot, actuation="torque", timestep_s=1.0 / self.params.rate_hz, **kw)
        self._data = mujoco.MjData(self._model)
        jids = [mujoco.mj_name2id(self._model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joint_names]
        self._data.qpos[[self._model.jnt_qposadr[j] for j in jids]] = np.asarray(q0, float)
        mujoco.mj_forward(self._model, self._data)
        self.robot = rt.MujocoRobot(self._model, self._data, joint_names=self.joint_names,
                                    ee_site=sec["ee_site"])
        self.loop = rt.RtLoop(tick_params(self.params, len(self.joint_names)), loop_config(sec),
                              self.robot, world_T_d=None, safety=safety)
        self.dt = 1.0 / self.params.rate_hz
        self.inputs = _Inputs(self.params, self.loop.state()["world_T_ee"])

    @property
    def model(self):
        return self._model

    def set_mode(self, mode: str) -> bool:
        if not self.inputs.mode_ok(mode):
            return False
        if mode != self.inputs.mode:
            log.info("interaction: mode %s -> %s", self.inputs.mode, mode)
            self.loop.set_mode(mode, self.params.settle_s)
            self.inputs.mode = mode
        return True

    def set_gains(self, K, D) -> bool:
        g = self.inputs.gains(K, D)
        if g is None:
            return False
        self.loop.set_gains(g[0], g[1], self.params.blend_s)
        return True

    def set_push(self, force_world, torque_world=(0.0, 0.0, 0.0)) -> None:
        self.loop.set_push(np.asarray(force_world, float), np.asarray(torque_world, float))

    def hold(self, on: bool, reason: str = "stop") -> None:
        """Stop: ``RtLoop.hold`` — at its next tick the loop re-anchors reference and target at
        the measured EE pose, zeroes the admittance state and freezes; release keeps the anchor,
        so nothing jumps back."""
        if bool(on) == self.inputs.held:
            return
        log.warning("interaction: %s (%s)", "hold" if on else "hold released", reason)
        self.inputs.held = bool(on)
        if on:
            self.inputs.target = np.asarray(self.loop.state()["world_T_ee"], float)
        self.loop.hold(bool(on))

    def set_target(self, T) -> bool:
        if self.inputs.held:
            return self.inputs.reject("reference_held", "stopped: references ignored until released")
        T = self.inputs.reference(T)
        return T is not None and bool(self.loop.set_target(T) is not False)

    def step(self, n: int = 1) -> None:
        self.loop.step(int(n))

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()

    @property
    def running(self) -> bool:
        return bool(self.loop.running)

    def ee_pose(self) -> np.ndarray:
        return np.asarray(self.loop.state()["world_T_ee"])

    def state(self) -> dict:
        s = dict(self.loop.state())
        s["rejected"] = dict(self.inputs.rejected)
        s.setdefault("events", dict(s.get("flag_ticks", {})))
        return s


def make_engine(cfg: dict, q0: Sequence[float], engine: Optional[str] = None, safety="config",
                oracle: bool = False):
    """The configured engine (``interaction.engine``, or ``engine``); ``safety="config"``: an
    ``hri_core.safety.SafetyChecker`` with the config limits (None: only the torque clamp)."""
    kind = engine or cfg["interaction"]["engine"]
    if kind == "oracle":      # tests: the Python tick (PyInteractionController) on the Python engine
        kind, oracle = "python", True
    if kind not in ENGINES:
        raise ValueError(f"interaction.engine must be one of {ENGINES}, got {kind!r}")
    if safety == "config":
        from hri_core.safety import SafetyChecker, limits_from_config

        safety = SafetyChecker(limits_from_config(cfg))
    if kind == "rt":
        if rt_available():
            return RtEngine(cfg, q0, safety=safety)
        log.warning("interaction.engine rt: the installed hri_core has no rt module; "
                    "using the python engine (lockstep only)")
    return PythonEngine(cfg, q0, safety=safety, oracle=oracle)
