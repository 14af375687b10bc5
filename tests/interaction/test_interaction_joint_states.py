"""The interaction loop's simulation owns the robot, so it publishes /joint_states (the
joint_state_broadcaster contract: every joint with position, velocity and effort) at
interaction.node.joint_state_rate_hz of the node clock; in lockstep on the in-process runtime, so
the count per simulated second is exact, and follows the configured rate."""
from __future__ import annotations

import numpy as np
import pytest

import hri_core.se3  # noqa: F401  (required: a missing install fails here)

from hri_runtime.config.tree import load_robot_config  # noqa: E402
from hri_runtime.inproc import InprocContext  # noqa: E402
from hri_runtime.node import Node  # noqa: E402

from hri_interaction.nodes.interaction_node import InteractionNode  # noqa: E402
from hri_safety.nodes.stop_supervisor_node import StopSupervisorNode  # noqa: E402


@pytest.mark.parametrize("rate_hz", [None, 250.0])
def test_joint_states_every_joint_at_the_configured_rate(rate_hz):
    cfg = load_robot_config("fr3")
    params = {} if rate_hz is None else {"interaction.node.joint_state_rate_hz": rate_hz}
    want_hz = rate_hz or cfg["interaction"]["node"]["joint_state_rate_hz"]
    assert want_hz >= 100.0
    ctx = InprocContext()
    StopSupervisorNode(context=ctx)
    node = InteractionNode(cfg=cfg, context=ctx, parameters=params)
    got = []
    Node("probe", context=ctx).create_subscription("sensor_msgs/msg/JointState", "/joint_states", got.append)
    try:
        ctx.spin_for(0.2)
        n0 = len(got)
        ctx.spin_for(1.0)
        assert abs((len(got) - n0) - want_hz) <= 1, (len(got) - n0, want_hz)
        m = got[-1]
        names = list(cfg["joints"]["names"])
        assert list(m.name) == names
        assert len(m.position) == len(m.velocity) == len(m.effort) == len(names)
        home = np.deg2rad(cfg["joints"]["named_positions_deg"]["home"])
        assert np.abs(np.asarray(m.position) - home).max() < 0.05     # the simulated arm, holding home
        assert np.any(np.asarray(m.effort) != 0.0)                      # gravity-holding torques
        assert m.header.frame_id == cfg["frames"]["base"]
    finally:
        node.destroy_node()
