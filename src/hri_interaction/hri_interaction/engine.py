"""The 1 kHz interaction loop with its robot, behind one interface for nodes, scenario and tests.

``make_engine(cfg, q0)`` builds the configured engine (``interaction.engine``, docs/realtime.md):

- ``rt``: ``hri_core.rt.RtLoop`` — the C++ real-time loop (read -> tick -> write, MuJoCo stepped
  through its C API inside the loop; ``start()`` runs it on its own thread with absolute
  deadlines, ``step(n)`` runs n ticks in lockstep without a thread). Falls back to ``python``
  (one WARNING line) when the installed core has no ``rt`` module.
- ``python``: the same C++ tick (``InteractionController``) on ``ArmTorqueSim``, stepped from
  Python by the one lockstep runner (:class:`hri_interaction.sim.LockstepLoop`): simulated
  clocks, the topic driver (the arm model at the received joint state, never stepped) and cores
  without ``rt``. ``start()`` is refused (a Python timer is not a real-time loop).

Both take validated inputs only: the reference (finite rigid transform, step <=
``limits.max_pose_step_m`` from the last accepted one; ``None`` for a message that did not
convert), the mode (impedance | admittance | hybrid; settle bound for ``switch.settle_s``), the
impedance gains (SPD within ``gain_limits``, blended over ``blend_s``); a bad input is rejected,
counted in ``rejected`` and logged once, the last value is held. ``hold(True, reason)`` is the
stop input: the reference and the admittance freeze at the measured EE pose (gravity
compensated, zero reference velocity) and references / mode switches are refused
(``reference_during_stop``, ``mode_switch_refused``) until ``hold(False)``. ``state()`` is one
snapshot dict (keys as ``hri_core.rt``'s state()); :func:`diagnostics` turns it into the
published interaction state.
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Optional, Sequence

import numpy as np

from hri_interaction.core.admittance import AdmittanceParams
from hri_interaction.core.controller import MODES, STOP_PREFIX, InteractionParams, reference_fault
from hri_interaction.core.spd import GainError, gains_from_vector, validate_impedance_gains
from hri_interaction import parameters_gen
from hri_runtime.parameters_gen import JointsParams, RobotParams

log = logging.getLogger("hri_interaction.engine")
ENGINES = ("rt", "python")


def rt_available() -> bool:
    try:
        from hri_core import rt  # noqa: F401
    except ImportError:
        return False
    return hasattr(rt, "RtLoop")


def safety_checker(cfg: dict):
    """An ``hri_core.safety.SafetyChecker`` with the robot config's limits (``arm_limits``)."""
    from hri_core.safety import SafetyChecker, SafetyLimits
    from hri_core.safety import arm_limits

    return SafetyChecker(SafetyLimits(**arm_limits(cfg).as_kwargs()))


def joint_state_indices(names: Sequence[str], joint_names: Sequence[str]) -> Optional[list]:
    """Index of each of ``joint_names`` in a JointState's ``names`` (None if one is missing)."""
    names = list(names)
    try:
        return [names.index(n) for n in joint_names]
    except ValueError:
        return None


def diagnostics(s: dict, dt: float) -> dict:
    """The published interaction state (``hri_interfaces/msg/InteractionState`` fields) of an
    engine ``state()`` snapshot; ``period_us`` only when the engine measures its periods (rt)."""
    d = {"mode": s["mode"], "time_s": float(s["time_s"]), "frozen": s.get("frozen_reason"),
         "flags": list(s["flags"]) + [f"safety_{f}" for f in s.get("safety_flags", [])],
         "rejected": dict(s.get("rejected", {})), "events": dict(s.get("events", {})),
         "lambda": np.asarray(s["lam"], float).tolist(), "energy_j": float(s["energy_j"]),
         "energy_violations": int(s["energy_violations"]), "pc_saturations": int(s["pc_saturations"]),
         "stiffness_diag": np.diag(np.asarray(s["K"], float)).tolist(), "ticks": int(s["ticks"])}
    pe = s.get("period_error_us")
    if pe:
        d["period_us"] = {k: 1e6 * dt + pe.get(k, float("nan")) for k in ("p50", "p99", "max")}
        d["period_us"]["missed"] = int(s.get("missed", 0))
    return d


def admittance_gains(params: InteractionParams, M, D, K) -> AdmittanceParams:
    """``interaction.admittance`` with the gains M, D, K (6 diagonal values or 6x6 each) and the
    other keys of ``params``: checked as the config's are (the declaration, then M and D SPD and
    K SPSD, :func:`hri_interaction.core.spd.validate_spd`); GainError saying why otherwise."""
    try:
        return AdmittanceParams.from_gains(mass=M, damping=D, stiffness=K,
                                           dexp_dot_step_s=params.admittance.dexp_dot_step_s)
    except GainError:
        raise
    except ValueError as exc:            # the declaration's checks (ConfigError): shape, bounds
        raise GainError(str(exc)) from None


class PythonEngine:
    """``ArmTorqueSim`` + ``InteractionController`` stepped from Python (lockstep only).
    ``driver="topic"``: the arm is the robot model at the state given to :meth:`set_joint_state`
    (never stepped), the wrench comes from :meth:`set_wrench`; no tick before the first state."""

    kind = "python"

    def __init__(self, cfg: dict, q0: Sequence[float], params: Optional[InteractionParams] = None,
                 safety=None, driver: str = "sim"):
        from hri_interaction.sim import LockstepLoop

        if driver not in ("sim", "topic"):
            raise ValueError(f"driver must be sim or topic, got {driver!r}")
        self.params = params or InteractionParams.from_tree(cfg)
        joints = JointsParams.from_tree(cfg)
        self.joint_names = list(joints.names)
        self.driver = driver
        self.loop = LockstepLoop(self.params, q0, self.params.ee_site, safety=safety,
                                 robot=RobotParams.from_tree(cfg).model,
                                 joint_names=self.joint_names, logger=log, step_arm=driver == "sim",
                                 torque_max_nm=joints.torque_max_nm,
                                 wrench_source="applied" if driver == "sim" else "input")
        self.sim, self.ctrl, self.dt = self.loop.sim, self.loop.ctrl, self.loop.dt
        self.model = self.sim.model
        self.ready = driver == "sim"        # topic driver: a joint state has arrived
        self.ticks = 0

    mode = property(lambda self: self.ctrl.mode, doc="the active mode")
    held = property(lambda self: self.ctrl.held, doc="the stop input holds")

    # ------------------------------------------------------------------ inputs
    def set_target(self, T) -> bool:
        return self.ctrl.set_reference(T)

    def set_mode(self, mode: str) -> bool:
        return self.ctrl.request_mode(mode, self.sim.state())

    def set_gains(self, K, D) -> bool:
        return self.ctrl.set_impedance_gains(K, D)

    def set_gain_vector(self, values) -> bool:
        return self.ctrl.set_gain_vector(values)

    def set_admittance(self, M, D, K) -> bool:
        """Admittance M, D, K (:func:`admittance_gains`), from the next tick on (they act on λ̈
        only: the pose stays continuous); a bad one is rejected and counted."""
        try:
            a = admittance_gains(self.params, M, D, K)
        except GainError as exc:
            return self.ctrl.reject_input(exc.cause, str(exc))
        return self.ctrl.set_admittance_params(a)

    @property
    def last_rejection(self) -> Optional[tuple]:
        """``(cause, why)`` of the last rejected input (None: none yet)."""
        return getattr(self.ctrl, "last_rejection", None)

    def set_wrench(self, wrench_body) -> bool:
        return self.ctrl.set_wrench(wrench_body)

    def set_push(self, force_world, torque_world=(0.0, 0.0, 0.0)) -> None:
        self.sim.push(force_world, torque_world)

    def set_joint_state(self, names: Sequence[str], position, velocity=()) -> bool:
        """A measured JointState (topic driver): the configured joints by name, velocity optional
        (zero); a missing joint or a short array is rejected (``joint_state_invalid``)."""
        idx = joint_state_indices(names, self.joint_names)
        try:
            if idx is None:
                raise IndexError
            q = np.asarray(position, float)[idx]
            dq = np.asarray(velocity, float)[idx] if len(velocity) else np.zeros(len(idx))
        except IndexError:
            return self.ctrl.reject_input("joint_state_invalid", "joint missing or arrays too short")
        self.sim.set_joint_state(q, dq)
        self.ready = True
        return True

    def hold(self, on: bool, reason: str = "stop") -> None:
        """The stop input (:meth:`InteractionController.hold` at the measured EE pose)."""
        self.ctrl.hold(on, reason, self.sim.ee_pose())

    # ------------------------------------------------------------------ stepping
    def step(self, n: int = 1):
        """``n`` lockstep ticks (none before the first joint state with the topic driver);
        returns the last tick's result (None if none ran)."""
        if not self.ready:
            return None
        for _ in range(int(n)):
            self.loop.lockstep.step()
        self.ticks += int(n)
        return self.loop.last

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
            "ticks": self.ticks, "time_s": c.time_s,
            "q": d.qpos[sim.qadr].copy(), "dq": d.qvel[sim.vadr].copy(), "tau": np.asarray(c.last_tau).copy(),
            "world_T_ee": sim.ee_pose(), "world_T_ref": np.asarray(c.last_ref).copy(),
            "world_T_d": np.asarray(c.world_T_d).copy(), "wrench_body": sim.wrench_body(),
            "lam": np.asarray(c.admittance.lam).copy(), "lam_dot": np.asarray(c.admittance.lam_dot).copy(),
            "K": np.asarray(c.K).copy(), "D": np.asarray(c.D).copy(),
            "energy_j": float(c.filter.energy_j), "energy_violations": int(c.filter.violations),
            "pc_saturations": int(c.filter.saturations),
            "flags": [f for f in flags if not f.startswith("safety_")],
            "safety_flags": [f[7:] for f in flags if f.startswith("safety_")],
            "mode": c.mode, "frozen": c.frozen_reason is not None, "frozen_reason": c.frozen_reason,
            "held": c.held, "missed": 0, "period_error_us": None, "tick_cost_us": None, "running": False,
            "rejected": dict(c.rejected), "events": dict(c.events),
        }


class _Inputs:
    """The controller's input rules in front of the C++ loop (which does not repeat them):
    reference, mode and gain validation, the stop hold, rejection counters."""

    def __init__(self, params: InteractionParams, world_T_d: np.ndarray):
        self.p = params
        self.rejected: Counter = Counter()
        self.target = np.array(world_T_d, float)
        self.mode = params.mode
        self.held = False
        self.hold_reason = ""

    def reject(self, cause: str, why: str) -> bool:
        self.rejected[cause] += 1
        self.last_rejection = (cause, why)
        if self.rejected[cause] in (1, 10, 100, 1000):
            log.warning("interaction: rejected %s (%s), count %d", cause, why, self.rejected[cause])
        return False

    def reference(self, T) -> Optional[np.ndarray]:
        if self.held:
            self.reject("reference_during_stop", "system stop: reference ignored")
            return None
        T = np.asarray(T if T is not None else np.nan, float)
        fault = reference_fault(T, self.target, self.p.limits.max_pose_step_m)
        if fault is not None:
            self.reject(*fault)
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
            return validate_impedance_gains(K, D, self.p.gain_limits)
        except GainError as exc:
            self.reject(exc.cause, str(exc))
            return None


class RtEngine:
    """``hri_core.rt.RtLoop`` with Python-side input validation (see the module doc)."""

    kind = "rt"

    def __init__(self, cfg: dict, q0: Sequence[float], params: Optional[InteractionParams] = None,
                 safety=None):
        import mujoco
        from hri_core import rt
        from hri_interaction.core.controller import loop_config, tick_params
        from hri_sim.models import load_arm

        self.params = params or InteractionParams.from_tree(cfg)
        joints = JointsParams.from_tree(cfg)
        self.joint_names = list(joints.names)
        robot = RobotParams.from_tree(cfg).model
        self.model = load_arm(robot, actuation="torque", timestep_s=1.0 / self.params.rate_hz)
        self.data = mujoco.MjData(self.model)
        jids = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joint_names]
        self.data.qpos[[self.model.jnt_qposadr[j] for j in jids]] = np.asarray(q0, float)
        mujoco.mj_forward(self.model, self.data)
        self.robot = rt.MujocoRobot(self.model, self.data, joint_names=self.joint_names,
                                    ee_site=self.params.ee_site)
        self.loop = rt.RtLoop(tick_params(self.params, len(self.joint_names),
                                          torque_max_nm=joints.torque_max_nm),
                              loop_config(self.params),
                              self.robot, world_T_d=None, safety=safety)
        self.dt = 1.0 / self.params.rate_hz
        self.inputs = _Inputs(self.params, self.loop.state()["world_T_ee"])

    mode = property(lambda self: self.inputs.mode, doc="the active mode")
    held = property(lambda self: self.inputs.held, doc="the stop input holds")

    def set_mode(self, mode: str) -> bool:
        if not self.inputs.mode_ok(mode):
            return False
        if mode != self.inputs.mode:
            log.info("interaction: mode %s -> %s", self.inputs.mode, mode)
            self.loop.set_mode(mode, self.params.switch.settle_s)
            self.inputs.mode = mode
        return True

    def set_gains(self, K, D) -> bool:
        g = self.inputs.gains(K, D)
        if g is None:
            return False
        self.loop.set_gains(g[0], g[1], self.params.blend_s)
        return True

    def set_gain_vector(self, values) -> bool:
        try:
            K, D = gains_from_vector(values)
        except GainError as exc:
            return self.inputs.reject(exc.cause, str(exc))
        return self.set_gains(K, D)

    def set_admittance(self, M, D, K) -> bool:
        """As :meth:`PythonEngine.set_admittance`: the loop takes them at its next tick."""
        try:
            a = admittance_gains(self.params, M, D, K)
        except GainError as exc:
            return self.inputs.reject(exc.cause, str(exc))
        self.loop.set_admittance(a.mass, a.damping, a.stiffness)
        return True

    @property
    def last_rejection(self) -> Optional[tuple]:
        """``(cause, why)`` of the last rejected input (None: none yet)."""
        return getattr(self.inputs, "last_rejection", None)

    def set_push(self, force_world, torque_world=(0.0, 0.0, 0.0)) -> None:
        self.loop.set_push(np.asarray(force_world, float), np.asarray(torque_world, float))

    def hold(self, on: bool, reason: str = "stop") -> None:
        """Stop: ``RtLoop.hold`` — at its next tick the loop re-anchors reference and target at
        the measured EE pose, zeroes the admittance state and freezes; release keeps the anchor,
        so nothing jumps back."""
        if bool(on) == self.inputs.held:
            return
        (log.warning if on else log.info)("interaction: %s (%s)", "hold" if on else "hold released", reason)
        self.inputs.held = bool(on)
        self.inputs.hold_reason = reason
        if on:
            self.inputs.target = np.asarray(self.loop.state()["world_T_ee"], float)
        self.loop.hold(bool(on))

    def set_target(self, T) -> bool:
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
        s["held"] = self.inputs.held
        s["frozen_reason"] = ((f"{STOP_PREFIX}: {self.inputs.hold_reason}" if self.inputs.held else "safety")
                              if s["frozen"] else None)
        return s


def make_engine(cfg: dict, q0: Sequence[float], engine: Optional[str] = None, safety="config",
                driver: str = "sim"):
    """The configured engine (``interaction.engine``, or ``engine``); ``safety="config"``: an
    ``hri_core.safety.SafetyChecker`` with the config limits (None: only the torque clamp).
    ``driver="topic"`` is the python engine's (the rt loop steps its simulated arm itself)."""
    kind = engine or parameters_gen.InteractionParams.from_tree(cfg).engine
    if kind not in ENGINES:
        raise ValueError(f"interaction.engine must be one of {ENGINES}, got {kind!r}")
    if safety == "config":
        safety = safety_checker(cfg)
    if kind == "rt" and driver == "sim":
        if rt_available():
            return RtEngine(cfg, q0, safety=safety)
        log.warning("interaction.engine rt: the installed hri_core has no rt module; "
                    "using the python engine (lockstep only)")
    return PythonEngine(cfg, q0, safety=safety, driver=driver)
