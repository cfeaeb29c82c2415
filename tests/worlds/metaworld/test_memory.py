"""The deployed two-stage policy's memory of a Meta-World scene, against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.worlds.metaworld.memory import MetaWorldMemory
from s2r.worlds.metaworld.tasks import TASKS

OPEN, SHUT = 1.0, 0.45


def _proprio(hand, grip):
    return np.array([[*hand, grip]], dtype=np.float64)


def test_the_button_is_remembered_but_its_height_is_read_live():
    mem = MetaWorldMemory(TASKS["button-press-topdown-v3"], look_frames=2)
    mem.reset(1)
    seen = [np.arange(10.0) + i for i in (0, 2, 10)]
    out = [mem(s[None], _proprio([0, 0, 0], OPEN), np.array([0]))[0] for s in seen]
    np.testing.assert_allclose(out[0], seen[0])
    np.testing.assert_allclose(out[1][[0, 1, *range(3, 10)]], 1 + np.r_[0:2, 3:10])  # mean of 2
    np.testing.assert_allclose(out[2][[0, 1, *range(3, 10)]], 1 + np.r_[0:2, 3:10])  # kept
    assert out[1][2] == 4.0 and out[2][2] == 12.0          # the button's height: live


def test_a_carried_object_stays_until_grasped_then_moves_with_the_hand():
    mem = MetaWorldMemory(TASKS["assembly-v3"], look_frames=2)
    mem.reset(2)
    row = np.array([0])
    nut = np.array([0.1, 0.6, 0.02, 1, 0, 0, 0, 0.0, 0.8, 0.1])
    a = mem(nut[None], _proprio([0.0, 0.6, 0.2], OPEN), row)[0]
    np.testing.assert_allclose(a, nut)                        # one frame: as decoded
    b = mem((nut + 0.02)[None], _proprio([0.05, 0.6, 0.1], OPEN), row)[0]
    np.testing.assert_allclose(b[:7], nut[:7] + 0.01)         # free: mean of its first two
    np.testing.assert_allclose(b[7:], nut[7:] + 0.01)         # the goal: mean of two
    # closed near it: held; position = hand + mean decoded offset, rotation live
    held1 = nut + np.r_[0.03, 0, 0.05, 0.5, 0, 0, 0, 0, 0, 0]
    c = mem(held1[None], _proprio([0.1, 0.6, 0.05], SHUT), row)[0]
    np.testing.assert_allclose(c[:3], [0.1, 0.6, 0.05] + (held1[:3] - [0.1, 0.6, 0.05]))
    np.testing.assert_allclose(c[3:7], held1[3:7])
    held2 = held1 + np.r_[0.02, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    d = mem(held2[None], _proprio([0.2, 0.7, 0.2], SHUT), row)[0]
    offsets = np.mean([held1[:3] - [0.1, 0.6, 0.05], held2[:3] - [0.2, 0.7, 0.2]], axis=0)
    np.testing.assert_allclose(d[:3], np.array([0.2, 0.7, 0.2]) + offsets)
    np.testing.assert_allclose(d[7:], nut[7:] + 0.01)         # the goal never moves
    # opened: free again, read afresh where it now is
    e = mem(held2[None], _proprio([0.2, 0.7, 0.2], OPEN), row)[0]
    np.testing.assert_allclose(e[:7], held2[:7])
    # closed far from the free object (the hand 10 cm away): not held
    mem.reset(1)
    mem(nut[None], _proprio([0.0, 0.6, 0.2], OPEN), row)
    f = mem((nut + 0.05)[None], _proprio([0.3, 0.6, 0.2], SHUT), row)[0]
    np.testing.assert_allclose(f[:7], nut[:7] + 0.025)


@pytest.mark.parametrize("name, width, live", [("drawer-open-v3", 10, 1),     # handle y
                                               ("hammer-v3", 17, 8)])         # nail y
def test_what_opens_or_is_driven_in_is_read_live_the_rest_remembered(name, width, live):
    """The drawer's handle and the nail move along y only, as the task is done: that column
    is read live; the rest is kept (the goal, the nail's other columns; the hammer, free
    while the gripper is open, where it was first seen)."""
    mem = MetaWorldMemory(TASKS[name], look_frames=2)
    mem.reset(1)
    seen = [np.arange(float(width)) + i for i in (0, 2, 10)]
    out = [mem(s[None], _proprio([5, 5, 5], OPEN), np.array([0]))[0] for s in seen][-1]
    kept = [c for c in range(width) if c != live]
    np.testing.assert_allclose(out[kept], 1 + np.arange(float(width))[kept])   # mean of 2
    assert out[live] == 10 + live
    with pytest.raises(MetricError, match=rf"expected task \(B, {width}\)"):
        mem(np.zeros((1, width + 1)), np.zeros((1, 4)), np.array([0]))


def test_bad_shapes_and_rows_are_one_line():
    mem = MetaWorldMemory(TASKS["assembly-v3"])
    mem.reset(1)
    with pytest.raises(MetricError, match=r"expected task \(B, 10\)"):
        mem(np.zeros((1, 12)), np.zeros((1, 4)), np.array([0]))
    with pytest.raises(MetricError, match=r"rows must be in \[0, 1\)"):
        mem(np.zeros((1, 10)), np.zeros((1, 4)), np.array([3]))
