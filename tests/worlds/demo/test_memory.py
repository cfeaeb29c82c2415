"""StaticMemory: a deployed policy's memory of the static scene, from what it perceives."""

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.worlds.demo.memory import StaticMemory
from s2r.worlds.demo.schema import LEG_WIDTH


def _proprio(ee, width):
    p = np.zeros(10)
    p[:3], p[9] = ee, width
    return p


def _task(leg, top):
    t = np.zeros(12)
    t[:3], t[9:] = leg, top
    return t


def test_a_free_leg_is_the_mean_of_its_first_frames_and_the_tabletop_of_every_frame():
    mem = StaticMemory(look_frames=2)
    mem.reset(2)
    legs = [(0.10, 0.2, 0.06), (0.12, 0.2, 0.06), (0.50, 0.9, 0.06)]   # third: gripper in view
    tops = [(0.0, 0.5, 0.1), (0.02, 0.5, 0.1), (0.04, 0.5, 0.1)]
    out = [mem(_task(leg, t)[None], _proprio((0, 0.3, 0.3), 0.08)[None], [1])[0]
           for leg, t in zip(legs, tops)]
    np.testing.assert_allclose(out[0][:3], legs[0])
    np.testing.assert_allclose(out[2][:3], (0.11, 0.2, 0.06))           # frames 1-2 only
    np.testing.assert_allclose(out[2][9:], (0.02, 0.5, 0.1))            # every frame
    # the other rollout remembers nothing of this one
    other = mem(_task((0.3, 0.3, 0.06), (1, 1, 0))[None], _proprio((0, 0, 0), 0.08)[None], [0])
    np.testing.assert_allclose(other[0][:3], (0.3, 0.3, 0.06))


def test_a_held_leg_keeps_its_mean_offset_from_the_gripper_and_a_release_forgets_it():
    mem = StaticMemory()
    mem.reset(1)
    held = [((0.0, 0.0, 0.3), (0.01, 0.0, 0.25)), ((0.1, 0.0, 0.3), (0.10, 0.02, 0.25))]
    for ee, leg in held:
        out = mem(_task(leg, (0, 0.5, 0))[None], _proprio(ee, LEG_WIDTH)[None], [0])[0]
    # mean offset (0.005, 0.01, -0.05) added to the gripper's own position
    np.testing.assert_allclose(out[:3], (0.105, 0.01, 0.25))
    out = mem(_task((0.4, 0.4, 0.06), (0, 0.5, 0))[None], _proprio((0, 0, 0.3), 0.08)[None],
              [0])[0]
    np.testing.assert_allclose(out[:3], (0.4, 0.4, 0.06))               # free again: afresh


def test_bad_calls_are_refused():
    mem = StaticMemory()
    mem.reset(1)
    with pytest.raises(MetricError, match="rows"):
        mem(np.zeros((1, 12)), np.zeros((1, 10)), [3])
    with pytest.raises(MetricError, match="task"):
        mem(np.zeros((1, 11)), np.zeros((1, 10)), [0])
    with pytest.raises(MetricError, match="look_frames"):
        StaticMemory(look_frames=0)

