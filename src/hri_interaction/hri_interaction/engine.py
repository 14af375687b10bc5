"""The 1 kHz interaction loop with its robot, behind one interface for nodes, scenario and tests.

``make_engine(cfg, q0)`` builds the configured engine (``interaction.engine``, docs/realtime.md;
the topic driver takes the python engine):

- ``rt``: ``hri_core.rt.RtLoop`` — the C++ real-time loop (read -> tick -> write, MuJoCo stepped
  through its C API inside the loop) on ``ArmSim`` (mode torque). On a real clock ``start()``
  runs it on its own thread with absolute deadlines; on a simulated clock (``lockstep``) the
  caller's clock steps it, ``step(n)`` = n ticks without a thread (the node's 1 ms timer, stepped
  by the runtime's lockstep runner), and ``state()`` reports the arm after the step. Falls back
  to ``python`` (one WARNING line) when the installed core has no ``rt`` module.
- ``python``: the same C++ tick (``InteractionController``) on ``ArmSim`` (mode torque), one
  :meth:`PythonEngine.tick` per ``step(1)`` of its caller: the topic driver
  (the arm model at the received joint state, never stepped), ``interaction.engine: python``
  and cores without ``rt``. ``start()`` is refused (a Python timer is not a real-time loop).

Both check every input by the one set of input rules (:mod:`hri_interaction.core.inputs`): the
reference, the mode (settle bound for ``switch.settle_s``), the impedance gains (blended over
``blend_s``) and the admittance gains; a bad input is rejected, counted in ``rejected`` and
logged, the last value is held. The gains can also be set one diagonal at a time
(:meth:`update_impedance`, :meth:`update_admittance`: the live parameters), combined with the
running ones. The torque law switches at run time (:meth:`set_law`: the C++ tick's rule, applied
at a tick boundary, the command blended over ``switch.law_blend_s``; docs/realtime.md "Switching
the torque law"). ``hold(True, reason)`` is the
stop input: the reference and the admittance freeze at the measured EE pose (gravity
compensated, zero reference velocity) and references / mode switches are refused
(``reference_during_stop``, ``mode_switch_refused``) until ``hold(False)``. ``state()`` is one
snapshot dict (keys as ``hri_core.rt``'s state()); :func:`diagnostics` turns it into the
published interaction state.
"""
from __future__ import annotations

import logging
from typing import Optional, Sequence

import numpy as np

from hri_interaction.core.controller import STOP_PREFIX, InteractionParams
from hri_interaction.core.inputs import InputRules
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


def diagnostics(s: dict, dt: float, periods: Optional[dict] = None) -> dict:
    """The published interaction state (``hri_interfaces/msg/InteractionState`` fields) of an
    engine ``state()`` snapshot; ``period_us``: the engine's own period statistics (rt), else
    ``periods`` (µs ``p50``, ``p99``, ``max``, ``missed``: the caller's timer,
    :class:`hri_interaction.core.periods.PeriodStats`), else none."""
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
    elif periods:
        d["period_us"] = dict(periods)
    return d


class _Engine:
    """What both engines share: the running gains (``impedance``, ``admittance``: the values a
    set of one diagonal combines with), the gain inputs and ``last_rejection``."""

    inputs: InputRules

    def _init_gains(self) -> None:
        p = self.params
        self.impedance = {"stiffness": p.impedance.stiffness, "damping": p.impedance.damping}
        self.admittance = {"mass": p.admittance.mass, "damping": p.admittance.damping,
                           "stiffness": p.admittance.stiffness}

    @property
    def last_rejection(self) -> Optional[tuple]:
        """``(cause, why)`` of the last rejected input (None: none yet)."""
        return self.inputs.last_rejection

    def refusal(self) -> str:
        """The last rejection as one sentence: ``why (cause)``."""
        cause, why = self.last_rejection or ("refused", "")
        return f"{why} ({cause})"

    def set_gains(self, K, D) -> bool:
        """Impedance K, D (6 diagonal values or 6x6 each), blended in over ``blend_s``."""
        if not self._set_gains(K, D):
            return False
        self.impedance = {"stiffness": np.asarray(K, float), "damping": np.asarray(D, float)}
        return True

    def set_gain_vector(self, values) -> bool:
        """Impedance gains as on ``interaction.topics.gains``: [K diag (6), D diag (6)]."""
        g = self.inputs.gain_vector(values)
        return g is not None and self.set_gains(*g)

    def set_admittance(self, M, D, K) -> bool:
        """Admittance M, D, K (:meth:`InputRules.admittance`), from the next tick on (they act on
        λ̈ only: the pose stays continuous); a bad one is rejected and counted."""
        a = self.inputs.admittance(M, D, K)
        if a is None or not self._set_admittance(a):
            return False
        self.admittance = {"mass": np.asarray(M, float), "damping": np.asarray(D, float),
                           "stiffness": np.asarray(K, float)}
        return True

    def update_impedance(self, **gain) -> Optional[str]:
        """Set ``stiffness`` and/or ``damping`` (6 values: a diagonal), the other as it runs;
        None when taken, else the refusal sentence."""
        new = {**self.impedance, **gain}
        return None if self.set_gains(new["stiffness"], new["damping"]) else self.refusal()

    def update_admittance(self, **gain) -> Optional[str]:
        """As :meth:`update_impedance` for ``mass``, ``damping``, ``stiffness``."""
        new = {**self.admittance, **gain}
        return None if self.set_admittance(new["mass"], new["damping"], new["stiffness"]) else self.refusal()


class PythonEngine(_Engine):
    """``ArmSim`` (mode torque) + ``InteractionController`` stepped from Python (lockstep only):
    one controller tick per physics step (:meth:`tick`: read the arm, tick, the arm applies the
    torque for one step of ``1 / interaction.rate_hz``). ``driver="topic"``: the arm is the robot
    model at the state given to :meth:`set_joint_state` (never stepped), the wrench comes from
    :meth:`set_wrench`; no tick before the first state. ``law``: the start law (None:
    ``interaction.law``). ``wrench_source``: ``"applied"`` (driver sim) feeds the sim's applied
    wrench to the controller each tick (an ideal, tared wrist F/T sensor); anything else leaves
    ``ctrl.set_wrench`` to the caller. ``ctrl`` (the controller) may be replaced before the
    first tick (a test's oracle)."""

    kind = "python"
    lockstep = True

    def __init__(self, cfg: dict, q0: Sequence[float], params: Optional[InteractionParams] = None,
                 safety=None, driver: str = "sim", law: Optional[str] = None):
        from hri_interaction.core.controller import InteractionController
        from hri_sim.arm_sim import ArmSim

        if driver not in ("sim", "topic"):
            raise ValueError(f"driver must be sim or topic, got {driver!r}")
        self.params = params or InteractionParams.from_tree(cfg)
        joints = JointsParams.from_tree(cfg)
        self.joint_names = list(joints.names)
        self.driver = driver
        self.dt = 1.0 / self.params.rate_hz
        self.sim = ArmSim.of_robot(RobotParams.from_tree(cfg).model, q0, "torque", joint_names=self.joint_names,
                                   timestep_s=self.dt, ee_site=self.params.ee_site)
        self.ctrl = InteractionController(self.params, self.sim.ee_pose(), self.sim.n, law=law, logger=log,
                                          safety=safety, torque_max_nm=joints.torque_max_nm)
        self.wrench_source = "applied" if driver == "sim" else "input"
        self._init_gains()
        self.model = self.sim.model
        self.ready = driver == "sim"        # topic driver: a joint state has arrived
        self.ticks = 0
        self.last = None                    # the last tick's result

    inputs = property(lambda self: self.ctrl.inputs, doc="the controller's input rules")

    mode = property(lambda self: self.ctrl.mode, doc="the active mode")
    held = property(lambda self: self.ctrl.held, doc="the stop input holds")

    # ------------------------------------------------------------------ inputs
    def set_target(self, T) -> bool:
        return self.ctrl.set_reference(T)

    def set_mode(self, mode: str) -> bool:
        return self.ctrl.request_mode(mode, self.sim.state())

    law = property(lambda self: self.ctrl.law, doc="the active torque law")

    def set_law(self, law: str) -> bool:
        """The torque law from the next tick on (:meth:`InteractionController.set_law`)."""
        return self.ctrl.set_law(law)

    def _set_gains(self, K, D) -> bool:
        return self.ctrl.set_impedance_gains(K, D)

    def _set_admittance(self, a) -> bool:
        return self.ctrl.set_admittance_params(a)

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
    def tick(self):
        """Read the arm, one controller tick, the arm applies its torque for one step (driver
        sim); returns the tick's result (``tau``, ``flags``, ...)."""
        st = self.sim.state()
        if self.wrench_source == "applied":
            self.ctrl.set_wrench(st.wrench_body)
        res = self.ctrl.tick(st, self.dt)
        if self.driver == "sim":
            self.sim.step(res.tau)
        self.last = res
        self.ticks += 1
        return res

    def step(self, n: int = 1, each=None) -> Optional[np.ndarray]:
        """``n`` lockstep ticks (none before the first joint state with the topic driver),
        ``each(engine, result)`` after every one; returns the last tick's command (None if none ran)."""
        if not self.ready:
            return None
        for _ in range(int(n)):         # the caller's clock is the lockstep: the node's 1 ms timer
            res = self.tick()
            if each is not None:
                each(self, res)
        return None if self.last is None else self.last.tau

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
            "mode": c.mode, "law": c.law, "law_blending": c.law_blending, "law_refusals": 0,
            "frozen": c.frozen_reason is not None, "frozen_reason": c.frozen_reason,
            "held": c.held, "missed": 0, "period_error_us": None, "tick_cost_us": None, "running": False,
            "rejected": dict(c.rejected), "events": dict(c.events),
        }


class RtEngine(_Engine):
    """``hri_core.rt.RtLoop`` with Python-side input validation (see the module doc) on the arm
    ``self.sim`` (``hri_sim.arm_sim.ArmSim``, mode torque: its C++ ``MujocoRobot``).
    ``lockstep``: no thread; the caller's clock steps it (:meth:`step`, a node's timer on a
    simulated clock) and :meth:`state` / :meth:`ee_pose` report the arm after the step
    (``RtLoop.state_after_step``), as the python engine does."""

    kind = "rt"

    def __init__(self, cfg: dict, q0: Sequence[float], params: Optional[InteractionParams] = None,
                 safety=None, lockstep: bool = False):
        from hri_core import rt
        from hri_interaction.core.controller import loop_config, tick_params
        from hri_sim.arm_sim import ArmSim

        self.params = params or InteractionParams.from_tree(cfg)
        joints = JointsParams.from_tree(cfg)
        self.joint_names = list(joints.names)
        self.sim = ArmSim.of_robot(RobotParams.from_tree(cfg).model, q0, "torque", joint_names=self.joint_names,
                                   timestep_s=1.0 / self.params.rate_hz, ee_site=self.params.ee_site)
        self.model, self.data, self.robot = self.sim.model, self.sim.data, self.sim.robot
        self.loop = rt.RtLoop(tick_params(self.params, len(self.joint_names),
                                          torque_max_nm=joints.torque_max_nm),
                              loop_config(self.params),
                              self.robot, world_T_d=None, safety=safety)
        self.lockstep = bool(lockstep)
        self.dt = 1.0 / self.params.rate_hz
        self.inputs = InputRules(self.params, self.loop.state()["world_T_ee"], log)
        self.mode = self.params.mode          # the active mode
        self.loop.set_mode(self.mode, -1.0)   # the configured start mode (the tick starts in impedance)
        self._init_gains()

    held = property(lambda self: self.inputs.held, doc="the stop input holds")

    def _sent(self) -> None:
        """A command went to the loop: in lockstep it takes it at once (as its next tick would
        first; ``RtLoop.apply_pending``), so :meth:`state` shows it; the thread takes it at its next tick."""
        if self.lockstep:
            self.loop.apply_pending()

    def set_mode(self, mode: str) -> bool:
        """The input rules' mode check (refused while the stop holds); the loop switches at its
        next tick (in lockstep: at once) with the settle bound for ``switch.settle_s``."""
        frozen = f"{STOP_PREFIX}: {self.inputs.hold_reason}" if self.inputs.held else None
        if not self.inputs.mode(mode, frozen):
            return False
        if mode != self.mode:     # seeded as the controller's switch: the filter's energy restarts
            log.info("interaction: mode %s -> %s", self.mode, mode)
            self.loop.reset_filter()
            self.loop.set_mode(mode, self.params.switch.settle_s)
            self.mode = mode
            self._sent()
        return True

    @property
    def law(self) -> str:
        """The torque law the loop runs (a switch takes effect at its next tick)."""
        return str(self.loop.state()["law"])

    def set_law(self, law: str) -> bool:
        """The input rules' law check on the loop's latest state (:meth:`InputRules.law`); the loop
        switches at its next tick, where the tick checks the same rule on its own state again (a
        switch the admittance no longer allows there is refused and counted in ``law_refusals``)."""
        s = self.loop.state()
        if not self.inputs.law(str(s["law"]), law, s["lam"], s["lam_dot"], bool(s["law_blending"])):
            return False
        if law != s["law"]:
            log.info("interaction: law %s -> %s", s["law"], law)
            self.loop.set_law(law, self.params.switch.law_blend_s)
            self._sent()
        return True

    def _set_gains(self, K, D) -> bool:
        g = self.inputs.gains(K, D)
        if g is None:
            return False
        self.loop.set_gains(g[0], g[1], self.params.blend_s)
        self._sent()
        return True

    def _set_admittance(self, a) -> bool:
        self.loop.set_admittance(a.mass, a.damping, a.stiffness)
        self._sent()
        return True

    def set_push(self, force_world, torque_world=(0.0, 0.0, 0.0)) -> None:
        self.loop.set_push(np.asarray(force_world, float), np.asarray(torque_world, float))
        self._sent()

    def hold(self, on: bool, reason: str = "stop") -> None:
        """Stop: ``RtLoop.hold`` — at its next tick the loop re-anchors reference and target at
        the measured EE pose, zeroes the admittance state and freezes; release keeps the anchor,
        so nothing jumps back."""
        if bool(on) == self.inputs.held:
            return
        (log.warning if on else log.info)("interaction: %s (%s)", "hold" if on else "hold released", reason)
        self.inputs.hold(on, reason, self.ee_pose() if on else None)
        self.loop.hold(bool(on))
        self._sent()

    def set_target(self, T) -> bool:
        T = self.inputs.reference(T)
        if T is None or self.loop.set_target(T) is False:
            return False
        self._sent()
        return True

    def step(self, n: int = 1) -> np.ndarray:
        """``n`` ticks in lockstep; returns the last tick's command."""
        self.loop.step(int(n))
        return self.loop.last_tau()

    def start(self) -> None:
        if self.lockstep:
            raise RuntimeError("a lockstep rt engine is stepped by its caller's clock (step)")
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()

    @property
    def running(self) -> bool:
        return bool(self.loop.running)

    @property
    def ticks(self) -> int:
        return int(self.loop.state()["ticks"])

    def ee_pose(self) -> np.ndarray:
        """The EE pose: lockstep, of the arm now (after the last step); else as the loop last read it."""
        return self.sim.ee_pose() if self.lockstep else np.asarray(self.loop.state()["world_T_ee"])

    def state(self) -> dict:
        s = self.loop.state_after_step() if self.lockstep else self.loop.state()
        s["rejected"] = dict(self.inputs.rejected)
        if s.get("law_refusals"):       # switches the tick refused at its boundary (module doc)
            s["rejected"]["law_switch_refused_at_tick"] = int(s["law_refusals"])
        s.setdefault("events", {k: v for k, v in s.get("flag_ticks", {}).items() if v})   # the flags raised so far
        s["held"] = self.inputs.held
        s["frozen_reason"] = ((f"{STOP_PREFIX}: {self.inputs.hold_reason}" if self.inputs.held else "safety")
                              if s["frozen"] else None)
        return s


def make_engine(cfg: dict, q0: Sequence[float], engine: Optional[str] = None, safety="config",
                driver: str = "sim", simulated: bool = False,
                params: Optional[InteractionParams] = None):
    """The configured engine (``interaction.engine``, or ``engine``); ``safety="config"``: an
    ``hri_core.safety.SafetyChecker`` with the config limits (None: only the torque clamp).
    ``simulated`` (a simulated clock): the rt loop without its thread, stepped by the caller in
    lockstep with that clock (``RtEngine(lockstep=True)``). ``driver="topic"`` takes the python
    engine (the arm model at the received joint state). ``params``: the ``interaction`` params
    (default: from ``cfg``)."""
    kind = engine or parameters_gen.InteractionParams.from_tree(cfg).engine
    if kind not in ENGINES:
        raise ValueError(f"interaction.engine must be one of {ENGINES}, got {kind!r}")
    if safety == "config":
        safety = safety_checker(cfg)
    if kind == "rt" and driver == "sim":
        if rt_available():
            return RtEngine(cfg, q0, params=params, safety=safety, lockstep=simulated)
        log.warning("interaction.engine rt: the installed hri_core has no rt module; "
                    "using the python engine (lockstep only)")
    return PythonEngine(cfg, q0, params=params, safety=safety, driver=driver)
