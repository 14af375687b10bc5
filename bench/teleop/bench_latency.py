"""Teleop latency: VR controller pose packet in -> joint command out, through the whole chain.

    .venv/bin/python bench/teleop/bench_latency.py [--seconds 10] [--solver mink|dls]

Two measurements in one run, both wall clock (time.perf_counter), FR3 in MuJoCo:

1. ``realtime`` (in-process): the scripted operator streams packets over UDP (loopback) at 50 Hz from its own
   thread, the loop runs at its configured base rate in real time (sleeping between ticks). The
   latency includes waiting for the next I/O / planner tick (decimation 2 at 100 Hz: 0-20 ms),
   i.e. what an operator experiences. Repeated with all decimations 1 (every task at 100 Hz).
2. ``processing``: lockstep (as ``hri teleop-demo``): each packet is processed in the tick right
   after it is sent, so only the processing time remains (UDP + decode + clutch + planner + IK +
   safety + command).

3. ``Zenoh runtime``: ``ArmTeleopNode`` on a ``ZenohContext`` (router in this process on a free
   loopback port) with the ros2_control robot interface; the robot (MuJoCo FR3, real time) is a
   node in another process: packet -> UDP -> node -> Float64MultiArray joint command over Zenoh
   -> robot process. Same tick waits as ``realtime``.

4. ``stack`` (the default ``teleop.output: cartesian``): packet -> UDP -> ``ArmTeleopNode``
   (Zenoh, event-driven: clutch -> planner -> /interaction/reference on arrival) -> Zenoh ->
   ``InteractionNode`` in another process (the C++ real-time loop thread, MuJoCo inside) -> the
   first 1 kHz tick computing the torque with the new reference. Latency = that tick's end -
   the packet's sendto (the robot process waits for the loop's tick counter to move after
   ``set_target``; perf_counter is CLOCK_MONOTONIC, shared by the processes). Also the same chain
   with the multi-rate input path (packets polled at the base tick, decimations 1/2/2).

Reference: the FR3 keyboard teleop design's keyboard chain, 60-70 ms. Targets: p99 <= 10 ms on the
Zenoh runtime; VR packet -> first torque change p99 <= 10 ms with the default configuration.
"""
from __future__ import annotations

import argparse
import os
import platform
import socket
import sys
import threading
import time
from typing import NamedTuple

import numpy as np

from hri_runtime.config.tree import load_robot_config


def realtime(cfg, seconds: float) -> np.ndarray:
    from hri_arm_teleop.core.scenario import SquareScenario
    from hri_arm_teleop.emulate import ScriptedOperator, sealer
    from hri_arm_teleop.nodes.robots import build_pipeline
    from hri_arm_teleop.sim_robot import SimRobot
    from hri_arm_teleop.vr_link import ArmVrReceiver

    t = cfg["teleop"]
    period = 1.0 / t["loop"]["base_rate_hz"]
    robot = SimRobot.from_config(cfg)
    t0 = time.perf_counter()
    clock = lambda: time.perf_counter() - t0  # noqa: E731
    pipe = build_pipeline(cfg, robot, clock)
    latency: list = []      # input stamp -> joint command of each new input (the pipeline's on_control)
    pipe.on_control = lambda s: None if s.latency_s is None else latency.append(s.latency_s)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    receiver = ArmVrReceiver(rx, clock, cfg)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    op = ScriptedOperator(SquareScenario.from_config(t["demo"]), tx, rx.getsockname(),
                          t["demo"]["packet_rate_hz"], auth=sealer(cfg))
    stop = threading.Event()
    # packet stamp = wall time since t0 at sending, so latency = clock() at command - stamp
    def sender():
        while not stop.is_set():
            now = clock()
            if op.next_t <= now:
                op.send_due(now)
            time.sleep(max(0.0, min(op.next_t - clock(), 0.005)))

    # the operator's stamp is its scheduled time; send_due sends at (or just after) it
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    k = 0
    while clock() < seconds:
        for p in receiver.poll():
            pipe.on_hand(p.position, p.quat_xyzw, p.clutch, source_stamp=op.sent_wall.get(p.stamp_s, t0 + p.stamp_s) - t0)
        pipe.tick()
        robot.sim.advance(period)
        k += 1
        time.sleep(max(0.0, k * period - clock()))
    stop.set()
    th.join()
    return np.asarray(latency)


# ---------------------------------------------------------------------- Zenoh runtime
def _robot_proc(ep, overrides, ready, stop, q):
    """The robot side in its own process, as a ros2_control driver would be: MuJoCo FR3 stepped
    in real time at the controller rate, /joint_states out, joint impedance commands
    (Float64MultiArray) in; records perf_counter (CLOCK_MONOTONIC, shared by processes) and the
    data of every command on arrival."""
    from hri_arm_teleop.core.types import JointCommand
    from hri_arm_teleop.sim_robot import SimRobot
    from hri_runtime import msgs
    from hri_runtime.node import Node
    from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("fr3", overrides=overrides)
    t, ros2 = cfg["teleop"], cfg["teleop"]["robot"]["ros2"]
    period = t["loop"]["controller_decimation"] / t["loop"]["base_rate_hz"]
    robot = SimRobot.from_config(cfg)
    names = list(cfg["joints"]["names"])
    got = []
    ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))

    class SimRobot(Node):
        def __init__(self, **kw):
            super().__init__("bench_sim_robot", **kw)
            self.pub = self.create_publisher("sensor_msgs/msg/JointState", ros2["joint_states_topic"], qos=10)
            self.create_subscription("std_msgs/msg/Float64MultiArray", ros2["impedance_command_topic"],
                                     self.on_cmd, qos=10)
            self.create_timer(period, self.tick)

        def on_cmd(self, m):
            got.append((time.perf_counter(), tuple(float(x) for x in m.data)))
            robot.send_command(JointCommand(robot.sim.t_s, np.asarray(m.data, float)))

        def tick(self):
            robot.sim.advance(period)
            st = robot.get_state()
            self.pub.publish(msgs.new("sensor_msgs/msg/JointState", name=names,
                                      position=np.asarray(st.q, float), velocity=np.asarray(st.dq, float),
                                      effort=np.zeros(0)))

    sup = StopSupervisorNode(context=ctx, cfg=cfg)    # the system stop authority: no heartbeat = STOP
    node = SimRobot(context=ctx)
    ctx.spin_in_background()
    ready.set()
    stop.wait()
    ctx.shutdown()
    node.destroy_node()
    sup.destroy_node()
    ctx.close()
    q.put(got)


class _Rig(NamedTuple):
    router: object
    proc: object
    stop: object
    rq: object
    ctx: object
    node: object


def _start_rig(target, overrides, cfg) -> _Rig:
    """A Zenoh router on a free loopback port, the robot side ``target(ep, overrides, ready, stop,
    queue)`` in a spawned process, and ``ArmTeleopNode`` on a Zenoh context of that router."""
    import multiprocessing as mp

    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, start_router

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    ep = f"tcp/127.0.0.1:{s.getsockname()[1]}"
    s.close()
    router = start_router([ep])
    mpc = mp.get_context("spawn")
    ready, stop, rq = mpc.Event(), mpc.Event(), mpc.Queue()
    proc = mpc.Process(target=target, args=(ep, overrides, ready, stop, rq))
    proc.start()
    ready.wait(60)
    ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))
    return _Rig(router, proc, stop, rq, ctx, ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.vr.port": 0}))


def _play_square(cfg, node, seconds: float):
    """The scripted operator's square over real UDP to ``node`` for ``seconds`` of wall time."""
    from hri_arm_teleop.core.scenario import SquareScenario
    from hri_arm_teleop.emulate import ScriptedOperator, sealer

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        op = ScriptedOperator(SquareScenario.from_config(cfg["teleop"]["demo"]), tx, node.vr_address,
                              cfg["teleop"]["demo"]["packet_rate_hz"], auth=sealer(cfg))
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            op.send_due(time.perf_counter() - t0)
            time.sleep(max(0.0, min(op.next_t - (time.perf_counter() - t0), 0.005)))
        time.sleep(0.3)
    return op


def _finish_rig(rig: _Rig):
    """Stop the robot side, take what it measured, and close everything."""
    rig.stop.set()
    got = rig.rq.get(timeout=30)
    rig.proc.join(10)
    rig.ctx.shutdown()
    rig.node.destroy_node()
    rig.ctx.close()
    rig.router.close()
    return got


def zenoh_chain(overrides, seconds: float):
    """UDP packet -> ArmTeleopNode (ZenohContext, ``teleop.robot.interface: ros2``) -> joint
    command over Zenoh -> the robot process. Latency = arrival of the first command computed from
    a packet - its sendto. Returns (latencies [s], extra)."""
    overrides = list(overrides) + ["teleop.robot.interface=ros2", "teleop.robot.ros2.command_mode=impedance"]
    cfg = load_robot_config("fr3", overrides=overrides)
    rig = _start_rig(_robot_proc, overrides, cfg)
    node = rig.node
    published = {}                                 # q tuple -> source stamp (first command of a packet)
    send = node.robot.send_command
    last_src = [None]

    def record(cmd):
        if cmd.source_stamp is not None and cmd.source_stamp != last_src[0]:
            last_src[0] = cmd.source_stamp
            published.setdefault(tuple(float(x) for x in cmd.q_des), cmd.source_stamp)
        send(cmd)

    node.robot.send_command = record
    rig.ctx.spin_in_background()
    time.sleep(1.5)                                # discovery, first joint states
    op = _play_square(cfg, node, seconds)
    accepted = node.receiver.stats.accepted
    got = _finish_rig(rig)
    lat = []
    for t_arr, q in got:
        src = published.pop(q, None)
        if src is not None and src in op.sent_wall:
            lat.append(t_arr - op.sent_wall[src])
    return np.asarray(lat), {"commands_received": len(got), "packets": op.sent, "accepted": accepted,
                             "safety_holds": node.pipe.safety_holds, "safety_flags": dict(node.pipe.gate.flags)}


# ---------------------------------------------------------------------- the cartesian stack
def _interaction_proc(ep, overrides, ready, stop, q):
    """The interaction node (engine rt: the C++ loop thread with the MuJoCo FR3) and the stop
    supervisor in their own process. Every accepted reference: perf_counter at set_target, then
    the end of the first loop tick after it (tick counter moved) with the torque it wrote."""
    from hri_interaction.nodes.interaction_node import InteractionNode
    from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("fr3", overrides=overrides)
    ctx = ZenohContext(ZenohParams.defaults().with_(connect_endpoints=[ep]))
    sup = StopSupervisorNode(context=ctx, cfg=cfg)
    node = InteractionNode(cfg=cfg, context=ctx)
    got = []
    if node.engine.kind != "rt":
        q.put(("no rt engine", []))
        return
    loop = node.engine.loop
    set_target = node.engine.set_target

    def timed(T):
        ticks = loop.state()["ticks"]
        tau0 = np.asarray(loop.state()["tau"])
        t_in = time.perf_counter()
        ok = set_target(T)
        if ok:
            while True:
                st = loop.state()
                if st["ticks"] > ticks + 1 or (st["ticks"] > ticks and time.perf_counter() - t_in > 0.0011):
                    break
            got.append((tuple(np.round(np.asarray(T)[:3, 3], 9)), t_in, time.perf_counter(),
                        bool(np.any(np.asarray(st["tau"]) != tau0))))
        return ok

    node.engine.set_target = timed
    ctx.spin_in_background()
    ready.set()
    stop.wait()
    s = node.engine.state()
    ctx.shutdown()
    node.destroy_node()
    sup.destroy_node()
    ctx.close()
    q.put(({"missed": s["missed"], "period_error_us": s["period_error_us"], "rt": s["rt"],
            "ticks": s["ticks"]}, got))


def zenoh_stack(overrides, seconds: float, event_driven: bool = True):
    """UDP packet -> ArmTeleopNode (cartesian) -> /interaction/reference over Zenoh -> the
    interaction process -> first torque computed with it. Returns (latencies [s], extra)."""
    overrides = list(overrides) + ["teleop.output=cartesian"]
    cfg = load_robot_config("fr3", overrides=overrides)
    if not event_driven:          # the multi-rate input path: packets wait for the base tick
        cfg = load_robot_config("fr3", overrides=overrides + ["teleop.vr.event_driven=false"])
    rig = _start_rig(_interaction_proc, overrides, cfg)
    node = rig.node
    published = {}                # EE position of the reference -> source stamp (first of a packet)
    send = node.robot.send_pose
    last_src = [None]

    def record(cmd):
        if cmd.source_stamp is not None and cmd.source_stamp != last_src[0]:
            last_src[0] = cmd.source_stamp
            published.setdefault(tuple(np.round(np.asarray(cmd.T)[:3, 3], 9)), cmd.source_stamp)
        send(cmd)

    node.robot.send_pose = record
    rig.ctx.spin_in_background()
    time.sleep(2.0)               # discovery, stop heartbeat, first joint states
    op = _play_square(cfg, node, seconds)
    accepted = node.receiver.stats.accepted
    extra, got = _finish_rig(rig)
    lat, changed = [], 0
    for key, _t_in, t_tick, tau_changed in got:
        src = published.pop(key, None)
        if src is not None and src in op.sent_wall:
            lat.append(t_tick - op.sent_wall[src])
            changed += tau_changed
    if isinstance(extra, dict):
        extra = dict(extra, packets=op.sent, accepted=accepted, references=len(got),
                     matched=len(lat), torque_changed=changed)
    return np.asarray(lat), extra


def processing(cfg) -> np.ndarray:
    from hri_arm_teleop.demo import run_demo
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        s = run_demo(cfg, Path(d), port=0, plot=False, progress=False)
    return s


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def pct(a, q):
    return float(np.percentile(a, q)) * 1e3 if len(a) else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--solver", default="mink", choices=["mink", "dls"])
    ap.add_argument("--skip-zenoh", action="store_true", help="without the Zenoh runtime rows")
    ap.add_argument("--zenoh-only", action="store_true", help="only the Zenoh runtime rows")
    ap.add_argument("--stack-only", action="store_true", help="only the cartesian stack rows")
    args = ap.parse_args(argv)
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; load average at start {_load()}")
    base = [f"teleop.ik.solver={args.solver}", "teleop.output=joint"]
    rows = []
    if args.stack_only:
        args.zenoh_only = True
    for label, ov in [] if args.zenoh_only else [("realtime, decimations 1/2/2 (default)", base),
                      ("realtime, all decimations 1", base + ["teleop.loop.io_decimation=1",
                                                               "teleop.loop.planner_decimation=1"]),
                      ("realtime, base 200 Hz, all decimations 1", base + [
                          "teleop.loop.base_rate_hz=200.0", "teleop.loop.io_decimation=1",
                          "teleop.loop.planner_decimation=1"])]:
        lat = realtime(load_robot_config("fr3", overrides=ov), args.seconds)
        rows.append((label, len(lat), pct(lat, 50), pct(lat, 99), pct(lat, 100)))
    if not args.skip_zenoh:
        for label, ov in [] if args.stack_only else [("Zenoh runtime, decimations 1/2/2 (default)", base),
                          ("Zenoh runtime, base 200 Hz, all decimations 1", base + [
                              "teleop.loop.base_rate_hz=200.0", "teleop.loop.io_decimation=1",
                              "teleop.loop.planner_decimation=1"])]:
            lat, extra = zenoh_chain(ov, args.seconds)
            rows.append((label, len(lat), pct(lat, 50), pct(lat, 99), pct(lat, 100)))
            print(f"  {label}: {extra}", flush=True)
    if not args.skip_zenoh:
        for label, ev in (("stack: packet -> first torque (default, event-driven)", True),
                          ("stack: packet -> first torque (multi-rate 1/2/2)", False)):
            lat, extra = zenoh_stack([], args.seconds, event_driven=ev)
            rows.append((label, len(lat), pct(lat, 50), pct(lat, 99), pct(lat, 100)))
            print(f"  {label}: {extra}", flush=True)
    if not args.zenoh_only:
        s = processing(load_robot_config("fr3", overrides=base))
        rows.append(("processing only (lockstep demo)", s["packets_sent"],
                     s["latency_wall_p50_s"] * 1e3, s["latency_wall_p99_s"] * 1e3, float("nan")))
    print(f"{'chain (IK ' + args.solver + ')':<48} {'n':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for label, n, p50, p99, mx in rows:
        print(f"{label:<48} {n:>6} {p50:>8.2f} {p99:>8.2f} {mx:>8.2f}")
    print(f"load average at the end: {_load()}")
    print("reference: the FR3 keyboard teleop design keyboard chain 60-70 ms; target p99 <= 10 ms (Zenoh runtime)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
