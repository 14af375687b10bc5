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

import numpy as np
from hri_runtime import msgs
from hri_runtime.diagnostics import Updater
from hri_runtime.geometry import time_from_seconds
from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED
from hri_safety.nodes.stop_listener import STOP_REQUEST_TOPIC, STOP_REQUEST_TYPE, StopListener

from hri_atomic_motion.core import AtomicController, AtomicParams, LegReading, LegStateInput

STATE_MSG = "hri_interfaces/msg/AtomicState"


def atomic_state_msg(t_s: float, st: dict, system_stop: str = ""):
    """``hri_interfaces/msg/AtomicState`` of ``AtomicController.status()`` at time ``t_s``;
    ``system_stop``: the reason of the system stop the node obeys ("" = none)."""
    return msgs.new(STATE_MSG, stamp=time_from_seconds(t_s), state=int(st["state"]),
                    direction=int(st.get("direction", 0)),
                    locked=bool(st["locked"]), fault=st["fault"] or "", system_stop=system_stop,
                    leg_phase=str(st.get("leg_phase", "")),
                    base_phase=str(st.get("base_phase", "")), queue=int(st.get("queue", 0)))


def leg_state_msg(t_s: float, ticks: int, home: bool, rpm: float):
    return msgs.new("sensor_msgs/msg/JointState",
                    header=msgs.new("std_msgs/msg/Header", stamp=time_from_seconds(t_s), frame_id=""),
                    name=["leg", "leg_home_switch"], position=np.array([float(ticks), 1.0 if home else 0.0]),
                    velocity=np.array([float(rpm), 0.0]), effort=np.zeros(0))


def parse_leg_state(msg) -> Optional[LegReading]:
    """JointState -> LegReading, None when malformed (names missing, non-finite, non-integer ticks)."""
    try:
        names = list(msg.name)
        pos = [float(v) for v in msg.position]
        i = names.index("leg")
        ticks = pos[i]
        home = pos[names.index("leg_home_switch")] > 0.5
        vel = [float(v) for v in msg.velocity]
        rpm = vel[i] if len(vel) > i else 0.0
    except (ValueError, IndexError, TypeError, AttributeError):
        return None
    if not (abs(ticks) < 1e9 and ticks == round(ticks)):
        return None
    return LegReading(int(ticks), home, rpm if rpm == rpm else 0.0)


class AtomicNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("atomic", **kw)
        self.cfg = declare_config(self, ("atomic", "safety.stop"), cfg, robot="tino")
        self.params = p = AtomicParams.from_config(self.cfg["atomic"])
        self.driver = p.node.driver
        self.ctrl = AtomicController(p)
        self.sim = self.leg_drv = self.base_drv = self.link = self.leg_input = None
        if self.driver == "sim":
            from hri_sim.tino import TinoSim, TinoSimParams

            from hri_atomic_motion.sim_drivers import MujocoBaseDriver, MujocoLegDriver

            self.sim = TinoSim(TinoSimParams.from_config(self.cfg["atomic"]))
            self.leg_drv, self.base_drv = MujocoLegDriver(self.sim), MujocoBaseDriver(self.sim)
            self._sim_offset = self.now() - self.sim.t_s
        elif self.driver == "serial":
            from hri_atomic_motion.serial_driver import SerialBaseDriver, SerialLegDriver, SerialLink

            self.link = link = SerialLink.open(p.serial, clock=self.now)
            self.leg_drv, self.base_drv = SerialLegDriver(link), SerialBaseDriver(link)
            self.pub_stop_request = self.create_publisher(STOP_REQUEST_TYPE, STOP_REQUEST_TOPIC, qos=10)
        else:
            self.leg_input = LegStateInput(p.node.leg_state_timeout_s)
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
        return self.leg_input.rejected if self.leg_input is not None else 0

    # ------------------------------------------------------------------ callbacks
    def on_system_stop(self, stopped: bool, reason: str) -> None:
        if self.ctrl.on_system_stop(self.now(), stopped, self.stop.cause):
            self.get_logger().info("system stop reset: fault cleared")
        if not stopped:
            self._stop_refusal_logged = False
        if stopped:
            self._output_zero()                      # at once, not at the next tick

    def _output_zero(self) -> None:
        if self.leg_drv is not None:
            self.leg_drv.command_rpm(0.0)
            self.base_drv.command_twist(0.0, 0.0)
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
        if not bool(msg.data):
            return
        if self.link is not None and self.link.fault is not None and not self.link.reset():
            return                                    # device still absent: the fault stays
        self._check_device(self.now())
        if self.ctrl.reset(self.now()):
            self.get_logger().info("fault reset")

    def _check_device(self, t: float) -> None:
        """A serial link fault (stall / vanished device, serial_driver.SerialLink) latches the
        controller fault ``device_fault`` and requests the system stop, once per fault."""
        if self.link is None:
            return
        fault = self.link.fault
        if self.ctrl.on_device(t, None if fault is None else f"serial {fault}"):
            self.pub_stop_request.publish(msgs.new(STOP_REQUEST_TYPE, source="serial_fault",
                                                   reason=f"atomic serial {fault}"[:200]))

    def on_leg_state(self, msg) -> None:
        if not self.leg_input.on_reading(parse_leg_state(msg), self.now()):
            self.get_logger().warning("leg_state rejected (malformed)")

    # ------------------------------------------------------------------ loop
    def _read_leg(self, t: float) -> Optional[LegReading]:
        if self.leg_input is not None:
            return self.leg_input.read(t)
        try:
            return self.leg_drv.read()
        except RuntimeError:
            return None

    def tick(self) -> None:
        t = self.now()
        if self.sim is not None:      # lockstep: advance the embedded simulation to the node clock
            n = int(round((t - self._sim_offset - self.sim.t_s) / self.sim.model.opt.timestep))
            if n > 0:
                self.sim.step(n)
        r = self._read_leg(t)
        self._check_device(t)
        out = self.ctrl.control(t, r, self.stop.stopped, self.stop.cause)
        if self.leg_drv is not None:
            self.leg_drv.command_rpm(out.leg_rpm)
            self.base_drv.command_twist(out.linear_m_s, out.angular_rad_s)
            if r is not None:
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
        values.update(driver=self.driver, system_stop=self.stop.reason, pulses_received=self.pulses_received,
                      rejected_leg_state=self.rejected_leg_state)
        if self.leg_input is not None:
            values.update(leg_states_received=self.leg_input.received)
        if self.link is not None:
            values.update(self.link.status())
        for k, v in values.items():
            stat.add(k, v)


def main(argv=None):
    run_node(AtomicNode, argv)
