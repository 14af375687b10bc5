"""Clutch teleop core (the clutch teleop note) on SE(3): continuity, rotation mapping, scaling, clipping, clamp."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hri_core import se3
from hri_runtime.clock import SimClock
from hri_runtime.config.tree import load_robot_config
from hri_arm_teleop.core.clutch import ClutchParams, ClutchTeleop

#: the configured clutch (scale 1, world mapping, entry at the target); tests override fields
BASE = ClutchParams.from_config(load_robot_config("fr3")["teleop"]["clutch"])


class AutoClock(SimClock):
    """The simulated clock, advanced ``step_s`` at every reading (one clutch update per tick)."""

    def __init__(self, step_s: float = 0.01):
        super().__init__()
        self.step_s = step_s

    def __call__(self):
        self.advance(self.step_s)
        return super().__call__()


def pose(p=(0, 0, 0), w=(0, 0, 0)):
    T = np.eye(4)
    T[:3, :3] = se3.so3_exp(np.asarray(w, float))
    T[:3, 3] = p
    return T


#: the declared upper bounds of the speed limits; with 1 s between updates (``make``) no step of
#: these tests is clipped
FAST = dict(max_linear_speed_m_s=5.0, max_angular_speed_rad_s=20.0)
EE0 = pose((0.5, 0.0, 0.4), (np.pi, 0, 0))  # gripper pointing down


def make(clock=None, **kw):
    params = dataclasses.replace(BASE, **{**FAST, **kw})
    return ClutchTeleop(params, clock or AutoClock(1.0))


def test_no_target_before_engagement_and_engage_starts_at_robot_pose():
    c = make()
    out = c.update(pose((1, 2, 3)), False, EE0)
    assert out.target is None and not out.engaged
    out = c.update(pose((1, 2, 3)), True, EE0)
    assert out.event == "engage"
    np.testing.assert_array_equal(out.target, EE0)


def test_translation_increment_maps_one_to_one_and_release_holds():
    clock = SimClock()
    c = make(clock)
    c.update(pose((1, 2, 3)), True, EE0)
    clock.set_s(0.1)
    out = c.update(pose((1.05, 2, 3)), True, EE0)  # hand 5 cm along +x -> EE 5 cm along +x
    np.testing.assert_allclose(out.target[:3, 3], EE0[:3, 3] + [0.05, 0, 0], atol=1e-15)
    np.testing.assert_allclose(out.target[:3, :3], EE0[:3, :3], atol=1e-15)
    held = out.target
    clock.set_s(0.2)
    out = c.update(pose((9, 9, 9)), False, EE0)  # release: the hand moves freely
    assert out.event == "release"
    np.testing.assert_array_equal(out.target, held)
    clock.set_s(0.3)
    out = c.update(pose((-4, 0, 1), (0.3, 0.2, 0.1)), False, EE0)
    np.testing.assert_array_equal(out.target, held)


@pytest.mark.parametrize("frame", ["world", "tool"])
@pytest.mark.parametrize("scale", [(1.0, 1.0), (0.5, 0.8)])
def test_reengage_never_jumps(frame, scale):
    """Several strokes with random hand poses: the target right after each re-engage equals the
    target held at release (continuity to 1e-9; it is in fact exact)."""
    rng = np.random.default_rng(7)
    clock = SimClock()
    c = make(clock, mapping_frame=frame, position_scale=scale[0], orientation_scale=scale[1])
    measured = EE0.copy()
    for stroke in range(5):
        hand = pose(rng.normal(size=3), rng.normal(size=3) * 0.5)
        clock.advance(0.01)
        out = c.update(hand, True, measured)
        held_before = c.target.copy() if stroke else EE0
        assert np.max(np.abs(out.target - held_before)) <= 1e-9
        for _ in range(10):
            clock.advance(0.01)
            hand = hand @ pose(rng.normal(size=3) * 0.01, rng.normal(size=3) * 0.02)
            out = c.update(hand, True, measured)
        held = out.target.copy()
        clock.advance(0.01)
        c.update(hand, False, measured)
        for _ in range(3):  # hand repositions while released; robot drifts (tracking error)
            clock.advance(0.01)
            c.update(pose(rng.normal(size=3), rng.normal(size=3)), False, measured)
        measured = held @ pose((0.003, -0.002, 0.001), (0.01, 0, 0))
        np.testing.assert_array_equal(c.target, held)


def test_a_held_target_the_arm_did_not_follow_is_not_where_the_next_stroke_starts():
    """The stream ran 9 cm ahead of an arm that stopped following (the interaction refused it as
    a reference jump after a stall): re-engaging at that held target would send references the
    interaction refuses again, so the arm would never follow. That stroke starts from the measured
    EE (counted); within ``entry_max_error_m`` a re-engage stays bit for bit at the held target."""
    clock = SimClock()
    c = make(clock)
    c.update(pose((0, 0, 0)), True, EE0)
    clock.set_s(0.1)
    out = c.update(pose((0.09, 0, 0)), True, EE0)          # 9 cm of stroke; the arm stayed at EE0
    np.testing.assert_allclose(out.target[:3, 3], EE0[:3, 3] + [0.09, 0, 0], atol=1e-15)
    clock.set_s(0.2)
    c.update(pose((0.09, 0, 0)), False, EE0)               # the operator lets go ...
    clock.set_s(0.3)
    out = c.update(pose((0.5, 0.5, 0)), True, EE0)         # ... and engages again
    assert out.event == "engage" and c.counters.reanchored == 1
    np.testing.assert_array_equal(out.target, EE0)         # from the arm, not 9 cm ahead of it
    clock.set_s(0.4)
    out = c.update(pose((0.52, 0.5, 0)), True, EE0)        # and the stroke goes on from there
    np.testing.assert_allclose(out.target[:3, 3], EE0[:3, 3] + [0.02, 0, 0], atol=1e-15)
    clock.set_s(0.5)
    c.update(pose((0.52, 0.5, 0)), False, EE0)
    near = EE0 @ pose((0.01, 0, 0))                        # followed within the tolerance
    clock.set_s(0.6)
    held = c.target.copy()
    out = c.update(pose((3, 3, 3)), True, near)
    assert c.counters.reanchored == 1
    np.testing.assert_array_equal(out.target, held)
    measured = make(entry_pose="measured")                 # entry_pose measured: as before
    measured.update(pose(), True, EE0)
    assert measured.counters.reanchored == 0


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("frame", ["world", "tool"])
def test_ninety_degrees_about_each_axis(axis, frame):
    """Hand rotates 90 deg about base axis e_i (world frame: R_t = Rot(e_i, 90) R_e0) or about its own
    axis e_i (tool frame: R_t = R_e0 Rot(e_i, 90)). Hand-computed rotation matrices."""
    e = np.zeros(3)
    e[axis] = 1.0
    R90 = {0: np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]]),
           1: np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]]),
           2: np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]])}[axis]
    hand0 = pose((0.2, 0.1, 1.0), (0.3, -0.4, 0.2))  # arbitrary hand entry orientation
    c = make(mapping_frame=frame)
    c.update(hand0, True, EE0)
    if frame == "world":
        hand1 = hand0.copy()
        hand1[:3, :3] = R90 @ hand0[:3, :3]
        expected = R90 @ EE0[:3, :3]
    else:
        hand1 = hand0.copy()
        hand1[:3, :3] = hand0[:3, :3] @ R90
        expected = EE0[:3, :3] @ R90
    out = c.update(hand1, True, EE0)
    np.testing.assert_allclose(out.target[:3, :3], expected, atol=1e-12)
    np.testing.assert_allclose(out.target[:3, 3], EE0[:3, 3], atol=1e-12)  # pure rotation


def test_composition_of_two_clutch_strokes():
    """+90 deg about z, release, hand turns back, re-engage, +90 deg about x: the EE orientation is
    Rx(90) Rz(90) R_e0 (world frame: later increments pre-multiply)."""
    Rz = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
    Rx = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0.0]])
    c = make()
    h = pose((0, 0, 1))
    c.update(h, True, EE0)
    h1 = h.copy()
    h1[:3, :3] = Rz
    c.update(h1, True, EE0)
    c.update(h1, False, EE0)
    c.update(h, False, EE0)  # hand back to the start, clutch up
    c.update(h, True, EE0)
    h2 = h.copy()
    h2[:3, :3] = Rx
    out = c.update(h2, True, EE0)
    np.testing.assert_allclose(out.target[:3, :3], Rx @ Rz @ EE0[:3, :3], atol=1e-12)
    # two strokes of 90 deg about the same axis give 180 deg (the near-pi branch of log/exp)
    c = make()
    c.update(h, True, EE0)
    c.update(h1, True, EE0)
    c.update(h1, False, EE0)
    c.update(h, True, EE0)
    out = c.update(h1, True, EE0)
    np.testing.assert_allclose(out.target[:3, :3], Rz @ Rz @ EE0[:3, :3], atol=1e-12)


def test_scaling_of_position_and_rotation():
    c = make(position_scale=0.5, orientation_scale=0.8)
    h0 = pose((0, 0, 0))
    c.update(h0, True, EE0)
    out = c.update(pose((0.1, -0.2, 0.04), (0, 0, 1.0)), True, EE0)
    np.testing.assert_allclose(out.target[:3, 3], EE0[:3, 3] + [0.05, -0.1, 0.02], atol=1e-15)
    # rotation angle scaled 1.0 rad -> 0.8 rad about the same axis
    dR = out.target[:3, :3] @ EE0[:3, :3].T
    np.testing.assert_allclose(se3.so3_log(dR), [0, 0, 0.8], atol=1e-12)


def test_tool_frame_translation_follows_the_hand_axes():
    """In tool mode a hand move along its own x moves the EE along the EE's own x."""
    c = make(mapping_frame="tool")
    h0 = pose((0, 0, 0), (0, 0, np.pi / 2))  # hand x points along base y
    c.update(h0, True, EE0)
    out = c.update(h0 @ pose((0.1, 0, 0)), True, EE0)
    np.testing.assert_allclose(out.target[:3, 3], EE0[:3, 3] + 0.1 * EE0[:3, 0], atol=1e-12)


def test_velocity_clipping_limits_the_target_speed_and_catches_up():
    clock = SimClock()
    c = ClutchTeleop(dataclasses.replace(BASE, max_linear_speed_m_s=0.1, max_angular_speed_rad_s=0.5), clock)
    h0 = pose()
    c.update(h0, True, EE0)
    clock.set_s(0.1)
    out = c.update(pose((1.0, 0, 0), (0, 0, 1.0)), True, EE0)  # a 1 m / 1 rad jump of the hand
    assert out.clipped and c.counters.velocity_clips == 1
    np.testing.assert_allclose(out.target[:3, 3] - EE0[:3, 3], [0.01, 0, 0], atol=1e-12)
    ang = np.linalg.norm(se3.so3_log(EE0[:3, :3].T @ out.target[:3, :3]))
    assert ang == pytest.approx(0.05, abs=1e-12)
    for k in range(2, 200):
        clock.set_s(0.1 * k)
        out = c.update(pose((1.0, 0, 0), (0, 0, 1.0)), True, EE0)
    assert not out.clipped
    np.testing.assert_allclose(out.target[:3, 3], EE0[:3, 3] + [1.0, 0, 0], atol=1e-12)


def test_workspace_clamp_is_applied_and_flagged():
    lo, hi = np.array([0.2, -0.3, 0.1]), np.array([0.6, 0.3, 0.8])

    def clamp(p):
        q = np.clip(p, lo, hi)
        return q, bool(np.any(q != p))

    c = ClutchTeleop(dataclasses.replace(BASE, **FAST), AutoClock(1.0), workspace_clamp=clamp)
    c.update(pose(), True, EE0)
    out = c.update(pose((0.5, 0, 0)), True, EE0)  # would be x = 1.0
    assert out.clamped and c.counters.workspace_clamps == 1
    np.testing.assert_allclose(out.target[:3, 3], [0.6, 0.0, 0.4])


def test_tracking_lost_or_garbage_releases_and_holds():
    c = make()
    c.update(pose(), True, EE0)
    out = c.update(pose((0.1, 0, 0)), True, EE0)
    held = out.target.copy()
    bad = pose((0.3, 0, 0))
    bad[0, 0] = np.nan
    out = c.update(bad, True, EE0)
    assert out.event == "release" and not out.engaged
    np.testing.assert_array_equal(out.target, held)
    assert c.counters.tracking_lost == 1
    out = c.update(None, True, EE0)
    np.testing.assert_array_equal(out.target, held)


def test_cannot_engage_without_any_entry_pose():
    c = make()
    out = c.update(pose(), True, None)
    assert out.target is None and not out.engaged
    assert c.counters.rejected_poses == {"no_entry_pose": 1}


def test_bad_params_are_rejected_by_the_declaration():
    with pytest.raises(ValueError, match="mapping_frame"):
        dataclasses.replace(BASE, mapping_frame="camera")


from hypothesis import given, settings, strategies as st  # noqa: E402

#: hand positions within ±0.5 m per axis: the largest step the mapping can ask for is then
#: 2 (scale) × √3 m = 3.46 m in the 1 s between updates, inside the 5 m/s speed limit of ``FAST``,
#: so no step is rate limited and the mapping is the target (with ±1 m a 6.9 m step is clipped)
_vec = st.lists(st.floats(-0.5, 0.5), min_size=3, max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_vec, _vec, st.booleans()), min_size=1, max_size=40),
       st.sampled_from(["world", "tool"]), st.floats(0.1, 2.0), st.floats(0.1, 2.0))
def test_random_sessions_keep_the_clutch_invariants(steps, frame, s_p, s_r):
    """Any sequence of hand poses and clutch states: the target only changes while engaged, it is
    continuous at every engage, and while engaged it equals the SE(3) mapping from the entry
    (the arm follows: its measured pose is the last target)."""
    c = make(mapping_frame=frame, position_scale=s_p, orientation_scale=s_r)
    prev = None
    for p, w, pressed in steps:
        hand = pose(np.array(p), np.array(w) * 4.0)
        out = c.update(hand, pressed, EE0 if prev is None else prev)
        if out.event == "engage":
            expected = EE0 if prev is None else prev
            assert np.max(np.abs(out.target - expected)) <= 1e-9
        elif not out.engaged:
            if prev is None:
                assert out.target is None
            else:
                np.testing.assert_array_equal(out.target, prev)
        else:
            np.testing.assert_allclose(out.target, c.mapped_target(hand), atol=1e-12)
        prev = None if out.target is None else out.target.copy()


def test_after_a_safety_release_a_held_button_is_ignored_until_released_and_engaged_again():
    """``awaiting_release`` (the pipeline's REENGAGE): true exactly while the button is still held
    after a safety release; the hand moves nothing then; up, then down again engages at the hold."""
    c = make()
    c.update(pose((0, 0, 0)), True, EE0)                     # engaged
    c.update(pose((0.1, 0, 0)), True, EE0)
    assert c.engaged and not c.awaiting_release
    hold = pose((0.55, 0.0, 0.4), (np.pi, 0, 0))
    c.safety_release(hold)
    out = c.update(pose((0.3, 0, 0)), True, EE0)             # the hand moves, button still down
    assert c.awaiting_release and not out.engaged and out.event is None
    np.testing.assert_array_equal(out.target, hold)          # the target stays at the hold
    out = c.update(pose((0.3, 0, 0)), False, EE0)            # let go
    assert not c.awaiting_release and not out.engaged
    out = c.update(pose((0.3, 0, 0)), True, hold)            # engage again (the arm at the hold): from it, no jump
    assert out.event == "engage" and not c.awaiting_release
    np.testing.assert_array_equal(out.target, hold)


def test_a_safety_release_with_the_button_up_does_not_wait_for_a_release():
    c = make()
    c.update(pose((0, 0, 0)), True, EE0)
    c.update(pose((0, 0, 0)), False, EE0)                    # released before the hold
    c.safety_release(EE0)
    c.update(pose((0, 0, 0)), False, EE0)
    assert not c.awaiting_release
    assert c.update(pose((0, 0, 0)), True, EE0).event == "engage"


def test_a_scale_set_mid_stroke_goes_on_from_the_target_without_a_jump():
    """``set_scales`` (the run-time teleop scale): the engaged stroke is re-anchored, so the next
    target is the held one plus the *new* scale times the hand's motion since the change."""
    c = make()
    c.update(pose((0, 0, 0)), True, EE0)
    t1 = c.update(pose((0.1, 0, 0)), True, EE0).target          # scale 1: +0.1 m
    np.testing.assert_allclose(t1[:3, 3], EE0[:3, 3] + [0.1, 0, 0], atol=1e-12)
    c.set_scales(position_scale=0.5, orientation_scale=0.25)
    assert (c.params.position_scale, c.params.orientation_scale) == (0.5, 0.25)
    same = c.update(pose((0.1, 0, 0)), True, EE0).target         # the hand has not moved: no jump
    np.testing.assert_allclose(same, t1, atol=1e-12)
    t2 = c.update(pose((0.2, 0, 0), (0, 0, 0.4)), True, EE0).target   # +0.1 m, +0.4 rad about z
    np.testing.assert_allclose(t2[:3, 3], t1[:3, 3] + [0.05, 0, 0], atol=1e-12)
    np.testing.assert_allclose(t2[:3, :3], se3.so3_exp(np.array([0, 0, 0.1])) @ t1[:3, :3], atol=1e-12)
    with pytest.raises(ValueError):                    # checked as the config is: nothing changes
        c.set_scales(position_scale=-1.0)
    assert c.params.position_scale == 0.5
