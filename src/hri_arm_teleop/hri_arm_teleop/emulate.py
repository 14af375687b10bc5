"""A scripted VR operator streaming controller-pose packets (v1) over real UDP.

``ScriptedOperator`` turns a scenario (``SquareScenario``: a hand drawing a square with clutch
strokes) into packets at ``packet_rate_hz``; the caller decides the time base: the lockstep demo
calls ``send_due(t_sim)`` every tick, ``main`` streams in real time. This is the arm extension of
``hri vr-emulate`` (hri_pulse): run it as ``hri arm-emulate`` or call ``main(argv)``. With
``pulse.auth.mode: required`` in the config it loads (e.g. ``HRI_VR_AUTH=required
HRI_VR_KEY_FILE=<file>``) every packet is sealed (``hri_pulse.core.auth``; a new session per run).
``--namespace left`` streams to the arm of the stack in namespace ``/left`` (a dual-arm cell,
launch/fr3_dual.launch.yaml): the port and address its ``arm_teleop`` node reports in its
parameters ``teleop.vr.port`` / ``teleop.vr.bind_address``, read through the node's parameter
services on the ROS graph (``HRI_TRANSPORT``).
"""
from __future__ import annotations

import argparse
import socket
import sys
import time
from typing import Optional

from hri_arm_teleop.core import vr_packet as vp
from hri_arm_teleop.core.scenario import SquareScenario
from hri_arm_teleop.parameters_gen import TeleopVrParams
from hri_pulse.core.auth import AuthParams, Sealer, new_session
from hri_runtime.errors import add_robot_argument, namespace, port as port_arg, positive_float


class ScriptedOperator:
    """``loop``: the scenario repeats without end (the hand is back at its home pose when it ends);
    stamps and sequence numbers keep increasing. ``sent_wall`` (stamp -> wall time of the send,
    for the lockstep demo's wall latency) is kept only with ``keep_send_times``: a looping operator
    streams for hours."""

    def __init__(self, scenario: SquareScenario, sock: socket.socket, address: tuple,
                 packet_rate_hz: float, start_sequence: int = 0, auth: Optional[Sealer] = None,
                 loop: bool = False, keep_send_times: bool = True):
        """``auth``: seal every packet (``pulse.auth`` required; :func:`sealer`)."""
        self.scenario = scenario
        self.auth = auth
        self.loop = loop
        self.keep_send_times = keep_send_times
        self.sock = sock
        self.address = address
        self.period_s = 1.0 / packet_rate_hz
        self.sequence = start_sequence
        self.next_t = 0.0
        self.sent = 0
        self.sent_wall: dict[float, float] = {}   # stamp_s -> perf_counter at send

    def packet_at(self, t: float) -> bytes:
        s = self.scenario.sample(t % self.scenario.duration_s if self.loop else t)
        pose = vp.ControllerPose(sequence=self.sequence, stamp_s=t, position=tuple(s.position),
                                 quat_xyzw=tuple(s.quat_xyzw), clutch=s.clutch,
                                 buttons=vp.BUTTON_GRIP if s.clutch else 0,
                                 grip=1.0 if s.clutch else 0.0)
        data = vp.encode(pose)
        return data if self.auth is None else self.auth.seal(data)

    def send_due(self, t: float) -> int:
        """Send every packet due at or before ``t``; returns how many were sent."""
        n = 0
        while self.next_t <= t + 1e-9:
            data = self.packet_at(self.next_t)
            if self.keep_send_times:
                self.sent_wall[self.next_t] = time.perf_counter()
            self.sock.sendto(data, self.address)
            self.sequence = (self.sequence + 1) % (1 << 31)
            if self.sequence == 0 and self.auth is not None:   # a session never wraps: a new one
                self.auth.session = new_session()
            self.next_t += self.period_s
            self.sent += 1
            n += 1
        return n

    @property
    def done(self) -> bool:
        return not self.loop and self.next_t > self.scenario.duration_s


def sealer(cfg: dict) -> Optional[Sealer]:
    """The sealer of the robot config's ``pulse.auth`` (None when off; ValueError when the key
    file cannot be read or has no key ``pulse.auth.key_id``)."""
    return Sealer.from_params(AuthParams.from_tree(cfg))


def arm_address(namespace: str, node: str = "arm_teleop", timeout_s: Optional[float] = None):
    """(host, port) of the VR receiver of the ``arm_teleop`` node ``node`` in ``namespace``, from its
    parameters ``teleop.vr.bind_address`` / ``teleop.vr.port`` (the port it bound when configured
    0); a wildcard bind address is reached on loopback. None when the node does not answer."""
    from hri_runtime.cli.topic import CliSession, get_remote_parameters

    sess = CliSession.open("hri_arm_emulate", namespace=namespace)
    try:
        got = get_remote_parameters(sess.node, node, ["teleop.vr.bind_address", "teleop.vr.port"],
                                    sess.params.service_timeout_s if timeout_s is None else timeout_s)
    finally:
        sess.close()
    if not got or not got.get("teleop.vr.port"):
        return None
    host = got.get("teleop.vr.bind_address") or "127.0.0.1"
    return ("127.0.0.1" if host in ("0.0.0.0", "::", "") else host), int(got["teleop.vr.port"])


def main(argv: Optional[list] = None) -> int:
    from hri_runtime.config.tree import ConfigError, load_robot_config

    from hri_runtime.cli.main import SUMMARIES

    ap = argparse.ArgumentParser(prog="hri arm-emulate", description=SUMMARIES["arm-emulate"])
    add_robot_argument(ap, "fr3")
    ap.add_argument("--host", default=None, help="receiver address (default: teleop.vr.bind_address)")
    ap.add_argument("--port", type=port_arg, default=None, help="receiver port (default: teleop.vr.port)")
    ap.add_argument("--namespace", type=namespace, default=None, metavar="NS",
                    help="stream to the arm of the stack in this namespace (e.g. left): the port its arm_teleop "
                         "reports in teleop.vr.port, read over the ROS graph; --host/--port override")
    ap.add_argument("--node", default="arm_teleop", help="with --namespace: the arm_teleop node's name")
    ap.add_argument("--scenario", default="square", choices=["square"])
    ap.add_argument("--seconds", type=positive_float, default=None,
                    help="stop after this long (default: the scenario, or never with --loop)")
    ap.add_argument("--loop", action="store_true",
                    help="repeat the scenario (stamps and sequence numbers keep increasing); Ctrl-C ends it")
    args = ap.parse_args(argv)
    if args.namespace is not None:
        from hri_runtime.names import InvalidNameError, validate_node_name

        try:
            validate_node_name(args.node)
        except InvalidNameError as exc:
            ap.error(str(exc))
    try:
        cfg = load_robot_config(args.robot)
        auth = sealer(cfg)
    except (ConfigError, ValueError) as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    vr = TeleopVrParams.from_tree(cfg)
    scenario = SquareScenario.from_tree(cfg)
    addr = (args.host or vr.bind_address, args.port or vr.port)
    if args.namespace is not None and (args.host is None or args.port is None):
        found = arm_address(args.namespace, args.node)
        if found is None:
            print(f"error: no {args.node} in namespace {args.namespace} reports its VR port (is the stack running? "
                  f"give --port)", file=sys.stderr)
            return 1
        addr = (args.host or found[0], args.port or found[1])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    op = ScriptedOperator(scenario, sock, addr, scenario.packet_rate_hz, auth=auth, loop=args.loop,
                          keep_send_times=False)
    sealed = f", authenticated: key {auth.key_id}, session {auth.session}" if auth else ""
    if args.loop:
        t_end = float("inf") if args.seconds is None else args.seconds
        what = "until Ctrl-C" if args.seconds is None else f"for {t_end:.1f} s"
        print(f"streaming '{args.scenario}' to {addr[0]}:{addr[1]} in a loop (one square every "
              f"{scenario.duration_s:.1f} s) {what} ({scenario.packet_rate_hz:.0f} Hz{sealed})", flush=True)
    else:
        t_end = scenario.duration_s if args.seconds is None else min(args.seconds, scenario.duration_s)
        print(f"streaming '{args.scenario}' to {addr[0]}:{addr[1]} for {t_end:.1f} s of "
              f"{scenario.duration_s:.1f} s ({scenario.packet_rate_hz:.0f} Hz{sealed})", flush=True)
    t0 = time.monotonic()
    try:
        while not op.done and time.monotonic() - t0 < t_end:
            op.send_due(time.monotonic() - t0)
            time.sleep(max(0.0, op.next_t - (time.monotonic() - t0)))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    print(f"sent {op.sent} packets")
    return 0
