"""No live node keeps per-tick (per-message) history: after N and after 10 N ticks in lockstep,
no container reachable from a node (or the arm teleop pipeline) is larger, except a deque bounded
by its ``maxlen``; what a plot or a test needs is recorded outside the node (the arm chain:
the recording of the nodes' topics; a test of the core chain keeps the ticks the pipeline offers
to its ``on_control`` hook). The nodes of
launch/fr3.launch.yaml (``output:=joint``: arm_teleop with its MuJoCo arm) and launch/tino.launch.yaml
on the in-process runtime, driven by their scripted operators. The walk sees Python objects (C++
state such as the interaction loop's is not walked); the soak benchmark (bench/soak) measures the
resident memory of the real processes, C++ included."""
from __future__ import annotations

from collections import deque

import pytest

from hri_runtime.config.tree import load_robot_config
from hri_arm_teleop.core.scenario import SquareScenario
from hri_arm_teleop.nodes.robots import simulated_arm

CONTAINERS = (list, dict, set, deque)
SKIP = {"context", "_context", "executor"}   # the runtime's shared machinery, not the node's state


def container_sizes(root, max_depth: int = 8, skip: frozenset = frozenset()) -> dict[str, tuple[int, bool]]:
    """``path -> (len, bounded)`` of every list / dict / set / deque reachable from ``root``
    through attributes and container items of this workspace's objects (modules ``hri_*``);
    ``bounded``: a deque with a maxlen. Attributes named in ``skip`` are not followed."""
    out: dict[str, tuple[int, bool]] = {}
    seen: set[int] = set()

    def ours(x) -> bool:
        return type(x).__module__.split(".")[0].startswith("hri_")

    def walk(x, path: str, depth: int) -> None:
        if id(x) in seen or depth > max_depth:
            return
        seen.add(id(x))
        if isinstance(x, CONTAINERS):
            out[path] = (len(x), isinstance(x, deque) and x.maxlen is not None)
            items = x.items() if isinstance(x, dict) else enumerate(list(x)[:50])
            for k, v in items:
                if ours(v) or isinstance(v, CONTAINERS):
                    walk(v, f"{path}[{k!r}]", depth + 1)
            return
        if not ours(x):
            return
        attrs = dict(getattr(x, "__dict__", {}))
        for cls in type(x).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if hasattr(x, name):
                    attrs.setdefault(name, getattr(x, name))
        for name, v in attrs.items():
            if name in SKIP or name in skip:
                continue
            if hasattr(v, "__self__") and ours(v.__self__):    # a bound method: its object
                v = v.__self__
            if ours(v) or isinstance(v, CONTAINERS):
                walk(v, f"{path}.{name}", depth + 1)

    walk(root, type(root).__name__, 0)
    return out


def grown(before: dict, after: dict) -> dict:
    """The unbounded containers larger after than before (new ones count from 0)."""
    return {p: (before.get(p, (0, b))[0], n) for p, (n, b) in after.items()
            if not b and n > before.get(p, (0, b))[0]}


def test_container_sizes_sees_a_growing_list():
    """The check itself: lists appended per tick are found (a recorder attached to the pipeline,
    as the old in-pipeline ``trace`` was): 20 controller ticks in 0.2 s, 40 in 0.4 s."""
    cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])
    _, pipe, ls = simulated_arm(cfg)
    pipe.samples = []                         # a per-tick history kept on the pipeline
    pipe.on_control = pipe.samples.append
    ls.run_until(0.2)
    s1 = container_sizes(pipe)
    ls.run_until(0.4)
    g = grown(s1, container_sizes(pipe))
    assert g["ArmTeleopPipeline.samples"] == (20, 40)


def square_operator(pipe, cfg):
    """The scripted square, repeated for ever (clutch strokes: TRACK/HOLD changes every few s)."""
    scenario = SquareScenario.from_config(cfg["teleop"]["demo"])
    period = 1.0 / cfg["teleop"]["demo"]["packet_rate_hz"]
    next_t = [0.0]

    def operator(t):
        if t + 1e-9 >= next_t[0]:
            s = scenario.sample(t % scenario.duration_s)
            pipe.on_hand(s.position, s.quat_xyzw, s.clutch, source_stamp=t)
            next_t[0] += period
    return operator, scenario


@pytest.mark.parametrize("output", ["joint", "cartesian"])
def test_pipeline_memory_does_not_grow_with_ticks(output):
    if output == "joint":
        cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])
        _, pipe, ls = simulated_arm(cfg)
    else:      # the real nodes composed in one process (the arm node's pipeline and robot)
        from hri_arm_teleop.stack import ArmStack

        cfg = load_robot_config("fr3", overrides=["teleop.output=cartesian"])
        stack = ArmStack(cfg, jitter=False)
        pipe = stack.pipe
        ls = stack.lockstep
    skip = frozenset()
    operator, scenario = square_operator(pipe, cfg)
    # warm-up: the first clutch stroke (engage, draw, release, reposition); then N = 1 s of
    # ticks and 10 N: the second stroke and the start of the third
    warm = scenario.settle_s + scenario.stroke_s
    ls.run_until(warm + 1.0, operator)
    s1 = container_sizes(pipe, skip=skip)
    ls.run_until(warm + 10.0, operator)
    s10 = container_sizes(pipe, skip=skip)
    assert pipe.clutch.counters.engagements >= 2 and pipe.clutch.counters.releases >= 2   # it kept drawing
    assert len(s1) > 5                                                  # the walk saw the chain
    assert grown(s1, s10) == {}
    assert pipe.on_control is None                                      # nothing recorded
    if output == "cartesian":
        stack.close()


def _vr_packet(pose, k: int, t: float) -> bytes:
    from hri_arm_teleop.core import vr_packet as vp

    return vp.encode(vp.ControllerPose(sequence=k, stamp_s=t, position=tuple(pose.position),
                                       quat_xyzw=tuple(pose.quat_xyzw), clutch=pose.clutch,
                                       buttons=vp.BUTTON_GRIP if pose.clutch else 0,
                                       grip=1.0 if pose.clutch else 0.0))


def test_arm_teleop_node_memory_does_not_grow_with_ticks():
    """arm_teleop (joint output, its MuJoCo arm) + the stop supervisor; the square over real UDP."""
    import socket

    from hri_runtime.inproc import InprocContext
    from hri_arm_teleop.nodes.arm_teleop_node import ArmTeleopNode
    from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode

    cfg = load_robot_config("fr3", overrides=["teleop.output=joint"])
    ctx = InprocContext()
    sup = StopSupervisorNode(cfg=cfg, context=ctx)
    node = ArmTeleopNode(cfg=cfg, context=ctx, parameters={"teleop.vr.port": 0})
    scenario = SquareScenario.from_config(cfg["teleop"]["demo"])
    period = 1.0 / cfg["teleop"]["demo"]["packet_rate_hz"]
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    k = [0]

    def run(seconds: float) -> None:
        for _ in range(int(round(seconds / period))):
            t = k[0] * period
            tx.sendto(_vr_packet(scenario.sample(t % scenario.duration_s), k[0], t), node.vr_address)
            k[0] += 1
            ctx.spin_for(period)
    try:
        run(scenario.settle_s + scenario.stroke_s)    # warm-up: the first stroke, as above
        run(1.0)
        s1 = {**container_sizes(node), **container_sizes(sup)}
        run(9.0)
        s10 = {**container_sizes(node), **container_sizes(sup)}
        accepted = node.receiver.stats.accepted
    finally:
        tx.close()
        node.destroy_node()
        sup.destroy_node()
    assert node.pipe.clutch.counters.engagements >= 2 and node.pipe.clutch.counters.releases >= 2
    assert accepted > 0.9 * k[0]
    assert grown(s1, s10) == {}


def test_tino_nodes_memory_do_not_grow_with_ticks():
    """vr_interface, atomic, tino_sim and the stop supervisor (hri_atomic_motion.e2e's chain),
    the emulated headset sending an action every second."""
    from hri_pulse import emulator
    from hri_atomic_motion.e2e import build

    cfg = load_robot_config("tino")
    warm, n = 6.0, 1.0
    plan = emulator.plan({"duration_s": warm + 10 * n + 1.0, "every_s": 1.0}, cfg["pulse"]["emulator"])
    chain = build(cfg)
    hs = chain.headset(plan)
    nodes = (chain.vr, chain.atomic, chain.sim, chain.supervisor)
    sizes = lambda: {k: v for nd in nodes for k, v in container_sizes(nd).items()}  # noqa: E731
    try:
        hs.run(warm)
        hs.run(n)
        s1 = sizes()
        hs.run(9 * n)
        s10 = sizes()
        movements = chain.atomic.ctrl.movements
    finally:
        chain.close()
    assert movements >= 5
    assert grown(s1, s10) == {}
