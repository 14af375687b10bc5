"""Every array argument of every hri_core binding is checked before it is converted.

The core's joint-sized storage has a fixed capacity of 16 joints (kMaxDof): a (6, 17) Jacobian used to
be written past it (a segfault). Here every argument of every binding of hri_core._hri_core (se3,
kinematics, safety, interaction, rt) gets: more than 16 joints (17, 64, 4096), wrong shapes, NaN and
inf, non-contiguous / Fortran-ordered / byte-swapped / misaligned / integer / list inputs, and wrong
dtypes (complex, bool, object, str, None). Each outcome is one of:

- the same result as the canonical float64 C-contiguous input (layout, byte order, alignment, lists,
  integers are copied, never misread);
- TypeError (not an array of real numbers) or ValueError (shape, joints beyond the limit, naming it;
  NaN where the math needs finite numbers);
- any other input: a result or TypeError/ValueError, never another exception or a crash.

`make asan` runs this file with the extension built with -fsanitize=address,undefined: any write or
read out of bounds there is a report that fails the run.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from hri_core import _hri_core as core

se3, kin, saf, ia, rt = core.se3, core.kinematics, core.safety, core.interaction, core.rt
LIMIT = 16                      # kMaxDof of cpp/include/hri_core (interaction, kinematics, safety)
OVERSIZE = (17, 64, 4096)
LIMIT_MSG = r"at most 16 \(kMaxDof\)"
N = 7                           # joints of the canonical arguments

RNG = np.random.default_rng(20261127)


def pose(rng=RNG):
    return se3.exp(rng.normal(size=6) * 0.5)


def spd(rng=RNG, scale=1.0):
    a = rng.normal(size=(6, 6))
    return scale * (a @ a.T + 6 * np.eye(6))


# ------------------------------------------------------------------------------------ the registry

@dataclass
class Case:
    """One binding: call(**args) with the canonical float64 arguments `args`; returns plain data
    (arrays, tuples, numbers) so that results can be compared."""
    name: str
    call: Callable[..., Any]
    args: dict[str, Any]
    joint_axis: dict[str, int] = field(default_factory=dict)  # argument -> axis that counts joints
    capacity: bool = True        # that axis is limited by kMaxDof (else by the model's own dof)
    finite: set[str] = field(default_factory=set)    # NaN/inf there is a ValueError
    optional: set[str] = field(default_factory=set)  # None is accepted
    out: set[str] = field(default_factory=set)       # written in place: only the exact layout
    covers: tuple[str, ...] = ()  # further bindings this case calls (setters of a property, ...)


def _plain(x):
    if isinstance(x, tuple | list):
        return tuple(_plain(v) for v in x)
    if isinstance(x, dict):
        return tuple((k, _plain(v)) for k, v in sorted(x.items()))
    return np.asarray(x) if isinstance(x, np.ndarray | float | int | bool | np.generic) else x


def _same(a, b) -> bool:
    a, b = _plain(a), _plain(b)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b


SE3_UNARY = {  # name -> canonical input
    "exp": RNG.normal(size=6), "log": pose(), "so3_exp": RNG.normal(size=3), "so3_log": pose()[:3, :3].copy(),
    "inverse": pose(), "adjoint": pose(), "ad": RNG.normal(size=6), "left_jacobian": RNG.normal(size=6),
    "left_jacobian_inv": RNG.normal(size=6), "right_jacobian": RNG.normal(size=6),
    "right_jacobian_inv": RNG.normal(size=6), "so3_left_jacobian": RNG.normal(size=3),
    "so3_left_jacobian_inv": RNG.normal(size=3), "so3_right_jacobian": RNG.normal(size=3),
    "so3_right_jacobian_inv": RNG.normal(size=3), "quat_to_rot": RNG.normal(size=4),
    "rot_to_quat": pose()[:3, :3].copy(),
}


def _se3_cases() -> list[Case]:
    cases = []
    for name, x in SE3_UNARY.items():
        f = getattr(se3, name)
        cases.append(Case(f"se3.{name}", lambda x, f=f: f(x), {"x": x}))
        out_shape = f(x).shape
        cases.append(Case(f"se3.{name}(out=)", lambda x, out, f=f: f(x, out=out).copy(),
                          {"x": x, "out": np.zeros(out_shape)}, out={"out"}, optional={"out"}))
    cases += [
        Case("se3.hat", lambda x: se3.hat(x), {"x": RNG.normal(size=6)}),
        Case("se3.vee", lambda X: se3.vee(X), {"X": se3.hat(RNG.normal(size=6))}),
        Case("se3.left_jacobian_dot", lambda a, b: se3.left_jacobian_dot(a, b),
             {"a": RNG.normal(size=6), "b": RNG.normal(size=6)}),
        Case("se3.so3_left_jacobian_dot", lambda a, b: se3.so3_left_jacobian_dot(a, b),
             {"a": RNG.normal(size=3), "b": RNG.normal(size=3)}),
        Case("se3.compose", lambda A, B: se3.compose(A, B), {"A": pose(), "B": pose()}),
        Case("se3.between", lambda A, B: se3.between(A, B), {"A": pose(), "B": pose()}),
        Case("se3.plus", lambda X, t: se3.plus(X, t), {"X": pose(), "t": RNG.normal(size=6)}),
        Case("se3.minus", lambda A, B: se3.minus(A, B), {"A": pose(), "B": pose()}),
        Case("se3.interpolate", lambda A, B, s: se3.interpolate(A, B, s),
             {"A": pose(), "B": pose(), "s": np.array([0.0, 0.25, 1.0])}),
    ]
    return cases


SCREWS = np.array([[0, 0, 1, 0, 0, 0], [0, 1, 0, -0.333, 0, 0], [0, 0, 1, 0, 0, 0], [0, -1, 0, 0.649, 0, -0.0825],
                   [0, 0, 1, 0, 0, 0], [0, -1, 0, 1.033, 0, 0], [0, 0, -1, 0, 0.088, 0]], float)
HOME = np.array([[1, 0, 0, 0.088], [0, -1, 0, 0], [0, 0, -1, 0.926], [0, 0, 0, 1]], float)
MODEL = kin._PoeModel(SCREWS, HOME)
IK = dict(eps_w=1e-6, eps_v=1e-6, damping=1e-3, max_iterations=20, nullspace_gain=0.0, step_max=0.5,
          lm_increase=2.0, lm_decrease=0.5)


def _ik(target, q0, q_posture=None, q_min=None, q_max=None):
    r = MODEL.ik_dls(target, q0, q_posture=q_posture, q_min=q_min, q_max=q_max, **IK)
    return r.q, r.success, r.iterations


def _kinematics_cases() -> list[Case]:
    q = RNG.normal(size=N) * 0.3
    jq = {"q": 0}
    cases = [Case("kinematics._PoeModel", lambda screws, home: (lambda m: (m.dof, m.screws, m.home, m.fk(np.zeros(m.dof))))(
        kin._PoeModel(screws, home)), {"screws": SCREWS, "home": HOME}, joint_axis={"screws": 0},
        finite={"screws", "home"})]
    for name in ("fk", "jacobian_space", "jacobian_body", "fk_jacobian_body", "fk_jacobian_space",
                 "manipulability", "condition_number"):
        cases.append(Case(f"kinematics._PoeModel.{name}", lambda q, name=name: getattr(MODEL, name)(q), {"q": q},
                          joint_axis=jq, capacity=False))
    lo, hi = -np.ones(N) * 2.5, np.ones(N) * 2.5
    cases.append(Case("kinematics._PoeModel.ik_dls", _ik, {"target": MODEL.fk(q * 0.9), "q0": q, "q_posture": q * 0,
                                                 "q_min": lo, "q_max": hi},
                      joint_axis={"q0": 0, "q_posture": 0, "q_min": 0, "q_max": 0}, capacity=False,
                      finite={"target", "q0"}, optional={"q_posture", "q_min", "q_max"}))
    return cases


LIM = dict(q_min=-np.ones(N) * 2.5, q_max=np.ones(N) * 2.5, v_max=np.ones(N) * 2.0, a_max=np.ones(N) * 10.0,
           tau_max=np.ones(N) * 50.0, tau_rate_max=np.ones(N) * 1000.0, workspace_min=np.array([-1.0, -1, 0]),
           workspace_max=np.array([1.0, 1, 1.5]))


def _limits(**kw):
    return saf.SafetyLimits(**kw, ee_speed_max=1.0, stale_after_s=0.1)


def _result(r):
    return r.q, r.qd, r.tau, r.ee_pos, r.ee_vel, r.flags, r.ok, r.rejected, r.worst_check, r.worst_step


def _checker():
    c = saf.SafetyChecker(_limits(**LIM))
    c.reset(q=np.zeros(N), qd=np.zeros(N), tau=np.zeros(N), ee_pos=np.array([0.5, 0.0, 0.5]))
    return c


def _safety_cases() -> list[Case]:
    def limits(**kw):
        L = _limits(**kw)
        return L.n, L.q_min, L.q_max, L.v_max, L.a_max, L.tau_max, L.tau_rate_max, L.workspace_min, L.workspace_max

    def reset(**kw):
        c = saf.SafetyChecker(_limits(**LIM))
        c.reset(**kw)
        return _result(c.check(np.full(N, 0.001), dt_s=1e-3, now_s=0.0, stamp_s=0.0))

    def check(**kw):
        return _result(_checker().check(kw.pop("q"), dt_s=1e-3, now_s=0.0, stamp_s=0.0, **kw))

    vec = {k: 0 for k in ("q_min", "q_max", "v_max", "a_max", "tau_max", "tau_rate_max")}
    state = {"q": np.full(N, 0.001), "qd": np.full(N, 0.5), "tau": np.full(N, 1.0), "ee_pos": np.array([0.5, 0.0, 0.5])}
    return [
        Case("safety.SafetyLimits", limits, dict(LIM), joint_axis=vec, finite=set(LIM)),
        Case("safety.SafetyChecker.reset", reset, dict(state), joint_axis={"q": 0, "qd": 0, "tau": 0},
             capacity=False, optional=set(state)),
        Case("safety.SafetyChecker.check", check, dict(state, ee_vel=np.array([0.1, 0.0, 0.0])),
             joint_axis={"q": -1, "qd": -1, "tau": -1}, capacity=False,
             optional={"q", "qd", "tau", "ee_pos", "ee_vel"}),
    ]


T0, T1 = pose(), pose()
K6, D6, M6 = spd(scale=100.0), spd(scale=10.0), spd()


def _params(n=N, **fields):
    p = ia.TickParams()
    p.n = n
    for k, v in fields.items():
        setattr(p, k, v)
    return p


def _tick_out(r):
    tau, T, flags, sflags, smin = r
    return tau, T, flags, sflags, smin


def _tick_state(k):
    return k.last_tau, k.last_ref, k.lam, k.lam_dot, k.K, k.D, k.world_T_d, k.energy_dof_j


TICK_IN = {"q": RNG.normal(size=N) * 0.1, "dq": RNG.normal(size=N) * 0.1, "T": T0, "Vb": RNG.normal(size=6) * 0.1,
           "Jb": RNG.normal(size=(6, N)), "g": RNG.normal(size=N), "c": RNG.normal(size=N) * 0.1}
TICK_J = {"q": 0, "dq": 0, "Jb": 1, "g": 0, "c": 0}
MQ = np.eye(N) * 2 + 0.1 * np.ones((N, N))     # a mass matrix M(q) (SPD)


def _tick_in(n: int) -> list:
    """TICK_IN for n joints (the first joints of TICK_IN, zeros beyond)."""
    return [np.resize(v, (6, n)) if k == "Jb" else (np.resize(v, n) if k in TICK_J else v) for k, v in TICK_IN.items()]


def _tick(**kw):
    k = ia.InteractionTick(_params(), T1)
    return _tick_out(k.tick(kw["q"], kw["dq"], kw["T"], kw["Vb"], kw["Jb"], kw["g"], kw["c"], 1e-3)), _tick_state(k)


def _setter(method, **kw):
    k = ia.InteractionTick(_params(), T1)
    getattr(k, method)(*kw.values())
    return _tick_out(k.tick(*TICK_IN.values(), 1e-3)), _tick_state(k)


def _interaction_cases() -> list[Case]:
    imp = {"T": T0, "Vb": RNG.normal(size=6), "Jb": RNG.normal(size=(6, N)), "bias": RNG.normal(size=N), "Tref": T1,
           "K": K6, "D": D6, "Vref": RNG.normal(size=6)}
    jb = {"Jb": 1, "bias": 0}

    def admittance(M, D, K, F):
        a = ia.LieAdmittance(M, D, K)
        a.step(F, 1e-3)
        return a.lam, a.lam_dot

    def lam_set(lam, lam_dot):
        a = ia.LieAdmittance(M6, D6, K6)
        a.lam, a.lam_dot = lam, lam_dot
        a.step(np.ones(6), 1e-3)
        return a.lam, a.lam_dot

    def params(**fields):
        p = _params(**fields)
        k = ia.InteractionTick(p, T1)
        return _tick_out(k.tick(*_tick_in(p.n), 1e-3)), _tick_state(k)

    def tick_bench(**kw):
        k = ia.InteractionTick(_params(), T1)
        return np.isfinite(k.bench_tick_ns(*kw.values(), 1e-3, 3))

    def make_tick(world_T_d):
        k = ia.InteractionTick(_params(), world_T_d)
        return _tick_out(k.tick(*TICK_IN.values(), 1e-3)), _tick_state(k)

    def modified(Td):
        return ia.InteractionTick(_params(), T1).modified_pose(Td)

    def filter_state(e):
        k = ia.InteractionTick(_params(filter="tdpc"), T1)
        k.set_filter_state(1.0, 0.5, 0.0, 0, e)
        return _tick_out(k.tick(*TICK_IN.values(), 1e-3)), _tick_state(k)

    def tick_lam(lam, lam_dot):
        k = ia.InteractionTick(_params(), T1)
        k.lam, k.lam_dot = lam, lam_dot
        return _tick_out(k.tick(*TICK_IN.values(), 1e-3)), _tick_state(k)

    def tick_mass(**kw):     # law lie_osd: the tick with M(q)
        k = ia.InteractionTick(_params(law="lie_osd"), T1)
        M = kw.pop("M")
        return _tick_out(k.tick(*kw.values(), 1e-3, M)), _tick_state(k)

    def osd_inertia(Md):
        k = ia.InteractionTick(_params(law="lie_osd"), T1)
        ok = k.set_osd_inertia(Md)
        return ok, _tick_out(k.tick(*TICK_IN.values(), 1e-3, MQ)), _tick_state(k)

    osd = dict(imp, Md=M6, M=MQ, Jdq=RNG.normal(size=6), F=RNG.normal(size=6))
    gic = {"T": T0, "Tref": T1, "K": K6}
    six = {"K": K6, "D": D6, "M_adm": M6, "D_adm": D6, "K_adm": np.zeros((6, 6)), "M_osd": M6,
           "jitter_alpha_base": np.ones(6), "jitter_alpha_scale": np.ones(6) * 2}
    return [
        Case("interaction.lie_impedance_torque", lambda **kw: ia.lie_impedance_torque(*kw.values()), imp,
             joint_axis=jb, optional={"Vref"}),
        Case("interaction.gic_torque", lambda **kw: ia.gic_torque(*kw.values()), imp, joint_axis=jb, optional={"Vref"}),
        Case("interaction.gic_elastic_wrench", lambda **kw: ia.gic_elastic_wrench(*kw.values()), gic),
        Case("interaction.gic_potential", lambda **kw: ia.gic_potential(*kw.values()), gic),
        Case("interaction.law_switch_error",
             lambda lam, lam_dot: ia.law_switch_error("lie", "cartesian", lam, lam_dot, False),
             {"lam": np.zeros(6), "lam_dot": RNG.normal(size=6)}),
        # M is n x n (two joint axes): the oversize check is on J_b / bias; 16 joints: test_interaction_lie_osd
        Case("interaction.lie_osd_torque",
             lambda T, Vb, Jb, bias, Tref, K, D, Vref, Md, M, Jdq, F: ia.lie_osd_torque(
                 T, Vb, Jb, bias, Tref, K, D, Md, M, Jdq, Vref, F), osd, joint_axis=jb, capacity=False,
             optional={"Vref", "F"}),
        Case("interaction.InteractionTick.tick(mass_matrix)", tick_mass, dict(TICK_IN, M=MQ), joint_axis=TICK_J,
             optional={"M"}),
        Case("interaction.InteractionTick.set_osd_inertia", osd_inertia, {"Md": M6}),
        Case("interaction.LieAdmittance", admittance, {"M": M6, "D": D6, "K": K6, "F": RNG.normal(size=6)},
             finite={"M", "D", "K", "F"}, covers=("interaction.LieAdmittance.step",)),
        Case("interaction.LieAdmittance.lam=", lam_set, {"lam": RNG.normal(size=6) * 0.1, "lam_dot": RNG.normal(size=6)},
             finite={"lam", "lam_dot"}, covers=("interaction.LieAdmittance.lam_dot=",)),
        Case("interaction.TickParams", params,
             dict(six, compliant_axes=np.array([1.0, 1, 1, 0, 0, 0]), wave_damping=np.ones(6) * 3,
                  torque_max_nm=np.full(N, 40.0)),
             joint_axis={"torque_max_nm": 0}, optional={"torque_max_nm"},
             covers=tuple(f"interaction.TickParams.{f}=" for f in (*six, "compliant_axes", "wave_damping", "torque_max_nm"))),
        Case("interaction.InteractionTick", make_tick, {"world_T_d": T1}),
        Case("interaction.InteractionTick.tick", _tick, TICK_IN, joint_axis=TICK_J),
        Case("interaction.InteractionTick.bench_tick_ns", tick_bench, TICK_IN, joint_axis=TICK_J),
        Case("interaction.InteractionTick.set_target", lambda T: _setter("set_target", T=T), {"T": T0}),
        Case("interaction.InteractionTick.set_wrench", lambda w: _setter("set_wrench", w=w, ok=True),
             {"w": RNG.normal(size=6)}),
        Case("interaction.InteractionTick.set_gains", lambda K, D: _setter("set_gains", K=K, D=D, b=0.1),
             {"K": K6, "D": D6}),
        Case("interaction.InteractionTick.set_admittance", lambda M, D, K: _setter("set_admittance", M=M, D=D, K=K),
             {"M": M6, "D": D6, "K": K6}),
        Case("interaction.InteractionTick.hold_at", lambda T: _setter("hold_at", T=T), {"T": T0}),
        Case("interaction.InteractionTick.modified_pose", modified, {"Td": T0}),
        Case("interaction.InteractionTick.set_filter_state", filter_state, {"e": np.ones(6) * 0.1}),
        Case("interaction.InteractionTick.lam=", tick_lam, {"lam": RNG.normal(size=6) * 0.1, "lam_dot": np.ones(6)},
             covers=("interaction.InteractionTick.lam_dot=",)),
    ]


def _arm():
    """The 3-joint MJCF arm of the C++ RtLoop test (test_rt_cpp_unit.py)."""
    import mujoco

    spec = importlib.util.spec_from_file_location("_rt_arm", Path(__file__).with_name("test_rt_cpp_unit.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mujoco.MjModel.from_xml_string(mod.ARM_XML)
    return model, mujoco.MjData(model)


def _rt_cases() -> list[Case]:
    if not rt.HAS_MUJOCO:
        return []

    def loop(setter=None, world_T_d=None, **kw):
        model, data = _arm()
        robot = rt.MujocoRobot(model, data, ["j1", "j2", "j3"], "ee")
        L = rt.RtLoop(_params(3), rt.LoopConfig(), robot, world_T_d)
        ok = getattr(L, setter)(*kw.values()) if setter else None
        L.step(5)
        s = L.state()
        return ok, s["tau"], s["world_T_ref"], s["world_T_d"], s["K"], s["lam"], s["wrench_body"], s["flag_bits"]

    def robot_call(method, *args):
        model, data = _arm()
        robot = rt.MujocoRobot(model, data, ["j1", "j2", "j3"], "ee")
        ok = getattr(robot, method)(*args)
        robot.write(np.zeros(3))
        s = robot.read()
        return ok, s.q, s.dq, s.world_T_ee, s.body_jacobian, s.gravity, s.coriolis, s.wrench_body, s.time_s

    return [
        Case("rt.RtLoop", lambda world_T_d: loop(world_T_d=world_T_d), {"world_T_d": T1}, optional={"world_T_d"}),
        Case("rt.RtLoop.set_target", lambda T: loop("set_target", T=T), {"T": T0}),
        Case("rt.RtLoop.set_gains", lambda K, D: loop("set_gains", K=K, D=D, b=0.1), {"K": K6, "D": D6}),
        Case("rt.RtLoop.set_admittance", lambda M, D, K: loop("set_admittance", M=M, D=D, K=K),
             {"M": M6, "D": D6, "K": K6}),
        Case("rt.RtLoop.set_wrench", lambda w: loop("set_wrench", w=w), {"w": RNG.normal(size=6)}),
        Case("rt.RtLoop.set_push", lambda f, t: loop("set_push", f=f, t=t), {"f": RNG.normal(size=3), "t": RNG.normal(size=3)}),
        # the robot's own calls (hri_sim.arm_sim.ArmSim, mode torque): sized by the model (3 joints)
        Case("rt.MujocoRobot.write", lambda tau: robot_call("write", tau), {"tau": RNG.normal(size=3)},
             joint_axis={"tau": 0}, capacity=False, finite={"tau"}),
        Case("rt.MujocoRobot.set_state", lambda q, dq: robot_call("set_state", q, dq),
             {"q": RNG.normal(size=3) * 0.3, "dq": RNG.normal(size=3)}, joint_axis={"q": 0, "dq": 0}, capacity=False),
        Case("rt.MujocoRobot.set_external_wrench", lambda f, t: robot_call("set_external_wrench", f, t),
             {"f": RNG.normal(size=3), "t": RNG.normal(size=3)}),
    ]


CASES = _se3_cases() + _kinematics_cases() + _safety_cases() + _interaction_cases() + _rt_cases()
BY_NAME = {c.name: c for c in CASES}


# bindings without an array argument (scalars, objects, nothing)
NO_ARRAYS = {
    "se3.get_batch_threads", "se3.set_batch_threads", "kinematics.IkResult", "safety.SafetyChecker",
    "safety.SafetyChecker.totals", "safety.SafetyResult", "interaction.TickParams",
    "interaction.InteractionTick.reset_filter", "interaction.InteractionTick.set_frozen",
    "interaction.InteractionTick.set_mode", "interaction.InteractionTick.twist", "rt.LoopConfig", "rt.MujocoRobot",
    "interaction.InteractionTick.set_law", "interaction.InteractionTick.set_link_statistics",
    "rt.MujocoRobot.read", "rt.RobotState", "rt.mj_step",
    "rt.RobotInterface", *(f"rt.RtLoop.{m}" for m in ("hold", "reset_filter", "reset_stats", "set_frozen", "set_law", "set_mode",
                                                      "start", "state", "state_after_step", "last_tau", "apply_pending", "step",
                                                      "stop", "trace")),
    *(f"interaction.TickParams.{f}=" for f in (
        "n", "law", "filter", "gravity_compensation", "coriolis_compensation", "energy_floor_j", "max_damping",
        "settle_max_linear_m_s", "settle_max_angular_rad_s", "max_linear_m_s", "max_angular_rad_s",
        "reference_max_linear_m_s", "reference_max_angular_rad_s", "singular_sigma_min",
        "reference_interpolation_max_s", "reference_feedforward")),
    *(f"rt.LoopConfig.{f}=" for f in ("rate_hz", "sched_fifo", "priority", "lock_memory", "cpu", "wrench_from_robot",
                                       "max_force_n", "max_torque_nm", "trace_capacity")),
}


def _bindings() -> set[str]:
    """Every function, constructor, method and settable property of hri_core._hri_core
    ("sub.Class.prop=" for a setter); the general paths behind the fast ones (_<name>_generic) are
    reached through those."""
    out, seen = set(), set()
    for sub in ("se3", "kinematics", "safety", "interaction", "rt"):
        mod = getattr(core, sub)
        for name in dir(mod):
            obj = getattr(mod, name)
            if name.startswith("__") or name.endswith("_generic") or not callable(obj):
                continue
            if isinstance(obj, type):
                if obj in seen:          # rt.TickParams is interaction.TickParams
                    continue
                seen.add(obj)
                out.add(f"{sub}.{name}")
                for m, v in vars(obj).items():
                    if m.startswith("_"):
                        continue
                    if isinstance(v, property):
                        if v.fset is not None:
                            out.add(f"{sub}.{name}.{m}=")
                    elif callable(v):
                        out.add(f"{sub}.{name}.{m}")
            else:
                out.add(f"{sub}.{name}")
    return out


def test_the_registry_covers_every_binding_taking_arrays():
    """A binding added later without a case here fails this test (its arguments would go unfuzzed)."""
    covered = {c.name.split("(")[0] for c in CASES} | {n for c in CASES for n in c.covers}
    bindings = _bindings()
    assert sorted(bindings - covered - NO_ARRAYS) == []
    assert sorted((covered | NO_ARRAYS) - bindings) == [], "names of bindings that do not exist"


# ------------------------------------------------------------------------------------ variants

def _noncontig(a):
    b = np.zeros(a.shape + (2,), a.dtype)
    b[..., 0] = a
    v = b[..., 0]
    assert a.size <= 1 or not v.flags.c_contiguous
    return v


def _misaligned(a):
    raw = np.zeros(a.nbytes + 1, np.uint8)
    v = np.frombuffer(raw.data, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    v = v.copy() if v.size == 0 else v
    if v.size:
        raw[1:] = np.frombuffer(np.ascontiguousarray(a).tobytes(), np.uint8)
    return v


def same_value_variants(a: np.ndarray) -> dict[str, Any]:
    """Inputs holding exactly a's values in another layout / type: the binding copies them."""
    out = {"non-contiguous": _noncontig(a), "big-endian": a.astype(">f8"), "misaligned": _misaligned(a),
           "list": a.tolist()}
    if a.ndim == 2:
        out["fortran"] = np.asfortranarray(a)
    if np.all(a == np.round(a)) and np.all(np.abs(a) < 2**31):
        out["int64"] = a.astype(np.int64)
    out["float32-exact"] = None  # filled when a survives float32 exactly
    if np.array_equal(a.astype(np.float32).astype(np.float64), a):
        out["float32-exact"] = a.astype(np.float32)
    else:
        del out["float32-exact"]
    return out


def bad_dtype_variants(a: np.ndarray) -> dict[str, Any]:
    return {"complex": a.astype(complex), "bool": np.ones(a.shape, bool), "object": a.astype(object),
            "str": np.full(a.shape, "1.0"), "bytes": b"\x00" * 8 * max(a.size, 1), "dict": {"a": 1},
            "ragged": [[1.0], [1.0, 2.0]]}


def _resized(a: np.ndarray, axis: int, n: int) -> np.ndarray:
    shape = list(a.shape)
    shape[axis] = n
    return np.resize(a, shape) if a.size else np.zeros(shape)


def _outcome(case: Case, args: dict):
    try:
        return "ok", case.call(**args)
    except (TypeError, ValueError) as e:
        return type(e), str(e)


def _canonical(case: Case):
    kind, res = _outcome(case, case.args)
    assert kind == "ok", f"{case.name}: canonical arguments fail: {res}"
    return res


@pytest.mark.parametrize("name", list(BY_NAME))
def test_same_values_in_any_layout_give_the_same_result(name):
    case = BY_NAME[name]
    want = _canonical(case)
    for arg, a in case.args.items():
        for label, v in same_value_variants(np.asarray(a)).items():
            kind, got = _outcome(case, {**case.args, arg: v})
            if arg in case.out:   # written in place: only an exact float64 C-contiguous aligned array
                assert kind in (TypeError, ValueError), f"{name}: out as {label} accepted"
                continue
            assert kind == "ok", f"{name}: {arg} as {label}: {kind.__name__}: {got}"
            assert _same(got, want), f"{name}: {arg} as {label} gives another result"


@pytest.mark.parametrize("name", list(BY_NAME))
def test_wrong_dtypes_are_a_type_error(name):
    case = BY_NAME[name]
    for arg, a in case.args.items():
        for label, v in bad_dtype_variants(np.asarray(a)).items():
            kind, msg = _outcome(case, {**case.args, arg: v})
            want = (TypeError, ValueError) if label == "ragged" else (TypeError,)
            assert kind in want, f"{name}: {arg} as {label}: {kind}"
            assert "\n" not in msg, f"{name}: {arg} as {label}: one line, got {msg!r}"
        if arg not in case.optional:
            kind, msg = _outcome(case, {**case.args, arg: None})
            assert kind is TypeError, f"{name}: {arg} = None: {kind}"


@pytest.mark.parametrize("name", [n for n, c in BY_NAME.items() if c.joint_axis])
@pytest.mark.parametrize("n", OVERSIZE)
def test_more_than_16_joints_is_a_value_error_naming_the_limit(name, n):
    case = BY_NAME[name]
    for arg, axis in case.joint_axis.items():
        kind, msg = _outcome(case, {**case.args, arg: _resized(np.asarray(case.args[arg]), axis, n)})
        assert kind is ValueError, f"{name}: {arg} with {n} joints: {kind}"
        if case.capacity:
            assert "at most 16 (kMaxDof)" in msg, msg
        # every joint argument at once: the first one checked is named
        big = {a: _resized(np.asarray(case.args[a]), ax, n) for a, ax in case.joint_axis.items()}
        kind, msg = _outcome(case, {**case.args, **big})
        assert kind is ValueError, f"{name}: all joint arguments with {n} joints: {kind}"
        if case.capacity:
            assert "at most 16 (kMaxDof)" in msg, msg


# The tick's joint count is its params.n (7 here), so its own 16-joint case is
# test_interaction_beyond_16_the_tick_checks_every_input_against_n's; here only the bindings whose size follows the arrays.
@pytest.mark.parametrize("name", [n for n, c in BY_NAME.items() if c.joint_axis and c.capacity
                                  and not n.startswith("interaction.InteractionTick")])
def test_16_joints_the_limit_itself_is_accepted(name):
    case = BY_NAME[name]
    args = {a: _resized(np.asarray(case.args[a]), ax, LIMIT) for a, ax in case.joint_axis.items()}
    if name == "interaction.TickParams":
        args["n"] = LIMIT
    kind, res = _outcome(case, {**case.args, **args})
    assert kind == "ok", f"{name}: {res}"


@pytest.mark.parametrize("name", list(BY_NAME))
def test_nan_and_inf_are_refused_where_the_math_needs_finite_numbers(name):
    case = BY_NAME[name]
    for arg, a in case.args.items():
        a = np.asarray(a, float)
        if a.size == 0 or arg in case.out:
            continue
        for bad in (np.nan, np.inf, -np.inf):
            v = a.copy()
            v.flat[a.size // 2] = bad
            kind, msg = _outcome(case, {**case.args, arg: v})
            if arg in case.finite:
                assert kind is ValueError, f"{name}: {arg} with {bad}: {kind}"
            else:
                assert kind in ("ok", ValueError), f"{name}: {arg} with {bad}: {kind}: {msg}"


# ------------------------------------------------------------------------------------ hypothesis

_DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.uint16, ">f8", np.complex128, np.bool_])


@st.composite
def any_array(draw):
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3, 4, 6, 7, 16, 17, 33]), max_size=3)))
    dtype = np.dtype(draw(_DTYPES))
    if dtype.kind in "fc":
        elems = st.floats(allow_nan=True, allow_infinity=True, width=32 if dtype.itemsize == 4 else 64)
    else:
        elems = None
    a = draw(hnp.arrays(dtype, shape, elements=elems))
    layout = draw(st.sampled_from(["c", "f", "noncontig", "misaligned", "readonly"]))
    if layout == "f":
        a = np.asfortranarray(a)
    elif layout == "noncontig":
        a = _noncontig(a)
    elif layout == "misaligned" and a.dtype.itemsize > 1:
        a = _misaligned(a)
    elif layout == "readonly":
        a = a.copy()
        a.flags.writeable = False
    return a


@pytest.mark.parametrize("name", list(BY_NAME))
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_arrays_in_every_argument_never_crash(name, data):
    """Any shape, dtype, layout and value in one or two arguments: a result, TypeError or ValueError."""
    case = BY_NAME[name]
    args = dict(case.args)
    drawn = data.draw(st.lists(st.sampled_from(sorted(case.args)), min_size=1, max_size=2, unique=True))
    for arg in drawn:
        args[arg] = data.draw(any_array())
    kind, res = _outcome(case, args)
    if len(drawn) == 1 and args[drawn[0]].dtype.kind in "cb":   # (with two, the other may be refused first)
        assert kind is TypeError, f"{name}: {drawn} complex/bool: {kind}"
    else:
        assert kind in ("ok", TypeError, ValueError)


# ------------------------------------------------------------------------------------ the issue's cases

@pytest.mark.parametrize("n", OVERSIZE)
def test_the_issue_case_lie_impedance_torque_and_tick(n):
    T, V = np.eye(4), np.zeros(6)
    with pytest.raises(ValueError, match=LIMIT_MSG):
        ia.lie_impedance_torque(T, V, np.zeros((6, n)), np.zeros(n), T, np.eye(6), np.eye(6))
    with pytest.raises(ValueError, match=LIMIT_MSG):
        ia.InteractionTick(_params(), T).tick(np.zeros(n), np.zeros(n), T, V, np.zeros((6, n)), np.zeros(n),
                                              np.zeros(n), 1e-3)
    p = ia.TickParams()
    with pytest.raises(ValueError, match=LIMIT_MSG):
        p.torque_max_nm = np.ones(n)
    p.n = n
    with pytest.raises(ValueError, match="1..16 joints"):
        ia.InteractionTick(p, T)
    with pytest.raises(ValueError, match=LIMIT_MSG):
        kin._PoeModel(np.tile(SCREWS[:1], (n, 1)), HOME)
    with pytest.raises(ValueError, match=LIMIT_MSG):
        saf.SafetyLimits(**{k: (np.resize(v, n) if v.size == N else v) for k, v in LIM.items()},
                         ee_speed_max=1.0, stale_after_s=0.1)


def test_a_16_joint_impedance_torque_is_the_formula():
    """At the limit itself: tau = J^T (-K e - D edot) + bias, e = log(T_ref^-1 T), edot = V."""
    rng = np.random.default_rng(3)
    T, Tref = pose(rng), pose(rng)
    V, J, bias = rng.normal(size=6), rng.normal(size=(6, LIMIT)), rng.normal(size=LIMIT)
    K, D = spd(rng), spd(rng)
    e = se3.log(se3.between(Tref, T))
    want = J.T @ (-K @ e - D @ V) + bias
    np.testing.assert_allclose(ia.lie_impedance_torque(T, V, J, bias, Tref, K, D), want, rtol=1e-12, atol=1e-12)


def test_interaction_beyond_16_the_tick_checks_every_input_against_n():
    k = ia.InteractionTick(_params(LIMIT), T1)
    q = np.zeros(LIMIT)
    tau, *_ = k.tick(q, q, T0, np.zeros(6), np.zeros((6, LIMIT)), q, q, 1e-3)
    assert tau.shape == (LIMIT,)
    with pytest.raises(ValueError, match="n entries"):
        k.tick(q[:3], q, T0, np.zeros(6), np.zeros((6, LIMIT)), q, q, 1e-3)
    with pytest.raises(ValueError, match="n entries"):
        k.bench_tick_ns(q[:3], q, T0, np.zeros(6), np.zeros((6, LIMIT)), q, q, 1e-3, 2)
    with pytest.raises(ValueError, match=LIMIT_MSG):
        k.tick(np.zeros(17), q, T0, np.zeros(6), np.zeros((6, LIMIT)), q, q, 1e-3)
