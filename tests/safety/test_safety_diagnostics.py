"""The stop supervisor's /diagnostics (hri_runtime.diagnostics.Updater): OK while running, ERROR
with the reason at once when a stop latches, in lockstep with simulated time."""
from hri_runtime.inproc import InprocContext
from hri_runtime.lockstep import Lockstep
from hri_runtime.node import Node

from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode


def test_stop_supervisor_diagnostics_error_while_stopped_at_once():
    ctx = InprocContext(start_time_s=0.0)
    ls = Lockstep(0.01, context=ctx)
    got = []
    Node("listener", context=ctx).create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics",
                                                      got.append, qos=100)
    sup = StopSupervisorNode(context=ctx)
    ls.run_for(2.05)                              # one array a second (and the first at once)
    assert len(got) == 3
    assert all(s.level == 0 and s.name == "safety: system stop" for a in got for s in a.status)
    sup.request("console", "operator pressed SAFE STOP")      # a change: published at once
    ctx.spin_once()
    assert len(got) == 4
    last = got[-1].status[0]
    assert last.level == 2 and "operator pressed SAFE STOP" in last.message and last.hardware_id == "stop_supervisor"
    ls.run_for(1.0)
    assert got[-1].status[0].level == 2                        # a flag holds: ERROR until the reset
