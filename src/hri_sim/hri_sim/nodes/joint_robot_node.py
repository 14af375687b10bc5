"""``joint_robot``: a simulated robot with per-joint position/effort commands, as a node: the
robot a lab tunes, in MuJoCo (the humanoid arm in setup S1–S4 or the FR3 with torque motors,
``hri_sim.pid_plants_mujoco.build_pid_robot``). Endpoints, parameters and holds:
docs/pid-tuning.md "Live path"; the control logic (modes, holds, flags, gains, the system stop) is
:class:`hri_sim.core.joint_control.JointController`. This node declares the parameters, builds the
plant and wires topics, services and the timer to it.
"""
from __future__ import annotations

import numpy as np

from hri_runtime import msgs
from hri_runtime.node import Node, run_node
from hri_runtime.geometry import time_from_seconds
from hri_runtime.parameter_library.typed import declare_config, params_type
from hri_safety.nodes.stop_listener import StopListener
from hri_sim.core.joint_control import GAIN_TERMS, JointController

#: ``pid_tuning`` (declared by hri_pid_tuning, which depends on this package: built at run time)
PidTuning = params_type("pid_tuning")

SET_GAINS_SRV = "hri_interfaces/srv/Tune"   # ~/set_gains takes the tuning service's request (joint, gains)


class JointRobotNode(Node):
    def __init__(self, plant=None, robot: str | None = None, setup: str | None = None, cfg: dict | None = None, **kw):
        super().__init__("joint_robot", **kw)
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
                                  on_set={name: (lambda v, t=term: self.ctrl.set_gain_term(t, v))
                                          for term, name in self.gain_params.items()})
        self.plant = plant if plant is not None else build_pid_robot(self.robot, setup, self.cfg)
        self.ctrl = JointController.from_config(self.robot, self.cfg, self.plant)
        self.names, self.pids = self.ctrl.names, self.ctrl.pids
        live = PidTuning.from_tree(self.cfg).live
        self.state_pub = self.create_publisher("sensor_msgs/msg/JointState", live.states_topic, qos=10)
        self.create_subscription("sensor_msgs/msg/JointState", live.commands_topic, self.on_command, qos=10)
        self.create_service(SET_GAINS_SRV, "~/set_gains", self.on_set_gains)
        self.create_service("std_srvs/srv/Trigger", "~/rehome", self.on_rehome)
        # the system stop (docs/safety.md): while stopped every joint holds where it is and
        # commands are refused (counted); silence from the supervisor is a stop
        self.stop = StopListener(self, on_change=lambda stopped, _reason: self.ctrl.on_system_stop(stopped))
        self.create_timer(self.plant.dt_s, self.tick)

    # the controller's state, as the node's (tests and tools read these)
    position_mode = property(lambda self: self.ctrl.position_mode)
    q_ref = property(lambda self: self.ctrl.q_ref)
    flags = property(lambda self: self.ctrl.flags)
    flagged = property(lambda self: self.ctrl.flagged)
    ticks = property(lambda self: self.ctrl.ticks)

    def on_command(self, msg) -> None:
        if self.stop.stopped:
            self._reject("joint_commands", "system_stop", f"refused while the system is stopped ({self.stop.reason})")
            return
        bad = self.ctrl.command(msg.name, msg.position, msg.effort, self.get_clock().now_s())
        if bad:
            self._reject("joint_commands", *bad)      # counted in self.rejected[(endpoint, cause)]

    def on_set_gains(self, req, resp):
        resp.success, resp.message = self.ctrl.set_joint_gains(req.joint, req.gains)
        if resp.success:
            for term, name in self.gain_params.items():     # the parameters say what runs
                self.record_parameter(name, self.ctrl.gain_term(term))
        else:
            self._reject("set_gains", "bad_gains", resp.message)
        return resp

    def on_rehome(self, req, resp):
        """Simulation only (a hardware driver has no such service): the robot back at its base
        pose at rest, every joint held – the thesis's TestEnvSetup reset (flag ``rehomed``)."""
        self.ctrl.rehome()
        resp.success, resp.message = True, "simulated robot re-homed at its base pose"
        return resp

    def clear_flags(self) -> None:
        self.ctrl.clear_flags()

    def tick(self) -> None:
        p = self.plant
        now = self.get_clock().now_s()
        tau = self.ctrl.step(now, stopped=self.stop.stopped)
        m = msgs.new("sensor_msgs/msg/JointState", name=self.names, position=np.array(p.q_rad, dtype=float).tolist(),
                     velocity=p.dq.tolist(), effort=tau.tolist())
        m.header.stamp = time_from_seconds(now + p.dt_s)
        self.state_pub.publish(m)


def main(argv=None) -> int:
    return run_node(JointRobotNode, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
