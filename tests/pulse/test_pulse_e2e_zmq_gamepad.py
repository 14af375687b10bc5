"""The ZeroMQ carrier (same packets, same core) and the gamepad node, end to end."""
import time

import pytest
import zmq
from hri_pulse import emulator
from hri_pulse.core.feedback import decode_pose
from hri_runtime import msgs
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node



@pytest.fixture
def zrig(pulse_cfg, recorder_cls):
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode
    ctx = InprocContext(start_time_s=50.0)
    node = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0, "pulse.zmq.enabled": True,
                                                    "pulse.zmq.sub_endpoint": "tcp://127.0.0.1:*",
                                                    "pulse.zmq.pub_endpoint": "tcp://127.0.0.1:*"})
    rec = recorder_cls(pulse_cfg["topics"], context=ctx)
    zc = zmq.Context.instance()
    pub = zc.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.connect(node.zmq.sub.getsockopt(zmq.LAST_ENDPOINT).decode())
    sub = zc.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(node.zmq.pub.getsockopt(zmq.LAST_ENDPOINT).decode())
    time.sleep(0.2)          # PUB/SUB connection set-up (slow joiner); nothing timed is asserted
    yield ctx, node, rec, pub, sub
    pub.close(0)
    sub.close(0)
    node.destroy_node()
    rec.destroy_node()


def test_zmq_carrier_same_validation_sequence_and_pulses(zrig, pulse_cfg):
    ctx, node, rec, pub, sub = zrig
    sc = {"duration_s": 6.0, "every_s": 0.6, "impairments": {"loss": 0.2, "duplicate": 0.2, "garbage": 0.1}}
    plan = emulator.plan(sc, pulse_cfg["emulator"], seed=11)
    step_s = pulse_cfg["node"]["tick_period_s"]          # one node tick per step
    t0, i, dg = ctx.now_s(), 0, plan.datagrams
    while ctx.now_s() < t0 + 6.5:
        now = ctx.now_s() - t0
        n = 0
        while i < len(dg) and dg[i].t_s <= now + 1e-9:
            pub.send(dg[i].data)
            i += 1
            n += 1
        got = 0
        deadline = time.monotonic() + 1.0
        while n and node.zmq.sub.poll(0) == 0 and time.monotonic() < deadline:
            time.sleep(0.0005)                # wait for TCP delivery before the node drains
        ctx.spin_for(step_s)
    exp = [(plan.actions[k].state, plan.actions[k].angular)
           for k in plan.executed_actions(pulse_cfg["check"]["messages"], pulse_cfg["check"]["min_messages"])]   # whole pulses only
    pulses = rec.pulses()
    assert [(s, d) for _, s, d, _ in pulses] == exp and all(n == 3 for *_, n in pulses)
    lr = node.core.link
    assert lr.owner == "zmq"
    assert lr.rejected["duplicate"] > 0 and lr.rejected["bad_size"] > 0
    fb = []
    while sub.poll(0):
        fb.append(sub.recv())
    poses = [decode_pose(d) for d in fb if d[:4] == b"TNPO"]
    assert len(poses) >= 0.8 * 6.0 * pulse_cfg["health"]["pose_send_rate_hz"]


class JoyDriver(Node):
    def __init__(self, topic, **kw):
        super().__init__("fake_joy", **kw)     # fake: stands in for the `joy` node (no device here)
        self.pub = self.create_publisher("sensor_msgs/msg/Joy", topic, qos=10)

    def press(self, *idx, n=11):
        b = [0] * n
        for i in idx:
            b[i] = 1
        self.pub.publish(msgs.new("sensor_msgs/msg/Joy", axes=[0.0] * 6, buttons=b))


def test_gamepad_joy_same_pulses_as_vr(pulse_cfg, recorder_cls):
    from hri_pulse.nodes.gamepad_node import GamepadNode
    ctx = InprocContext(start_time_s=0.0)
    node = GamepadNode(context=ctx)
    rec = recorder_cls(pulse_cfg["topics"], context=ctx)
    joy = JoyDriver(pulse_cfg["topics"]["joy"], context=ctx)
    jb = pulse_cfg["gamepad"]["joy_buttons"]
    ctx.spin_for(0.1)
    for _ in range(50):                        # X held 2 s
        joy.press(jb["x"])
        ctx.spin_for(0.04)
    joy.press()
    ctx.spin_for(0.3)
    joy.press(jb["b"], jb["lb"])               # B + LB: state 3, left
    ctx.spin_for(0.1)
    joy.press(jb["y"])                         # 100 ms later: debounced (dropped, counted)
    ctx.spin_for(0.5)
    joy.press(jb["a"])                         # A: idle, no pulse
    ctx.spin_for(0.3)
    joy.pub.publish(msgs.new("sensor_msgs/msg/Joy", axes=[], buttons=[1]))   # too few buttons
    ctx.spin_for(0.2)
    assert [(s, d, n) for _, s, d, n in rec.pulses()] == [(1, 0, 3), (3, -1, 3)]
    assert node.core.pulse.debounced == 1
    assert node.core.mapper.bad_joy == 1
    # exact timing of the first pulse
    t1 = rec.pulses()[0][0]
    seq = [(round(t - t1, 6), s) for t, s, _ in rec.cmd if t1 - 1e-9 <= t <= t1 + 0.125]
    assert seq == [(0.0, 1), (0.04, 1), (0.08, 1), (0.12, 0)]
    node.destroy_node()


def test_gamepad_node_refuses_an_input_it_does_not_serve():
    """pulse.node.input keyboard (a launch's input:=keyboard on Tino): one clear error, no node."""
    from hri_pulse.nodes.gamepad_node import GamepadNode
    from hri_runtime.parameter import ParameterError
    ctx = InprocContext(start_time_s=0.0)
    with pytest.raises(ParameterError, match="pulse.node.input"):
        GamepadNode(context=ctx, parameters={"pulse.node.input": "keyboard"})
