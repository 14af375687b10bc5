"""``atomic_node``: the four-state atomic leg/base controller of Tino as a node: the topics of
:class:`hri_atomic_motion.core.drive.AtomicDrive` (the controller on its drivers, one period per tick).

Inputs (names from ``atomic.topics``; docs/interfaces.md "Atomic motion"): pulse (Twist: linear.x
= state 0-3, angular.z = direction -1/0/1) from hri_pulse, safe_stop (Bool, true = stop) from the
link monitor, reset (Bool true), leg_state (JointState, driver ``topic``: ``leg`` position = ticks,
velocity = RPM; ``leg_home_switch`` position = 0/1); with driver ``serial`` or ``sim`` (the node owns
the hardware) head (Vector3: x pitch, y pan, z tilt, rad) and audio (Vector3: x volume, y orientation
rad) through ``core.head_audio.HeadAudioGate`` (non-finite rejected and counted, clamped to the
bounds, rate limited, the head held while the system stop or a fault holds).
System stop: ``hri_safety`` StopListener on ``/safety/stop`` (docs/safety.md): while stopped (also
before the first heartbeat and once it is older than ``safety.stop.timeout_s``) every output is
motor 0 / twist 0 and pulses are refused (counted, the first press of each stop logged); a stop
latches the fault ``system_stop``, which the supervisor's reset clears. AtomicState's
``system_stop`` is the stop's reason ("" = none): a client waits for "" before its first press.
Outputs: cmd_vel (Twist), leg_rpm (Float64), leg_state (driver ``sim``/``serial``), atomic_state
(hri_interfaces/AtomicState), /diagnostics (ERROR while a fault is latched; values include the
controller's counts, ``system_stop``, ``pulses_received``, ``leg_states_received``).

Parameters: ``robot`` (default tino) and every key of ``atomic`` and ``safety.stop`` by its dotted
path (e.g. ``atomic.node.driver``: topic | sim | serial). The controller runs on the node's clock
(sim or wall); the embedded simulation (driver ``sim``) is stepped in lockstep with it.
"""
from __future__ import annotations

from typing import Optional

from hri_runtime import msgs
from hri_runtime.diagnostics import Updater
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED
from hri_safety.nodes.stop_listener import STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, StopListener

from hri_atomic_motion.core import AtomicController, AtomicParams
from hri_atomic_motion.core.drive import AtomicDrive
from hri_atomic_motion.hardware import open_drivers
from hri_pulse.messages import twist
from hri_atomic_motion.messages import STATE_MSG, atomic_state_msg, leg_state_msg, parse_leg_state

class AtomicNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("atomic", **kw)
        self.cfg = declare_config(self, ("atomic", "safety.stop"), cfg, robot="tino")
        self.params = p = AtomicParams.from_config(self.cfg["atomic"])
        self.driver = p.node.driver
        self.ctrl = AtomicController(p)
        drivers, self.sim, self.link = open_drivers(p, self.cfg, self.now)
        if self.sim is not None:                    # stepped in lockstep with the node clock (tick)
            self._sim_offset = self.now() - self.sim.t_s
        if self.link is not None:
            self.pub_stop_request = self.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
        self.drive = AtomicDrive(self.ctrl, **drivers)
        self.head_gate, self.leg_input = self.drive.head_gate, self.drive.leg_input
        T = p.topics
        self.pub_twist = self.create_publisher("geometry_msgs/msg/Twist", T.cmd_vel, qos=10)
        self.pub_rpm = self.create_publisher("std_msgs/msg/Float64", T.leg_rpm, qos=10)
        self.pub_state = self.create_publisher(STATE_MSG, T.atomic_state, qos=QOS_LATCHED)   # + every tick
        self.diag = Updater(self, "tino", p.node.diagnostics_period_s)     # + at once on a fault change
        self.diag.add("leg/base controller", self._diagnose)
        if self.leg_input is None:
            self.pub_leg = self.create_publisher("sensor_msgs/msg/JointState", T.leg_state, qos=10)
        else:
            self.create_subscription("sensor_msgs/msg/JointState", T.leg_state, self.on_leg_state, qos=10)
        self.create_subscription("geometry_msgs/msg/Twist", T.pulse, self.on_pulse, qos=10)
        self.create_subscription("std_msgs/msg/Bool", T.safe_stop, self.on_safe_stop, qos=10)
        self.create_subscription("std_msgs/msg/Bool", T.reset, self.on_reset, qos=10)
        if self.head_gate is not None:
            self.create_subscription("geometry_msgs/msg/Vector3", T.head, self.on_head, qos=10)
            self.create_subscription("geometry_msgs/msg/Vector3", T.audio, self.on_audio, qos=10)
        self.stop = StopListener(self, on_change=self.on_system_stop)
        self.create_timer(p.node.period_s, self.tick)
        self.get_logger().info(f"atomic node: robot {self.cfg['robot']['model']}, driver {self.driver}, "
                               f"pulse on {T.pulse}")

    def now(self) -> float:
        return self.get_clock().now_s()

    rejected_leg_state = property(lambda self: self.drive.rejected_leg_state, doc="malformed leg states")
    pulses_received = property(lambda self: self.drive.pulses_received, doc="pulse messages, whatever became of them")

    # ------------------------------------------------------------------ callbacks
    def on_system_stop(self, stopped: bool, reason: str) -> None:
        if self.drive.on_system_stop(self.now(), stopped, self.stop.cause):
            self.get_logger().info("system stop reset: fault cleared")
        if stopped:                                  # at once, not at the next tick
            self.pub_rpm.publish(msgs.new("std_msgs/msg/Float64", data=0.0))
            self.pub_twist.publish(twist())

    def on_head(self, msg) -> None:
        if self.head_gate.on_head(msg.x, msg.y, msg.z, stopped=self.drive.head_held(self.stop.stopped)) \
                == "rejected_non_finite":
            self._reject(self.params.topics.head, "non_finite", f"head ({msg.x}, {msg.y}, {msg.z})")

    def on_audio(self, msg) -> None:
        if self.head_gate.on_audio(msg.x, msg.y) == "rejected_non_finite":
            self._reject(self.params.topics.audio, "non_finite", f"audio ({msg.x}, {msg.y})")

    def on_pulse(self, msg) -> None:
        line = self.drive.on_pulse(msg.linear.x, msg.angular.z, self.now(), self.stop.stopped, self.stop.reason)
        if line is not None:
            self.get_logger().warning(line)

    def on_safe_stop(self, msg) -> None:
        if bool(msg.data):
            self.ctrl.safe_stop(self.now())

    def on_reset(self, msg) -> None:
        if bool(msg.data):
            cleared, request = self.drive.reset(self.now())
            self._request_stop(request)
            if cleared:
                self.get_logger().info("fault reset")

    def _request_stop(self, reason: Optional[str]) -> None:   # a serial link fault, once per fault
        if reason:
            self.pub_stop_request.publish(msgs.new(STOP_REQUEST_TYPE, source="serial_fault", reason=reason))

    def on_leg_state(self, msg) -> None:
        if not self.leg_input.on_reading(parse_leg_state(msg), self.now()):
            self.get_logger().warning("leg_state rejected (malformed)")

    # ------------------------------------------------------------------ loop
    def tick(self) -> None:
        t = self.now()
        if self.sim is not None:      # lockstep: advance the embedded simulation to the node clock
            self.sim.advance_to(t - self._sim_offset)
        out, r = self.drive.step(t, self.stop.stopped, self.stop.cause)
        self._request_stop(self.drive.stop_request)
        if r is not None and self.leg_input is None:
            self.pub_leg.publish(leg_state_msg(t, r.ticks, r.home_pressed, r.rpm))
        self.pub_rpm.publish(msgs.new("std_msgs/msg/Float64", data=float(out.leg_rpm)))
        self.pub_twist.publish(twist(out.linear_m_s, out.angular_rad_s))
        st = self.ctrl.status()
        self.pub_state.publish(atomic_state_msg(t, st, self.stop.reason))
        changed, fault = self.drive.fault_change()
        if changed and fault is not None:
            self.get_logger().error(f"fault latched: {fault.value} ({st['fault_detail']})")
        self.diag.force_update() if changed else self.diag.update()

    def _diagnose(self, stat) -> None:
        level, message, values = self.drive.diagnostics(driver=self.driver, system_stop=self.stop.reason)
        stat.summary(level, message)
        for k, v in values.items():
            stat.add(k, v)


def main(argv=None):
    run_node(AtomicNode, argv)
