"""Authenticated pulse packets end to end over real UDP (docs/protocols.md "Authentication"):
`hri vr-emulate` plans sealed with the key of HRI_VR_KEY_FILE -> real socket -> vr_interface_node
(inproc runtime, simulated clock) with HRI_VR_AUTH=required. Forged tags, another key under the
same id, an unknown key id and replayed datagrams (a valid tag, an old sequence number or session)
are dropped and counted in /diagnostics, and never command; either unauthenticated VR receiver
(vr_interface, arm_teleop) off loopback refuses to start in one line, exit 2."""
import os
import subprocess
import sys

import pytest
from hri_pulse import emulator
from hri_pulse.core.auth import Sealer
from hri_pulse.emulator import Datagram
from hri_runtime.security.bind import StartupRefused
from hri_runtime.inproc import InprocContext

SESSION = 1767225600000


def diag_values(rec):
    """The newest "hri_pulse: vr link" status of /diagnostics as a dict."""
    for arr in reversed(rec.diag):
        for st in arr.status:
            if st.name == "hri_pulse: vr link":
                return {kv.key: kv.value for kv in st.values}
    raise AssertionError("no vr link diagnostics")


def attacks(plan, t_from, t_to, keys):
    """For each headset packet sent in [t_from, t_to): a forged tag (the real packet, last tag byte
    flipped), the real packet re-sealed with another key under the same id 1, with an unknown key
    id 9, and the real packet of 1 s earlier sent again (a replay: valid tag, old sequence)."""
    real = [d for d in plan.datagrams if d.kind == "stream"]
    out, order = [], 10 ** 6
    for d in real:
        if not t_from <= d.t_s < t_to:
            continue
        old = [o for o in real if o.t_s <= d.t_s - 1.0]
        body = d.data[:32]
        fakes = {"forged": d.data[:-1] + bytes([d.data[-1] ^ 0x80]),
                 "wrong_key": Sealer(keys[2], 1, SESSION).seal(body),
                 "unknown_id": Sealer(keys[1], 9, SESSION).seal(body)}
        if old:
            fakes["replay"] = old[-1].data
        for k, (kind, data) in enumerate(fakes.items()):
            out.append(Datagram(d.t_s + 0.001 * (k + 1), order, data, kind))
            order += 1
    return out


def test_forged_wrong_key_unknown_id_and_replayed_packets_are_dropped_and_counted(
        vr_keys, pulse_cfg, recorder_cls, headset_cls, send_plan):
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode

    ctx = InprocContext(start_time_s=1000.0)
    node = VrInterfaceNode(context=ctx, parameters={"pulse.udp.port": 0})
    assert node.get_parameter("pulse.auth.mode").value == "required"
    rec = recorder_cls(pulse_cfg["topics"], context=ctx)
    hs = headset_cls(("127.0.0.1", node.port))
    try:
        plan = emulator.plan({"duration_s": 8.0, "every_s": 0.7}, pulse_cfg["emulator"], seed=3)
        emulator.seal_plan(plan, Sealer(vr_keys[1], 1, SESSION))
        fakes = attacks(plan, 2.0, 6.0, vr_keys)
        kinds = {k: sum(d.kind == k for d in fakes) for k in ("forged", "wrong_key", "unknown_id", "replay")}
        assert min(kinds.values()) >= 50
        plan.datagrams = sorted(plan.datagrams + fakes)
        send_plan(ctx, node, hs, plan, 8.5)
        exp = [(plan.actions[i].state, plan.actions[i].angular) for i in plan.delivered_actions()]
        assert len(exp) >= 9 and [(s, d) for _, s, d, _ in rec.pulses()] == exp    # each once, nothing forged
        assert all(n == 3 for *_, n in rec.pulses())
        lr = node.core.link
        assert lr.rejected["bad_tag"] == kinds["forged"] + kinds["wrong_key"]
        assert lr.rejected["bad_key_id"] == kinds["unknown_id"]
        assert lr.rejected["replayed"] == kinds["replay"]
        assert lr.received == lr.accepted + lr.rejected_total
        ctx.spin_for(1.0)
        vals = diag_values(rec)                               # what an operator sees
        assert int(vals["rejected_bad_tag"]) == lr.rejected["bad_tag"]
        assert int(vals["rejected_bad_key_id"]) == kinds["unknown_id"]
        assert int(vals["rejected_replayed"]) == kinds["replay"]

        # the link dies; the tracker forgets the stream -- a recorded press replayed now is still old
        n_pulses, replayed = len(rec.pulses()), lr.rejected["replayed"]
        ctx.spin_for(pulse_cfg["health"]["disconnect_timeout_s"] + 0.5)
        assert rec.stop[-1][1] is True and lr.tracker.last is None
        press = [d for d in plan.datagrams if d.kind == "stream" and d.action is not None][:3]
        for d in press * 3:
            hs.send(d)
            ctx.spin_for(0.04)
        ctx.spin_for(0.5)
        assert len(rec.pulses()) == n_pulses and lr.rejected["replayed"] == replayed + 9

        # the app restarts (a new session, numbers from 0 again) with the rotated key 2: accepted at once
        again = emulator.plan({"duration_s": 2.0, "actions": [{"at_s": 0.5, "state": 2, "angular": 1}]},
                              pulse_cfg["emulator"])
        emulator.seal_plan(again, Sealer(vr_keys[2], 2, SESSION + 60_000))
        send_plan(ctx, node, hs, again, 2.2)
        assert [(s, d) for _, s, d, _ in rec.pulses()[n_pulses:]] == [(2, 1)]
        assert rec.stop[-1][1] is False and lr.rejected["restart_pending"] == 0
    finally:
        hs.close()
        node.destroy_node()
        rec.destroy_node()


@pytest.mark.parametrize("module,params,name", [
    ("hri_pulse.nodes.vr_interface_node", ["pulse.udp.bind_address:=0.0.0.0", "pulse.udp.port:=0"],
     "vr_interface pulse.udp.bind_address"),
    ("hri_arm_teleop.nodes.arm_teleop_node", ["teleop.output:=joint", "teleop.vr.bind_address:=0.0.0.0",
                                              "teleop.vr.port:=0"], "arm_teleop teleop.vr.bind_address"),
])
def test_an_unauthenticated_receiver_off_loopback_refuses_to_start_in_one_line(module, params, name):
    """Either VR receiver's node executable (what `ros2 run` / a launch file starts): one line, exit 2."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HRI_VR_")}
    r = subprocess.run([sys.executable, "-c", f"from {module} import main; main()", "--ros-args",
                        *[x for p in params for x in ("-p", p)]],
                       env=dict(env, HRI_TRANSPORT="inproc"), capture_output=True, text=True, timeout=180)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.strip().splitlines() == [
        f"error: {name} '0.0.0.0' is not loopback: headset packets must be authenticated there "
        "(pulse.auth.mode required, key in pulse.auth.key_file; or HRI_VR_AUTH=required HRI_VR_KEY_FILE=<file>)"]


def test_bind_rule_covers_the_zeromq_carrier_and_accepts_authenticated_receivers(vr_keys, monkeypatch):
    from hri_pulse.nodes.vr_interface_node import VrInterfaceNode

    node = VrInterfaceNode(context=InprocContext(), parameters={"pulse.udp.bind_address": "0.0.0.0",
                                                                 "pulse.udp.port": 0})
    try:
        assert node.udp.address[0] == "0.0.0.0" and node.core.auth is not None
    finally:
        node.destroy_node()
    monkeypatch.delenv("HRI_VR_AUTH")
    for params, what in (({"pulse.udp.bind_address": "192.168.1.5"}, "pulse.udp.bind_address '192.168.1.5'"),
                         ({"pulse.zmq.enabled": True, "pulse.zmq.sub_endpoint": "tcp://*:5565"},
                          "pulse.zmq.sub_endpoint '*'")):
        with pytest.raises(StartupRefused, match=what):
            VrInterfaceNode(context=InprocContext(), parameters={"pulse.udp.port": 0, **params})
