"""Two machines over a secured Zenoh network (docs/deployment.md), here on loopback ports: the
robot side and the operator side each run `hri router`, linked router-to-router over Zenoh's TLS
with client certificates (mTLS) and access control by certificate common name. The teleop chain
crosses the link: Unity-style pulse packets over real UDP -> the real `vr_interface_node` process
(operator side) -> operator router -> TLS link -> robot router -> a robot-side subscriber of
/base_cmd. An operator sets a robot-side parameter; an observer may read but neither command nor
tune; an identity in no list gets nothing; a client without a certificate of the deployment's CA
cannot even connect. Certificates are generated here with openssl. Waits are bounded; where
nothing must arrive, the test waits until a later permitted message has arrived."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import zenoh  # noqa: F401  (required: a missing install fails here)

from hri_runtime import msgs  # noqa: E402
from hri_runtime.context import TransportUnavailableError  # noqa: E402
from hri_runtime.node import Node  # noqa: E402
from hri_runtime.parameter_service import register_interfaces, to_value_msg  # noqa: E402
from hri_runtime.impl.zenoh_backend import ZenohContext, ZenohParams, router_answers  # noqa: E402

from ..stack_launch import free_port, wait_for  # noqa: E402  (bounded waits, free ports)

HRI = [sys.executable, "-m", "hri_runtime.cli.main"]
WAIT_S = 60.0
pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")


def make_pki(d: Path, names, ca="ca"):
    """A CA and one certificate per name (CN = name, SAN 127.0.0.1/localhost), as in
    docs/deployment.md. Returns {name: (cert, key)} and the CA certificate."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={ca}",
        "-keyout", str(d / f"{ca}.key"), "-out", str(d / f"{ca}.pem"))
    ext = d / "ext.cnf"
    ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                   "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n")
    out = {}
    for n in names:
        key, csr, pem = d / f"{n}.key", d / f"{n}.csr", d / f"{n}.pem"
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={n}", "-keyout", str(key), "-out", str(csr))
        run("x509", "-req", "-in", str(csr), "-CA", str(d / f"{ca}.pem"), "-CAkey", str(d / f"{ca}.key"),
            "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(pem))
        out[n] = (str(pem), str(key))
    return out, str(d / f"{ca}.pem")


def tls(ca, cert_key):
    return {"root_ca_certificate": ca, "certificate": cert_key[0], "private_key": cert_key[1],
            "enable_mtls": True, "verify_name_on_connect": True}


def router(name, ca, cert_key, listen, connect=()):
    args = HRI + ["router", "--set", f"runtime.zenoh.tls.root_ca_certificate={ca}",
                  "--set", f"runtime.zenoh.tls.certificate={cert_key[0]}",
                  "--set", f"runtime.zenoh.tls.private_key={cert_key[1]}",
                  "--set", "runtime.zenoh.access_control.enabled=true",
                  "--set", "runtime.zenoh.access_control.observer_common_names=[observer]"]
    for ep in listen:
        args += ["--listen", ep]
    for ep in connect:
        args += ["--connect", ep]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert wait_for(lambda: router_answers(listen[0], 0.2) or p.poll() is not None), name
    assert p.poll() is None, f"{name} router: {p.stdout.read()}"
    return p


def stop_proc(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.stdout.read() if p.stdout else ""


class Probe(Node):
    """A node of one side: records /base_cmd (linear.x, angular.z) and has a parameter 'gain'."""

    def __init__(self, name, **kw):
        super().__init__(name, **kw)
        self.lock = threading.Lock()
        self.cmd = []
        self.declare_parameter("gain", 1.0, on_set=lambda v: None)   # applied at once
        self.create_subscription("geometry_msgs/msg/Twist", "/base_cmd", self.on_cmd, qos=100)
        self.pub = self.create_publisher("geometry_msgs/msg/Twist", "/base_cmd", qos=10)
        self.resets = 0

        def on_reset(req, resp):
            self.resets += 1
            resp.success = True
            return resp

        if name == "robot_probe":      # stands in for the stop supervisor's reset
            self.create_service("std_srvs/srv/Trigger", "/safety/reset", on_reset)

    def call_reset(self, timeout_s):
        cli = self.create_client("std_srvs/srv/Trigger", "/safety/reset")
        req_t, _ = msgs.srv_types("std_srvs/srv/Trigger")
        try:
            return cli.call(msgs.new(req_t), timeout_s=timeout_s).success
        except Exception:  # noqa: BLE001  (no reply: refused by the router)
            return None

    def on_cmd(self, m):
        with self.lock:
            self.cmd.append((m.linear.x, m.angular.z))

    def states(self):
        with self.lock:
            return [s for s, _ in self.cmd]


def set_gain(node, target, value, timeout_s):
    register_interfaces()
    req_t, _ = msgs.srv_types("rcl_interfaces/srv/SetParameters")
    cli = node.create_client("rcl_interfaces/srv/SetParameters", f"{target}/set_parameters")
    par = msgs.new("rcl_interfaces/msg/Parameter", name="gain", value=to_value_msg(value))
    try:
        return cli.call(msgs.new(req_t, parameters=[par]), timeout_s=timeout_s).results[0].successful
    except Exception:  # noqa: BLE001  (no reply: refused by the router)
        return None


def unity_packet(state, angular, seq):
    return struct.pack("<fffiiffi", 0.0, 0.0, 0.0, state, angular, 0.0, 0.0, seq)


def pulses(states):
    """[(state, n)] of consecutive non-zero runs in the /base_cmd stream."""
    out = []
    for s in states:
        if s == 0:
            if out and out[-1][2]:
                out[-1][2] = False
            continue
        if out and out[-1][2] and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1, True])
    return [(int(s), n) for s, n, _ in out]


def test_two_routers_mtls_and_access_control(tmp_path):
    pki, ca = make_pki(tmp_path, ["robot", "operator", "observer", "intruder"])
    rogue, _ = make_pki(tmp_path, ["operator-rogue"], ca="rogue-ca")
    robot_tcp, robot_tls = f"tcp/127.0.0.1:{free_port()}", f"tls/127.0.0.1:{free_port()}"
    op_tcp, op_tls = f"tcp/127.0.0.1:{free_port()}", f"tls/127.0.0.1:{free_port()}"
    procs, ctxs = [], []
    base = ZenohParams.defaults().with_(service_timeout_s=3.0)

    def ctx(**kw):
        c = ZenohContext(base.with_(**kw))
        ctxs.append(c)
        return c

    try:
        procs.append(router("robot", ca, pki["robot"], [robot_tcp, robot_tls]))
        procs.append(router("operator", ca, pki["operator"], [op_tcp, op_tls], connect=[robot_tls]))
        # robot side: this machine's node on the robot router's loopback listener
        rctx = ctx(connect_endpoints=[robot_tcp])
        robot = Probe("robot_probe", context=rctx)
        rctx.spin_in_background()
        # operator side: the real vr_interface node on the operator router, fed over UDP
        udp_port = free_port(socket.SOCK_DGRAM)
        env = dict(os.environ, HRI_TRANSPORT="zenoh", HRI_ZENOH_CONNECT=f"[{op_tcp}]")
        vr = subprocess.Popen(HRI + ["run", "hri_pulse", "vr_interface_node", "--ros-args", "-p",
                                     f"pulse.udp.port:={udp_port}"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        procs.append(vr)
        octx = ctx(connect_endpoints=[op_tcp])
        op = Probe("operator_console", context=octx)
        octx.spin_in_background()
        # the chain reaches across both routers: vr_interface's /base_cmd publisher is seen robot-side
        assert wait_for(lambda: "/operator_console" in rctx.graph().nodes and
                          any(p.endswith("vr_interface") for p in rctx.graph().publishers.get("/base_cmd", [])))
        # pulses: the headset presses 1, then 2 right, then 3 left (each held 5 packets, 0.6 s apart)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        seq = 0
        for state, ang in [(0, 0)] * 10 + ([(1, 0)] * 5 + [(0, 0)] * 10) + ([(2, 1)] * 5 + [(0, 0)] * 10) \
                + ([(3, -1)] * 5 + [(0, 0)] * 10):
            sock.sendto(unity_packet(state, ang, seq), ("127.0.0.1", udp_port))
            seq += 1
            time.sleep(0.04)
        assert wait_for(lambda: [s for s, _ in pulses(robot.states())] == [1, 2, 3])
        assert pulses(robot.states()) == [(1, 3), (2, 3), (3, 3)]     # each command exactly once, 3 cycles
        # the operator tunes a robot-side parameter through both routers
        assert set_gain(op, "/robot_probe", 2.5, 10.0) is True
        assert robot.get_parameter("gain").value == 2.5
        assert op.call_reset(10.0) is True and robot.resets == 1      # and may reset the stop

        # an observer (CN in observer_common_names) on the operator router's TLS listener: reads ...
        obs_ctx = ctx(connect_endpoints=[op_tls], tls=tls(ca, pki["observer"]))
        obs = Probe("observer", context=obs_ctx)
        obs_ctx.spin_in_background()
        assert wait_for(lambda: "/robot_probe" in obs_ctx.graph().nodes)
        # ... but neither commands nor tunes
        assert wait_for(lambda: obs.pub.get_subscription_count() > 0)
        for _ in range(5):
            obs.pub.publish(msgs.new("geometry_msgs/msg/Twist", linear=msgs.new("geometry_msgs/msg/Vector3", x=7.0)))
        assert set_gain(obs, "/robot_probe", 9.0, 3.0) is not True
        assert obs.call_reset(3.0) is None                          # nor reset the stop
        # an identity in no list (same CA): nothing at all
        int_ctx = ctx(connect_endpoints=[robot_tls], tls=tls(ca, pki["intruder"]))
        intruder = Probe("intruder", context=int_ctx)
        int_ctx.spin_in_background()
        for _ in range(5):
            intruder.pub.publish(msgs.new("geometry_msgs/msg/Twist", linear=msgs.new("geometry_msgs/msg/Vector3", x=8.0)))
        assert set_gain(intruder, "/robot_probe", 8.0, 3.0) is not True
        # a permitted command after the refused ones: once it is there, the refused ones never will be
        n = len(robot.states())
        op.pub.publish(msgs.new("geometry_msgs/msg/Twist", linear=msgs.new("geometry_msgs/msg/Vector3", x=5.0)))
        assert wait_for(lambda: 5.0 in robot.states()[n:])
        assert 7.0 not in robot.states() and 8.0 not in robot.states()
        assert robot.get_parameter("gain").value == 2.5 and robot.resets == 1
        assert "/robot_probe" not in intruder.context.graph().nodes     # it cannot even see the robot
        # no certificate, or one of another CA: the TLS listeners refuse the connection
        for bad in (tls(ca, rogue["operator-rogue"]) | {"root_ca_certificate": ca},
                    {"root_ca_certificate": ca, "certificate": "", "private_key": "", "enable_mtls": True}):
            with pytest.raises(TransportUnavailableError):
                ctx(connect_endpoints=[robot_tls], tls=bad)
    finally:
        for c in ctxs:
            try:
                c.shutdown()
                c.close()
            except Exception:  # noqa: BLE001
                pass
        outs = [stop_proc(p) for p in reversed(procs)]
    assert "TLS with client certificates, access control on" in "".join(outs)
