"""``joint_robot``: a simulated robot with per-joint position/effort commands, as a node.

The robot a lab tunes, in MuJoCo: the humanoid arm in setup S1–S4 or the FR3 with torque motors
(``hri_sim.pid_plants_mujoco.build_pid_robot``). Every ``control_period_s`` of the node's clock:

    command (per joint)  ──►  position mode: the robot's own PID (gains set by ~/set_gains)
                              effort mode:   the commanded effort
                         ──►  C++ SafetyChecker (torque, torque rate, NaN, stale: clamp AND flag)
                         ──►  MuJoCo step  ──►  joint_states (position, velocity, applied effort)

Parameters: ``robot`` (humanoid_arm or fr3), ``setup`` (S1–S4, the humanoid arm's), ``robot_id``,
``safety.command_stale_after_s``, every ``pid_tuning.live.*`` and ``pid_tuning.pid.*`` key, the
relay's ``joint_limit_margin_deg`` and the robot's initial gains (their config values as defaults,
``hri_runtime.parameter_library.typed.declare_config``).

Topics (names from ``pid_tuning.live``):

* in ``joint_commands`` (``sensor_msgs/JointState``): for each named joint a finite ``position``
  selects position mode with that target (rad); otherwise a finite ``effort`` (N·m) selects
  effort mode. Unknown joints, length mismatches and NaN entries are rejected and counted.
* out ``joint_states`` (``sensor_msgs/JointState``, stamped with the node clock).
* service ``~/rehome`` (``std_srvs/srv/Trigger``, simulation only): back to the base pose at rest.
* service ``~/set_gains`` (``hri_interfaces/srv/Tune``: ``joint``, ``gains`` = [kp, ki, kd]) –
  acknowledged (``success``) only when the joint exists and :func:`pid_gains_refusal` finds
  nothing wrong; it changes the gain parameters below (``param get`` shows them).

Gains as parameters, settable at run time (``ros2 param set`` / ``hri param set``): the robot's
PID gains per joint (in the order of its joints) are the parameters ``<gains>.kp``, ``.ki`` and
``.kd`` of its config, ``<gains>`` = ``pid_tuning.initial_gains`` (a config robot, e.g. fr3) or
``pid_tuning.humanoid_arm.initial_gains``: checked per joint by :func:`pid_gains_refusal` (the one
check of the service too; refused with its sentence, nothing changed) and used from the next
control period on.

Safety: the system stop (``/safety/stop``, ``hri_safety.nodes.stop_listener``): while it is
latched, or no supervisor has spoken yet, every joint holds where it is (flag ``system_stop``) and
commands are refused (counted as ``system_stop``). An effort-mode joint whose last command is older than ``safety.command_stale_after_s``
returns to position mode holding where it is (flag ``stale``; silence = hold); a checker rejection
(NaN, bad stamp) holds every joint; an effort-mode joint that comes within
``pid_tuning.relay.joint_limit_margin_deg`` of a limit is held there (flag ``position``). Every flag
is counted (``flags``) and latched in ``flagged`` until :meth:`clear_flags`. A simulation that
blows up (MuJoCo instability under unstable gains) is re-homed at the base pose with every joint
held (flag ``sim_diverged``) – the simulator's stand-in for an emergency stop and re-homing.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np

from hri_runtime import msgs
from hri_runtime.node import Node, run_node
from hri_runtime.geometry import time_from_seconds
from hri_runtime.parameter_library.typed import declare_config, params_type
from hri_safety.nodes.stop_listener import StopListener
from hri_safety.parameters_gen import SafetyParams

#: ``pid_tuning`` (declared by hri_pid_tuning, which depends on this package: built at run time)
PidTuning = params_type("pid_tuning")

SET_GAINS_SRV = "hri_interfaces/srv/Tune"   # ~/set_gains takes the tuning service's request (joint, gains)


def pid_gains_refusal(gains) -> str | None:
    """Why ``[kp, ki, kd]`` cannot be a joint's PID gains (3 finite numbers >= 0), or None: the
    one check of gains from the service and from a parameter set."""
    try:
        g = [float(x) for x in gains]
    except (TypeError, ValueError):
        return f"gains must be 3 finite numbers >= 0, got {gains!r}"
    if len(g) != 3 or not all(math.isfinite(x) and x >= 0 for x in g):
        return f"gains must be 3 finite numbers >= 0, got {g}"
    return None


GAIN_TERMS = ("kp", "ki", "kd")


def _safety_limits(robot: str, cfg: dict, plant):
    """SafetyLimits: the FR3's from its config; the humanoid arm's from its model (its torque
    limits per setup; rates not limited beyond a full swing per control period)."""
    from hri_core.safety import SafetyLimits
    from hri_core.safety import arm_limits

    if robot == "fr3":
        return SafetyLimits(**arm_limits(cfg).as_kwargs())
    n, dt = plant.n, plant.dt_s
    free = np.full(n, 2.0 * float(np.max(plant.effort_max)) / dt)   # never binds: not a source number
    return SafetyLimits(q_min=plant.q_min, q_max=plant.q_max, v_max=free, a_max=free,
                        tau_max=plant.effort_max.copy(), tau_rate_max=free,
                        workspace_min=np.full(3, -1e3), workspace_max=np.full(3, 1e3), ee_speed_max=1e3,
                        stale_after_s=SafetyParams.from_tree(cfg).command_stale_after_s)


class JointRobotNode(Node):
    def __init__(self, plant=None, robot: str | None = None, setup: str | None = None, cfg: dict | None = None, **kw):
        super().__init__("joint_robot", **kw)
        from hri_core.pid import PID, PIDGains, PIDParams
        from ..pid_plants_mujoco import ARM_ROBOT, build_pid_robot, load_pid_config

        node_cfg = PidTuning.from_tree(load_pid_config(ARM_ROBOT) if cfg is None else cfg).node
        self.robot = robot or self.declare_parameter("robot", node_cfg.robot).value
        setup = setup or self.declare_parameter("setup", node_cfg.setup).value
        # the keys this node reads beyond its plant, as node parameters (the setup's config values)
        gains = "pid_tuning.humanoid_arm.initial_gains" if self.robot == ARM_ROBOT else "pid_tuning.initial_gains"
        self.gain_params = {term: f"{gains}.{term}" for term in GAIN_TERMS}    # settable at run time
        self.cfg = declare_config(self, ("safety.command_stale_after_s", "pid_tuning.live", "pid_tuning.pid",
                                         "pid_tuning.relay.joint_limit_margin_deg", gains),
                                  cfg=cfg if cfg is not None else load_pid_config(self.robot),
                                  on_set={name: (lambda v, t=term: self._set_gain_term(t, v))
                                          for term, name in self.gain_params.items()})
        pt = PidTuning.from_tree(self.cfg)
        self.plant = plant if plant is not None else build_pid_robot(self.robot, setup, self.cfg)
        p = self.plant
        self.names = list(p.joint_names)
        ig = (pt.humanoid_arm if self.robot == ARM_ROBOT else pt).initial_gains
        base = PIDParams.from_config(pt.pid)
        self.pids = [PID(PIDGains(ig.kp[i], ig.ki[i], ig.kd[i]),
                         replace(base, output_min=-float(p.effort_max[i]), output_max=float(p.effort_max[i])))
                     for i in range(p.n)]
        self.position_mode = np.ones(p.n, dtype=bool)
        self.q_ref = np.array(p.q_rad, dtype=float)
        self.effort_cmd = np.zeros(p.n)
        self.cmd_t = np.full(p.n, -math.inf)
        self.applied = np.zeros(p.n)
        self.stale_after_s = SafetyParams.from_tree(self.cfg).command_stale_after_s
        self.limit_margin = math.radians(pt.relay.joint_limit_margin_deg)
        from hri_core.safety import SafetyChecker

        self.checker = SafetyChecker(_safety_limits(self.robot, self.cfg, p))
        self.checker.reset(q=np.array(p.q_rad, float), tau=np.zeros(p.n))
        self.flags: Counter[str] = Counter()
        self.flagged: set[str] = set()
        self.ticks = 0
        live = pt.live
        self.state_pub = self.create_publisher("sensor_msgs/msg/JointState", live.states_topic, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", live.commands_topic, self.on_command, qos=10)
        self.create_service(SET_GAINS_SRV, "~/set_gains", self.on_set_gains)
        self.create_service("std_srvs/srv/Trigger", "~/rehome", self.on_rehome)
        # the system stop (docs/safety.md): while stopped every joint holds where it is and
        # commands are refused (counted); silence from the supervisor is a stop
        self.stop = StopListener(self, on_change=self.on_system_stop)
        self.create_timer(p.dt_s, self.tick)

    # --- inputs -------------------------------------------------------------------------------
    def _bad_command(self, cause: str, detail: str) -> None:
        self._reject("joint_commands", cause, detail)     # counted in self.rejected[(endpoint, cause)]

    def on_system_stop(self, stopped: bool, reason: str) -> None:
        """(The listener logs the change.) Stopped: every joint holds where it is."""
        if stopped:
            self._hold_all()
            self._flag("system_stop")

    def on_command(self, msg) -> None:
        if self.stop.stopped:
            self._bad_command("system_stop", f"refused while the system is stopped ({self.stop.reason})")
            return
        names = list(msg.name)
        pos, eff = list(msg.position), list(msg.effort)
        if (pos and len(pos) != len(names)) or (eff and len(eff) != len(names)):
            self._bad_command("length_mismatch", f"{len(names)} names, {len(pos)} positions, {len(eff)} efforts")
            return
        idx = []
        for k, n in enumerate(names):
            if n not in self.names:
                self._bad_command("unknown_joint", f"unknown joint {n!r}")
                return
            i = self.names.index(n)
            q = float(pos[k]) if pos else math.nan
            u = float(eff[k]) if eff else math.nan
            if not math.isfinite(q) and not math.isfinite(u):
                self._bad_command("non_finite", f"{n}: neither a finite position nor a finite effort")
                return
            idx.append((i, q, u))
        now = self.get_clock().now_s()
        for i, q, u in idx:
            if math.isfinite(q):
                if not self.position_mode[i]:
                    self.pids[i].reset()
                self.position_mode[i] = True
                self.q_ref[i] = min(max(q, self.plant.q_min[i]), self.plant.q_max[i])
            else:
                self.position_mode[i] = False
                self.effort_cmd[i] = u
            self.cmd_t[i] = now

    def on_set_gains(self, req, resp):
        refused = pid_gains_refusal(req.gains)
        if req.joint not in self.names:
            resp.success, resp.message = False, f"unknown joint {req.joint!r}"
        elif refused:
            resp.success, resp.message = False, refused
        else:
            g = [float(x) for x in req.gains]
            self._apply_gains(self.names.index(req.joint), g)
            for term, name in self.gain_params.items():     # the parameters say what runs
                self.record_parameter(name, [getattr(pid.gains, term) for pid in self.pids])
            resp.success, resp.message = True, f"{req.joint}: kp={g[0]:.6g} ki={g[1]:.6g} kd={g[2]:.6g}"
        if not resp.success:
            self._reject("set_gains", "bad_gains", resp.message)
        return resp

    def _set_gain_term(self, term: str, values) -> str | None:
        """The applier of ``<gains>.<term>`` (one value per joint): every joint's gains checked
        first (nothing changes when one is refused), then the changed joints get theirs."""
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
        """Joint ``i``'s PID takes ``g`` = [kp, ki, kd] (checked) at the next control period."""
        from hri_core.pid import PIDGains

        pid = self.pids[i]
        if g[1] == 0.0:
            # no integral action: a controller without memory, as a fresh one (a bumpless
            # transfer would freeze whatever the integral held – e.g. after an unstable rule)
            pid.set_gains(PIDGains(*g), bumpless=False)
            pid.reset()
        else:
            pid.set_gains(PIDGains(*g))          # bumpless: the integral absorbs the change

    def on_rehome(self, req, resp):
        """Simulation only (a hardware driver has no such service): the robot back at its base
        pose at rest, every joint held – the thesis's TestEnvSetup reset (flag ``rehomed``)."""
        p = self.plant
        p.reset(p.base_pose_rad)
        q = np.array(p.q_rad, dtype=float)
        for i in range(p.n):
            self._hold(i, q[i])
        self._flag("rehomed")
        resp.success, resp.message = True, "simulated robot re-homed at its base pose"
        return resp

    # --- control period --------------------------------------------------------------------------
    def _flag(self, name: str) -> None:
        self.flags[name] += 1
        self.flagged.add(name)

    def clear_flags(self) -> None:
        self.flagged.clear()

    def _hold_all(self) -> None:
        """Every joint held where it is: a position-mode joint keeps its controller's state (its
        integral carries the gravity load), an effort-mode joint switches to a fresh hold."""
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

    def tick(self) -> None:
        p = self.plant
        now = self.get_clock().now_s()
        q = np.array(p.q_rad, dtype=float)
        if not np.all(np.isfinite(q)):
            # the simulation blew up (MuJoCo instability under unstable gains): the simulated
            # robot is re-homed at its base pose, every joint held (flag sim_diverged, latched)
            self._flag("sim_diverged")
            p.reset(p.base_pose_rad)
            q = np.array(p.q_rad, dtype=float)
            for i in range(p.n):
                self._hold(i, q[i])
        if self.stop.stopped and not self.position_mode.all():
            self._hold_all()                          # authoritative every cycle
        t = p.t_s
        tau = np.zeros(p.n)
        for i in range(p.n):
            if not self.position_mode[i]:
                if now - self.cmd_t[i] > self.stale_after_s:
                    self._flag("stale")
                    self._hold(i, q[i])
                elif q[i] < p.q_min[i] + self.limit_margin or q[i] > p.q_max[i] - self.limit_margin:
                    self._flag("position")
                    self._hold(i, min(max(q[i], p.q_min[i] + self.limit_margin), p.q_max[i] - self.limit_margin))
            if self.position_mode[i]:
                tau[i] = self.pids[i].update(self.q_ref[i], q[i], t)
            else:
                tau[i] = self.effort_cmd[i]
        r = self.checker.check(tau=tau, dt_s=p.dt_s, now_s=now, stamp_s=now)
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
        qn = np.array(p.q_rad, dtype=float)
        dq = p.dq
        m = msgs.new("sensor_msgs/msg/JointState", name=self.names, position=qn.tolist(),
                     velocity=dq.tolist(), effort=tau.tolist())
        m.header.stamp = time_from_seconds(now + p.dt_s)
        self.state_pub.publish(m)


def main(argv=None) -> int:
    return run_node(JointRobotNode, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
