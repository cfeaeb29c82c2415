"""The object focus (s2r.metrics.object_focus): metamorphic relations and a hand-computed case."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.object_focus import focus_record, frame_focus, not_scored


def _blob_masks(n: int, size: int = 24, side: int = 6, seed: int = 0) -> np.ndarray:
    """``n`` masks of one ``side x side`` square each, at random places (wrapping round the
    edges, so every pixel is as likely to be covered and another frame's mask overlaps one's
    own by the area share on average)."""
    rng = np.random.default_rng(seed)
    square = np.zeros((size, size), dtype=np.uint8)
    square[:side, :side] = 1
    return np.stack([np.roll(square, tuple(shift), axis=(0, 1))
                     for shift in rng.integers(0, size, size=(n, 2))])


def _record(maps, masks, episode, **kw):
    focus, area, constant = frame_focus(maps, masks)
    return focus_record(focus, area, episode, constant=constant, **kw)


def test_a_hand_computed_example():
    maps = np.array([[[1.0, 0.0], [0.0, 1.0]],       # half the mass on the one object pixel
                     [[0.0, 0.0], [0.0, 0.0]]])      # constant: counts as uniform
    masks = np.array([[[1, 0], [0, 0]], [[1, 1], [0, 0]]], dtype=np.uint8)
    focus, area, constant = frame_focus(maps, masks)
    assert focus.tolist() == [0.5, 0.5] and area.tolist() == [0.25, 0.5]
    assert constant.tolist() == [False, True]
    rec = focus_record(focus, area, [0, 1], n_boot=0, constant=constant)
    assert rec["object_focus"] == pytest.approx(0.5)
    assert rec["object_focus_floor"] == pytest.approx(0.375)
    assert rec["object_focus_ci_low"] is None                  # no replicates asked for
    assert rec["object_focus_frames"] == {"n_frames": 2, "n_episodes": 2, "constant_maps": 1}


def test_a_map_equal_to_the_mask_scores_one_and_a_uniform_map_the_floor():
    masks = _blob_masks(40)
    episode = np.repeat(np.arange(10), 4)
    exact = _record(masks.astype(float), masks, episode, n_boot=200)
    assert exact["object_focus"] == pytest.approx(1.0)
    assert exact["object_focus_ci_low"] == pytest.approx(1.0)
    uniform = _record(np.full(masks.shape, 0.3), masks, episode, n_boot=200)
    assert uniform["object_focus"] == pytest.approx(uniform["object_focus_floor"])
    assert uniform["object_focus_floor"] == pytest.approx(masks.mean())   # equal-sized frames
    assert uniform["object_focus_floor"] == exact["object_focus_floor"]   # the floor: masks only
    lo, hi = uniform["object_focus_floor_ci_low"], uniform["object_focus_floor_ci_high"]
    assert lo <= uniform["object_focus_floor"] <= hi


def test_masks_shuffled_across_frames_score_near_the_floor():
    masks = _blob_masks(400, seed=1)
    episode = np.repeat(np.arange(100), 4)
    shuffled = masks[np.random.default_rng(2).permutation(len(masks))]
    rec = _record(shuffled.astype(float), masks, episode, n_boot=200)
    floor = rec["object_focus_floor"]
    assert abs(rec["object_focus"] - floor) < 0.02                # vs 1 for the true masks
    assert rec["object_focus_ci_low"] <= floor + 0.01


def test_more_episodes_narrow_the_interval():
    rng = np.random.default_rng(3)

    def width(n_episodes: int) -> float:
        focus = np.clip(rng.normal(0.5, 0.15, size=4 * n_episodes), 0, 1)
        rec = focus_record(focus, np.full(focus.size, 0.2), np.repeat(np.arange(n_episodes), 4),
                           n_boot=400)
        return rec["object_focus_ci_high"] - rec["object_focus_ci_low"]

    assert width(160) < 0.6 * width(10)


def test_bad_inputs_and_the_unscored_record():
    with pytest.raises(MetricError, match="non-negative"):
        frame_focus(-np.ones((1, 2, 2)), np.ones((1, 2, 2)))
    with pytest.raises(MetricError, match=r"\(n, H, W\)"):
        frame_focus(np.ones((1, 2, 2)), np.ones((1, 3, 2)))
    with pytest.raises(MetricError, match="at least one frame"):
        focus_record([], [], [])
    rec = not_scored("no masks")
    assert rec["object_focus"] is None and rec["object_focus_floor_ci_high"] is None
    assert rec["object_focus_reason"] == "no masks"


def test_a_score_computed_when_asked_is_reported_only_where_a_row_holds_it():
    from s2r.metrics import catalogue

    assert "object_focus" not in catalogue.interval_keys()          # not in every record
    assert "object_focus" in catalogue.asked_keys()
    plain = [{"dis": None}, {"dis": 0.5}]
    assert "object_focus" not in catalogue.held_keys("validation", plain)
    assert "dis" in catalogue.held_keys("validation", [{"dis": None}])  # undefined, reported
    none = [{"object_focus": None}, {"object_focus": None}]
    assert "object_focus" not in catalogue.held_keys("validation", none)
    held = [{"object_focus": None}, {"object_focus": 0.3}]
    assert "object_focus" in catalogue.held_keys("validation", held)
