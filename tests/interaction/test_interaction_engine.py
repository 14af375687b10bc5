"""The two engines (``rt``: the C++ loop stepped in lockstep; ``python``: the C++ tick on
ArmSim, mode torque, stepped by the lockstep runner) behind one interface: the same input rules and
rejection counters, the same stop hold, the same published state."""
import numpy as np
import pytest

import hri_core.se3  # noqa: F401  (required: a missing install fails here)
import mujoco  # noqa: F401  (required: a missing install fails here)

from hri_interaction.engine import ENGINES, diagnostics, make_engine, rt_available  # noqa: E402
from hri_runtime.config.tree import load_robot_config  # noqa: E402

KINDS = [k for k in ENGINES if k != "rt" or rt_available()]


@pytest.fixture(scope="module")
def cfg():
    return load_robot_config("fr3")


def engine(cfg, kind):
    e = make_engine(cfg, np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), engine=kind)
    assert e.kind == kind
    return e


@pytest.mark.parametrize("kind", KINDS)
def test_bad_inputs_are_refused_and_counted_alike(cfg, kind):
    e = engine(cfg, kind)
    e.step(10)
    T = e.ee_pose()
    assert not e.set_target(None)                        # a message that did not convert
    far = T.copy()
    far[0, 3] += 1.0
    assert not e.set_target(far)
    assert not e.set_mode("warp")
    assert not e.set_gain_vector([1.0, 2.0])
    assert not e.set_gain_vector([-1.0] * 12)
    near = T.copy()
    near[2, 3] += 0.005
    assert e.set_target(near) and e.set_mode("admittance")
    K = cfg["interaction"]["impedance"]["stiffness_diag"]
    D = cfg["interaction"]["impedance"]["damping_diag"]
    assert e.set_gain_vector(list(K) + list(D))
    e.step(5)
    s = e.state()
    assert s["rejected"] == {"reference_nonfinite": 1, "reference_jump": 1, "mode_invalid": 1,
                             "gains_invalid": 2}
    d = diagnostics(s, e.dt)
    assert d["mode"] == "admittance" and d["frozen"] is None and d["ticks"] == 15
    assert d["stiffness_diag"] == pytest.approx(K)


@pytest.mark.parametrize("kind", KINDS)
def test_hold_anchors_at_the_measured_pose_refuses_inputs_and_releases_without_a_jump(cfg, kind):
    e = engine(cfg, kind)
    e.step(5)
    e.set_push([0.0, 0.0, -20.0])
    e.step(300)                                          # pushed down, yielding ≈ F/K
    e.hold(True, "console: SAFE STOP")
    e.step(1)
    p_hold = e.ee_pose()[:3, 3].copy()
    T = e.ee_pose()
    T[2, 3] += 0.01
    assert e.held and not e.set_target(T) and not e.set_mode("admittance")
    e.set_push([0.0, 0.0, 0.0])
    e.step(500)
    s = e.state()
    assert s["frozen"] and s["frozen_reason"] == "system stop: console: SAFE STOP"
    assert s["rejected"]["reference_during_stop"] == 1 and s["rejected"]["mode_switch_refused"] == 1
    assert np.linalg.norm(e.ee_pose()[:3, 3] - p_hold) < 2e-3   # stays at the anchor, push gone
    e.hold(False, "reset")
    p_release = e.ee_pose()[:3, 3].copy()
    e.step(500)
    assert not e.held and not e.state()["frozen"]
    assert np.linalg.norm(e.ee_pose()[:3, 3] - p_release) < 1e-3  # no jump back to the old target


def test_python_topic_driver_waits_for_a_joint_state_and_rejects_a_bad_one(cfg):
    e = make_engine(cfg, np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), engine="python",
                    driver="topic")
    assert e.step(3) is None and e.ticks == 0                     # no state yet: no tick
    names = list(cfg["joints"]["names"])
    q = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
    assert not e.set_joint_state(names[:-1], q[:-1])
    assert e.set_joint_state(names[::-1], q[::-1])                # by name, any order
    tau = e.step(1)
    assert tau is not None and np.all(np.isfinite(tau)) and e.ticks == 1
    assert e.state()["rejected"] == {"joint_state_invalid": 1}
    with pytest.raises(RuntimeError, match="lockstep only"):
        e.start()


@pytest.mark.parametrize("kind", KINDS)
def test_a_simulated_clock_steps_the_engine_in_lockstep(cfg, kind):
    """What the node runs on an in-process context or ``use_sim_time``: the configured engine
    without a thread (the rt loop's thread would run on the wall clock), stepped by the caller;
    its state is the arm after the step (as the simulation reports it), not the reading the tick
    used."""
    e = make_engine(cfg, np.deg2rad(cfg["joints"]["named_positions_deg"]["home"]), engine=kind, simulated=True)
    assert e.kind == kind and e.lockstep
    with pytest.raises(RuntimeError):
        e.start()
    e.set_push([0.0, 0.0, -20.0])
    tau = e.step(20)
    s = e.state()
    assert np.array_equal(s["world_T_ee"], e.sim.ee_pose()) and np.array_equal(s["q"], e.sim.q)
    assert np.array_equal(tau, s["tau"]) and s["ticks"] == 20
    assert s["wrench_body"][5] == pytest.approx(-20.0 * e.sim.ee_pose()[2, 2])   # the push in the EE frame


@pytest.mark.parametrize("kind", KINDS)
def test_one_gain_diagonal_combines_with_the_running_gains(cfg, kind):
    e = engine(cfg, kind)
    K = np.asarray(cfg["interaction"]["impedance"]["stiffness_diag"], float)
    D = np.asarray(cfg["interaction"]["impedance"]["damping_diag"], float)
    assert e.update_impedance(stiffness=K * 1.5) is None                 # D stays as it runs
    assert np.allclose(e.impedance["stiffness"], K * 1.5) and np.allclose(np.diag(e.impedance["damping"]), D)
    e.step(int(round(cfg["interaction"]["blend_s"] * cfg["interaction"]["rate_hz"])) + 5)
    assert np.allclose(np.diag(e.state()["K"]), K * 1.5) and np.allclose(np.diag(e.state()["D"]), D)
    why = e.update_impedance(damping=np.zeros(6))                        # refused: not PD
    assert why is not None and why.endswith("(gains_invalid)") and np.allclose(np.diag(e.impedance["damping"]), D)
    M = np.asarray(cfg["interaction"]["admittance"]["mass_diag"], float)
    assert e.update_admittance(mass=M * 2) is None and np.allclose(e.admittance["mass"], M * 2)
    assert e.update_admittance(stiffness=-np.ones(6)) is not None and np.allclose(e.admittance["mass"], M * 2)
    assert e.state()["rejected"] == {"gains_invalid": 2}
