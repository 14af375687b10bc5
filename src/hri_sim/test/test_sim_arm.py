"""FR3 model variants (MjSpec edits) and the one arm simulation (hri_sim.arm_sim.ArmSim) in its
modes: position (the teleop arm's joint controller), torque (the C++ MujocoRobot behind the 1 kHz
loop) and pid (the tuning plants)."""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from hri_runtime.config.tree import list_arms, load_robot_config, named_position
from hri_sim.arm_sim import ArmSim, ArmSimParams
from hri_sim.models import FR3_ARM_JOINTS, load_arm, load_fr3, ModelNotFoundError


def test_load_fr3_adds_sites_and_keeps_position_servos():
    m = load_fr3()
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "attachment_site") >= 0
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "tcp") >= 0
    assert m.nu == 8 and m.actuator_gainprm[0, 0] == 4500


def test_torque_variant_has_motors_with_the_torque_limits_and_ft_sensor():
    m = load_fr3("torque", add_ft_sensor=True, gravity_compensation=True, timestep_s=0.001)
    assert m.opt.timestep == 0.001
    for name, limit in zip(FR3_ARM_JOINTS, [87, 87, 87, 87, 12, 12, 12]):
        a = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, name)
        assert m.actuator_gainprm[a, 0] == 1 and m.actuator_biastype[a] == 0
        np.testing.assert_allclose(m.actuator_ctrlrange[a], [-limit, limit])
    assert m.nsensor == 2 and m.sensor_dim.sum() == 6
    assert np.all(m.body_gravcomp[1:] == 1)
    # gravity compensated: with zero torque the arm stays put
    d = mujoco.MjData(m)
    d.qpos[:7] = named_position(load_robot_config("fr3"), "home")
    q0 = d.qpos[:7].copy()
    for _ in range(500):
        mujoco.mj_step(m, d)
    assert np.max(np.abs(d.qpos[:7] - q0)) < 0.01


def test_bad_actuation_and_unknown_arm_are_clear_errors():
    with pytest.raises(ValueError, match="actuation"):
        load_fr3("velocity")
    with pytest.raises(ModelNotFoundError, match="no MuJoCo model configured for 'tino'"):
        load_arm("tino")


@pytest.mark.parametrize("robot", list_arms())
def test_every_arm_gets_config_joint_names_torque_motors_and_the_flange_site(robot):
    from hri_sim.models import arm_xml_path

    arm_xml_path(robot)   # the model wheels are installed by `make`: missing = a failure
    cfg = load_robot_config(robot)
    m = load_arm(robot, "torque")
    jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name) for name in cfg["joints"]["names"]]
    assert min(jids) >= 0, cfg["joints"]["names"]
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "attachment_site") >= 0
    for j in jids:   # one torque motor per arm joint (gain 1, no bias), limited
        (a,) = np.flatnonzero((m.actuator_trnid[:, 0] == j) & (m.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT))
        assert m.actuator_gainprm[a, 0] == 1.0 and not np.any(m.actuator_biasprm[a, :3])
        assert m.actuator_ctrllimited[a] and m.actuator_ctrlrange[a, 1] > 0
    armature = cfg["sim"]["model"]["joint_armature"]
    if armature is not None:
        assert [m.dof_armature[m.jnt_dofadr[j]] for j in jids] == pytest.approx(armature)


@pytest.mark.parametrize("actuation", ["impedance", "position"])
def test_arm_sim_holds_and_follows_a_ramp(actuation):
    cfg = load_robot_config("fr3", overrides=[f"sim.arm.actuation={actuation}"])
    q0 = named_position(cfg, "home")
    sim = ArmSim.of_robot("fr3", q0, "position", params=ArmSimParams.from_config(cfg["sim"]["arm"]),
                          interpolation_s=0.01)
    sim.advance(1.0)
    assert sim.t_s == pytest.approx(1.0)
    assert np.max(np.abs(sim.q - q0)) < 1e-3
    # 0.2 rad/s ramp on joint 1 commanded at 100 Hz
    lag = []
    for k in range(100):
        q = q0.copy()
        q[0] += 0.002 * (k + 1)
        sim.command(q)
        sim.advance(0.01)
        lag.append(abs(sim.q[0] - q[0]))
    # impedance with velocity feed-forward tracks a ramp with a fraction of a mrad; the MJCF's
    # position servos (kv/kp = 0.1 s) lag ~ 0.1 s x 0.2 rad/s = 20 mrad
    bound = 1e-3 if actuation == "impedance" else 0.03
    assert max(lag[20:]) < bound


def test_command_must_be_finite():
    cfg = load_robot_config("fr3")
    sim = ArmSim.of_robot("fr3", named_position(cfg, "home"), "position",
                          params=ArmSimParams.from_config(cfg["sim"]["arm"]))
    with pytest.raises(ValueError):
        sim.command(np.full(7, np.nan))


def test_instability_is_an_error_not_a_silent_reset(tmp_path, monkeypatch):
    from hri_sim.arm_sim import SimulationUnstable

    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the working directory

    cfg = load_robot_config("fr3")
    sim = ArmSim.of_robot("fr3", named_position(cfg, "home"), "position",
                          params=ArmSimParams.from_config(cfg["sim"]["arm"]))
    sim.data.qvel[0] = float("nan")  # what a diverging integration produces
    with pytest.raises(SimulationUnstable):
        sim.advance(0.01)


def test_torque_mode_is_the_cpp_robot_read_write_push_and_measured_state():
    """mode torque reads and writes through hri_core.rt.MujocoRobot: gravity held by g(q), a push
    in the EE frame, a refused non-finite push, the model put at a measured state, bad arrays refused."""
    from hri_core import rt

    cfg = load_robot_config("fr3")
    q0 = named_position(cfg, "home")
    sim = ArmSim.of_robot("fr3", q0, "torque", timestep_s=0.001)
    assert isinstance(sim.robot, rt.MujocoRobot) and sim.robot.dof == 7
    st = sim.state()
    np.testing.assert_allclose(st.q, q0, atol=1e-12)
    np.testing.assert_allclose(st.world_T_ee, sim.ee_pose(), atol=1e-12)
    np.testing.assert_allclose(st.body_twist, st.body_jacobian @ st.dq, atol=1e-12)
    for _ in range(200):                      # tau = g(q): the arm stays put
        sim.step(sim.state().gravity)
    assert sim.t_s == pytest.approx(0.2) and np.max(np.abs(sim.q - q0)) < 1e-4
    assert sim.push([0.0, 0.0, -10.0])
    R = sim.ee_pose()[:3, :3]
    np.testing.assert_allclose(sim.wrench_body()[3:], R.T @ [0.0, 0.0, -10.0], atol=1e-12)
    assert sim.push([np.nan, 0.0, 0.0]) is False   # refused, the last push kept
    np.testing.assert_allclose(sim.wrench_body()[3:], R.T @ [0.0, 0.0, -10.0], atol=1e-12)
    q1 = q0 + 0.1
    sim.set_joint_state(q1, np.full(7, 0.2))
    st = sim.state()
    np.testing.assert_allclose(st.q, q1)
    np.testing.assert_allclose(st.dq, np.full(7, 0.2))
    with pytest.raises(ValueError, match="7 joints"):
        sim.step(np.zeros(6))
    with pytest.raises(ValueError, match="finite"):
        sim.step(np.full(7, np.nan))
    with pytest.raises(RuntimeError, match="mode position"):
        sim.command(q0)


def test_core_mj_step_is_mujocos_step_and_checks_its_arguments():
    """hri_core.rt.mj_step (the simulators' stepping) gives mujoco.mj_step's state bit for bit and
    refuses what is not a model and its own data, and a negative count, touching nothing."""
    import mujoco
    from hri_core import rt

    model = load_arm("fr3", actuation="torque")
    ours, theirs = mujoco.MjData(model), mujoco.MjData(model)
    for d in (ours, theirs):
        d.ctrl[:] = np.linspace(-5.0, 5.0, model.nu)
    rt.mj_step(model, ours, 300)
    rt.mj_step(model, ours)
    mujoco.mj_step(model, theirs, 301)
    assert ours.time == pytest.approx(301 * model.opt.timestep)
    for field in ("qpos", "qvel", "act", "qacc_warmstart"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field))
    assert np.max(np.abs(ours.qpos - mujoco.MjData(model).qpos)) > 1e-3      # it moved
    other = mujoco.MjData(load_arm("fr3", actuation="torque"))
    before = ours.qpos.copy(), ours.time
    for args, error, text in (((model, other), ValueError, "another model"), ((model, ours, -1), ValueError, ">= 0"),
                              ((ours, model), TypeError, "mujoco.MjModel"), ((model, None), TypeError, "mujoco.MjData"),
                              ((None, ours), TypeError, "mujoco.MjModel")):
        with pytest.raises(error, match=text):
            rt.mj_step(*args)
    np.testing.assert_array_equal(ours.qpos, before[0])
    assert ours.time == before[1]
    assert other.time == 0.0


def test_core_mj_step_holds_the_gil_while_it_steps():
    """mujoco.mj_step releases the GIL on every call: with another Python thread runnable (a
    middleware's spin thread), each 1 ms step of a Python loop can then wait up to the switch
    interval for it (bench/atomic: the Tino node fell behind its clock for good). The core's holds
    it: another thread that yields the GIL at every turn never runs while the core steps (the
    interpreter's forced switch is put at 10 s, so only a release could let it in)."""
    import sys
    import threading
    import time

    import mujoco
    from hri_core import rt

    model = load_arm("fr3", actuation="torque")
    data = mujoco.MjData(model)
    turns, stop = [0], threading.Event()

    def other():
        while not stop.is_set():
            turns[0] += 1
            time.sleep(0)                      # gives the GIL away every turn

    interval = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    t = threading.Thread(target=other, daemon=True)
    try:
        t.start()
        while turns[0] < 10:
            time.sleep(0.001)
        before = turns[0]
        rt.mj_step(model, data, 2000)
        after = turns[0]
    finally:
        stop.set()
        sys.setswitchinterval(interval)
        t.join()
    assert data.time == pytest.approx(2000 * model.opt.timestep)
    assert after == before


def test_pid_mode_clips_holds_and_flags_divergence(tmp_path, monkeypatch):
    """mode pid: efforts clipped to effort_max and held for control_period_s (whole physics steps);
    a diverged simulation measures NaN until reset."""
    from hri_sim.pid_plants_mujoco import build_fr3

    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the working directory

    cfg = load_robot_config("fr3")
    sim = build_fr3(cfg["joints"]["torque_max_nm"], cfg["joints"]["named_positions_deg"]["hri_home"],
                    control_period_s=0.002, physics_dt_s=0.001)
    assert sim.mode == "pid" and sim.substeps == 2 and sim.dt_s == pytest.approx(0.002)
    sim.step(np.full(7, 1e6))
    np.testing.assert_allclose(sim.data.ctrl[sim.aadr], sim.effort_max)
    assert sim.t_s == pytest.approx(0.002) and not sim.diverged
    sim.data.qvel[0] = float("nan")
    sim.step(np.zeros(7))
    assert sim.diverged and np.all(np.isnan(sim.q_rad))
    sim.reset(sim.base_pose_rad)
    assert not sim.diverged and sim.t_s == 0.0
    with pytest.raises(RuntimeError, match="mode torque"):
        sim.push([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="mode must be one of"):
        ArmSim(sim.model, sim.joint_names, sim.base_pose_rad, "velocity")
