"""Meta-World's task-object masks (``masks=true``; s2r.worlds.metaworld.masks) and the object
focus they give (s2r.pipeline.object_focus)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.worlds.metaworld.conftest import TINY


@pytest.fixture(scope="module")
def masked():
    """The tiny spec with masks at gaps 0 and 1: ``{gap: FrameSet}``."""
    from s2r.datasets import load_dataset

    return {gap: load_dataset(f"{TINY},gap={gap},masks=true") for gap in (0.0, 1.0)}


def test_masks_cover_the_button_in_both_looks_and_add_nothing_to_the_frames(masked, tiny_sets):
    at1 = masked[1.0]
    assert at1.has_masks and not tiny_sets[1.0].has_masks          # default: no masks
    rows = np.arange(len(at1))
    assert np.array_equal(at1.read_images(rows), tiny_sets[1.0].read_images(rows))
    masks = at1.read_masks(rows)
    assert set(np.unique(masks).tolist()) == {0, 1}
    area = masks.mean(axis=(1, 2))
    assert (area > 0).all() and (area < 0.05).all()               # the button, in every frame
    sim, real = masks[at1.domain == "sim"], masks[at1.domain == "real"]
    assert not np.array_equal(sim, real)                          # the real camera moved
    at0 = masked[0.0].read_masks(rows)
    assert np.array_equal(at0[masked[0.0].domain == "real"], at0[masked[0.0].domain == "sim"])
    assert np.array_equal(at0[masked[0.0].domain == "sim"], sim)  # the sim look: any gap


def test_the_masks_option_keeps_every_fingerprint_without_it(masked, tiny_sets):
    from s2r.datasets import load_dataset

    plain = load_dataset(f"{TINY},gap=1.0,masks=false")
    assert plain.fingerprint == tiny_sets[1.0].fingerprint
    assert masked[1.0].fingerprint != plain.fingerprint           # masks are part of it


def test_object_geoms_are_the_task_objects_of_every_task():
    from s2r.worlds.metaworld import sim
    from s2r.worlds.metaworld.masks import object_geoms
    from s2r.worlds.metaworld.tasks import TASKS

    for name, spec in TASKS.items():
        assert spec.bodies, name                                   # every row names its objects
        model = sim.make_env(spec).model
        geoms = object_geoms(model, name)
        assert 0 < geoms.size < model.ngeom / 2, name           # not the arm or the table


@pytest.mark.slow
def test_object_focus_on_a_tiny_metaworld_dataset(masked):
    from s2r.cache import NullCache
    from s2r.metrics.params import ScoreParams
    from s2r.pipeline.object_focus import focus_rows, object_focus

    fs = masked[1.0]
    rec = object_focus(fs, "resnet18@random", ScoreParams(n_boot=50), cache=NullCache(),
                       device="cpu")
    rows = focus_rows(fs.domain)
    assert rec["object_focus_floor"] == pytest.approx(fs.read_masks(rows).mean())
    assert 0.0 <= rec["object_focus"] <= 1.0
    assert rec["object_focus_frames"]["n_episodes"] == 2
