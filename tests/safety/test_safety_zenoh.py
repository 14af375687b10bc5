"""The system stop on a real Zenoh router with separate processes (docs/safety.md).

One stack in one domain, started by `hri launch` against a standalone `hri router` process
(``hri_safety.drill.stack_launch``): launch/fr3.launch.yaml (its stop supervisor and the FR3 arm
chain, VR over UDP; both outputs: arm_teleop -> interaction node, and arm_teleop's own joint
impedance), vr_interface + atomic (Tino, embedded MuJoCo) and the console. This process is both
headsets (real UDP), a WebSocket client of the console (what the page's buttons send) and a node
on the router that watches the outputs.

1. SAFE STOP (WebSocket command) while the arm follows the hand and the base drives: the arm goes
   to STOP and holds although the hand keeps moving; the base gets twist 0 / leg 0; RESET releases.
2. The router is killed while the headsets stop; it comes back 3 s later: every actuator had
   stopped on its own (heartbeat timeout, in its log), and with both headsets streaming again
   nothing moves until the console's RESET; then both move again.

Waits are bounded; no duration is asserted (the bound timeout + one period is asserted in lockstep
in test_safety_actuators.py and measured in bench/console/stop_latency.py).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import zenoh  # noqa: F401  (required: a missing install fails here)
import websockets  # noqa: F401  (required: a missing install fails here)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from drill import Stack, arm_moved, base_moving  # noqa: E402  (the live-stack drill, shared with bench/console)

WAIT_S = 60.0


@pytest.mark.parametrize("arm_output", ["cartesian", "joint"])
def test_safe_stop_and_router_loss_stop_the_arm_and_tino_until_reset(tmp_path, arm_output):
    with Stack(tmp_path, arm_output, WAIT_S) as st:
        w = st.watch
        # ---- 1. SAFE STOP from the console page's WebSocket while the arm and the base move
        st.drive()
        t_stop = time.time()
        r = st.console.command("safe_stop")
        assert r["type"] == "ack" and r["result"]["subscribers"] >= 1, r
        st.wait(lambda: "STOP" in w.since(w.modes, t_stop), "arm mode STOP")
        st.wait(lambda: (0.0, 0.0) in w.since(w.twist, t_stop), "a zero base command")
        time.sleep(2.0)                            # the headsets keep going: nothing may move
        t_hold = time.time() - 1.0                 # (the arm settles on its held pose first: within
        ee, tw = w.since(w.ee, t_hold), w.since(w.twist, t_hold)   # its tracking error, < 2 mm)
        assert ee and arm_moved(ee) < 2e-3
        assert tw and not base_moving(tw) and all(v == 0.0 for v in w.since(w.rpm, t_hold))
        assert w.last(w.modes) == "STOP"
        for n in st.actuators:
            assert st.stop_log_times(n, "console", t_stop), n
        r = st.release()
        assert "cleared console" in r["result"]["message"], r

        # ---- 2. the router dies while the headsets stop; it comes back 3 s later
        st.drive()
        t_kill = st.kill_router()
        st.headsets(False)
        time.sleep(3.0)
        st.restart_router()
        # the headsets stream again (the clutch engaged again, a base pulse): nothing moves
        t_again = time.time()
        st.arm.clutch = False
        st.headsets(True)
        time.sleep(0.5)
        st.arm.clutch = True
        st.tino_hs.press(3, 0)
        time.sleep(2.0)
        ee, tw = w.since(w.ee, t_again), w.since(w.twist, t_again)
        assert len(ee) > 10 and arm_moved(ee) < 1e-3
        assert len(tw) > 10 and not base_moving(tw)
        assert "TRACK" not in w.since(w.modes, t_again)
        stops = {n: st.stop_log_times(n, "stop_heartbeat_timeout", t_kill) for n in st.actuators}
        assert all(stops.values()), st.log_path.read_text()[-3000:]
        (tmp_path / "timing.txt").write_text("".join(f"{n}: stopped {ts[0] - t_kill:.3f} s after the router kill\n"
                                                     for n, ts in stops.items()))
        # the reset from the console: both move again
        st.release()
        st.drive()
