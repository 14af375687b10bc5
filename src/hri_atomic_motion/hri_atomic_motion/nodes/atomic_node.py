"""``atomic_node``: the four-state atomic leg/base controller of Tino as a node.

Inputs (names from ``atomic.topics``; docs/interfaces.md "Atomic motion"):
  pulse (geometry_msgs/Twist: linear.x = state 0-3, angular.z = direction -1/0/1) from hri_pulse,
  safe_stop (std_msgs/Bool, true = stop) from the link monitor, reset (std_msgs/Bool true),
  leg_state (sensor_msgs/JointState, driver ``topic``: ``leg`` position = ticks, velocity = RPM;
  ``leg_home_switch`` position = 0/1).
System stop: ``hri_safety`` StopListener on ``/safety/stop`` (docs/safety.md): while the system is
  stopped (also before the first heartbeat and once it is older than ``safety.stop.timeout_s``)
  every output is motor 0 / twist 0 and pulses are refused (counted, the first press of each stop
  logged); a stop latches the fault ``system_stop``, which the supervisor's reset
  (``/safety/reset``) clears. AtomicState's ``system_stop`` is the stop's reason ("" = none): a
  client waits for "" (the supervisor heard) before its first press.
Head and audio (driver ``serial`` or ``sim``: the node owns the hardware): ``atomic.topics.head``
  (geometry_msgs/Vector3: x pitch, y pan, z tilt, rad) and ``atomic.topics.audio`` (Vector3: x volume,
  y orientation rad), the topics vr_interface publishes and the tino sim node reads, go through
  ``core.head_audio.HeadAudioGate`` (non-finite: rejected and counted; beyond the bounds: clamped and
  counted; at most ``atomic.head.rate_hz`` / ``atomic.audio.rate_hz``, the latest wins; head refused
  while the system stop or a fault holds) to the MCU's ``H`` / ``A`` lines or the embedded model.
Outputs: cmd_vel (Twist), leg_rpm (std_msgs/Float64, driver ``topic``), atomic_state
  (hri_interfaces/AtomicState),
  /diagnostics (diagnostic_msgs/DiagnosticArray; ERROR while a fault is latched; its values
  include the controller's counts, ``system_stop``, ``pulses_received`` and, driver ``topic``,
  ``leg_states_received``: whether the pulse and leg-state paths reach the node).

Parameters: ``robot`` (config name, default tino) and every key of ``atomic`` and
``safety.stop`` by its dotted path, the robot config's value as default (e.g.
``atomic.node.driver``: topic | sim | serial). The controller runs on the node's clock (sim or
wall); the embedded simulation (driver ``sim``) is stepped in lockstep with it.
"""
from __future__ import annotations

from typing import Optional

from hri_runtime import msgs
from hri_runtime.diagnostics import Updater
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED
from hri_safety.nodes.stop_listener import STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, StopListener

from hri_atomic_motion.core import AtomicController, AtomicParams, HeadAudioGate, HeadAudioLimits, LegStateInput
from hri_atomic_motion.core.drive import AtomicDrive
from hri_atomic_motion.messages import STATE_MSG, atomic_state_msg, leg_state_msg, parse_leg_state

class AtomicNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("atomic", **kw)
        self.cfg = declare_config(self, ("atomic", "safety.stop"), cfg, robot="tino")
        self.params = p = AtomicParams.from_config(self.cfg["atomic"])
        self.driver = p.node.driver
        self.ctrl = AtomicController(p)
        self.sim = self.link = None
        drivers: dict = {}
        if self.driver == "sim":
            from hri_sim.tino import TinoSim, TinoSimParams

            from hri_atomic_motion.sim_drivers import (MujocoAudioDriver, MujocoBaseDriver, MujocoHeadDriver,
                                                       MujocoLegDriver)

            self.sim = TinoSim(TinoSimParams.from_config(self.cfg["atomic"]))
            drivers = dict(leg=MujocoLegDriver(self.sim), base=MujocoBaseDriver(self.sim),
                           head=MujocoHeadDriver(self.sim), audio=MujocoAudioDriver(self.sim))
            self._sim_offset = self.now() - self.sim.t_s
        elif self.driver == "serial":
            from hri_atomic_motion.serial_driver import (SerialAudioDriver, SerialBaseDriver, SerialHeadDriver,
                                                         SerialLegDriver, SerialLink)

            self.link = link = SerialLink.open(p.serial, clock=self.now)
            drivers = dict(leg=SerialLegDriver(link), base=SerialBaseDriver(link), head=SerialHeadDriver(link),
                           audio=SerialAudioDriver(link), link=link)
            self.pub_stop_request = self.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
        else:
            drivers = dict(leg_input=LegStateInput(p.node.leg_state_timeout_s))
        if "head" in drivers:                      # the node drives the head and audio hardware
            drivers["head_gate"] = HeadAudioGate(HeadAudioLimits.from_config(self.cfg))
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
        self._stop_refusal_logged = False             # the first press refused by this system stop
        self.pulses_received = 0                      # pulse messages, whatever became of them
        self._last_fault = None
        self.create_timer(p.node.period_s, self.tick)
        self.get_logger().info(f"atomic node: robot {self.cfg['robot']['model']}, driver {self.driver}, "
                               f"pulse on {T.pulse}")

    def now(self) -> float:
        return self.get_clock().now_s()

    @property
    def rejected_leg_state(self) -> int:
        return self.drive.rejected_leg_state

    # ------------------------------------------------------------------ callbacks
    def on_system_stop(self, stopped: bool, reason: str) -> None:
        if self.ctrl.on_system_stop(self.now(), stopped, self.stop.cause):
            self.get_logger().info("system stop reset: fault cleared")
        if not stopped:
            self._stop_refusal_logged = False
        if stopped:
            self._output_zero()                      # at once, not at the next tick

    def on_head(self, msg) -> None:
        if self.head_gate.on_head(msg.x, msg.y, msg.z, stopped=self.drive.head_held(self.stop.stopped)) \
                == "rejected_non_finite":
            self._reject(self.params.topics.head, "non_finite", f"head ({msg.x}, {msg.y}, {msg.z})")

    def on_audio(self, msg) -> None:
        if self.head_gate.on_audio(msg.x, msg.y) == "rejected_non_finite":
            self._reject(self.params.topics.audio, "non_finite", f"audio ({msg.x}, {msg.y})")

    def _output_zero(self) -> None:
        self.drive.output_zero()
        self.pub_rpm.publish(msgs.new("std_msgs/msg/Float64", data=0.0))
        self.pub_twist.publish(msgs.new("geometry_msgs/msg/Twist"))

    def on_pulse(self, msg) -> None:
        self.pulses_received += 1
        res = self.ctrl.on_pulse(float(msg.linear.x), float(msg.angular.z), self.now(), self.stop.stopped)
        if res == "rejected_system_stop":             # one line per stop, every one counted
            if not self._stop_refusal_logged:
                self._stop_refusal_logged = True
                self.get_logger().warning(
                    f"pulse rejected_system_stop: state {msg.linear.x} direction {msg.angular.z} refused, "
                    f"the system stop holds ({self.stop.reason}); further refusals are counted until it releases")
        elif res.startswith(("rejected", "dropped")):
            self.get_logger().warning(f"pulse {res}: state {msg.linear.x} direction {msg.angular.z}")

    def on_safe_stop(self, msg) -> None:
        if bool(msg.data):
            self.ctrl.safe_stop(self.now())

    def on_reset(self, msg) -> None:
        if bool(msg.data):
            cleared, request = self.drive.reset(self.now())
            self._request_stop(request)
            if cleared:
                self.get_logger().info("fault reset")

    def _request_stop(self, reason: Optional[str]) -> None:
        """A serial link fault requests the system stop (once per fault: :class:`AtomicDrive`)."""
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
        self.pub_twist.publish(msgs.new("geometry_msgs/msg/Twist",
                                        linear=msgs.new("geometry_msgs/msg/Vector3", x=float(out.linear_m_s)),
                                        angular=msgs.new("geometry_msgs/msg/Vector3", z=float(out.angular_rad_s))))
        st = self.ctrl.status()
        self.pub_state.publish(atomic_state_msg(t, st, self.stop.reason))
        fault = self.ctrl.fault
        if fault != self._last_fault:
            self.diag.force_update()
            if fault is not None:
                self.get_logger().error(f"fault latched: {fault.value} ({st['fault_detail']})")
            self._last_fault = fault
        else:
            self.diag.update()

    def _diagnose(self, stat) -> None:
        level, message, values = self.ctrl.diagnostics(self.leg_input is not None and not self.leg_input.ever)
        stat.summary(level, message)
        values.update(driver=self.driver, system_stop=self.stop.reason, pulses_received=self.pulses_received)
        values.update(self.drive.diagnostic_values())
        for k, v in values.items():
            stat.add(k, v)


def main(argv=None):
    run_node(AtomicNode, argv)
