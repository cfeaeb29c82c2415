"""Meta-World's controls (mw-simcnn-dr0/-dr1): their recipe, their training frames (both
default tasks, randomised looks from other seeds than validation's), trained on first use."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.worlds import WORLDS
from tests.helpers.simcnn_files import training_frames


def test_randomised_frames_show_the_same_episodes_in_other_looks():
    task = WORLDS["metaworld"].task({"task": "button-press-topdown-v3"})
    f0, s0 = task.randomised_frames(2, 6, strength=0.0, seed=0, height=48, width=64)
    f1, s1 = task.randomised_frames(2, 6, strength=1.0, seed=0, height=48, width=64)
    again, _ = task.randomised_frames(2, 6, strength=1.0, seed=0, height=48, width=64)
    assert f0.shape == (6, 48, 64, 3) and s0.shape == (6, 10)    # every other step of 6
    np.testing.assert_array_equal(s0, s1)          # the same episodes ...
    assert np.abs(f0.astype(int) - f1).mean() > 5  # ... in other looks
    np.testing.assert_array_equal(f1, again)       # seeded
    with pytest.raises(ValueError, match="strength"):
        task.randomised_frames(1, 2, strength=2.0, seed=0, height=48, width=64)


def test_the_controls_train_on_both_default_tasks(monkeypatch):
    """The backend trains a control on its world's task mix: half of the episodes of each
    default task, labelled with the 10 task-state columns (object pose, goal)."""
    import dataclasses

    from s2r.encoders import get_spec
    from s2r.encoders.backends import simcnn as backend
    from s2r.settings import current

    controls = WORLDS["metaworld"].controls
    assert set(controls) == {"mw-simcnn-dr0", "mw-simcnn-dr0.25", "mw-simcnn-dr0.5",
                             "mw-simcnn-dr0.75", "mw-simcnn-dr1"}
    for cid in controls:
        monkeypatch.setitem(controls, cid, dataclasses.replace(controls[cid], episodes=2,
                                                               steps=4))
    seen = training_frames(monkeypatch, get_spec("mw-simcnn-dr1"), current())
    assert seen["frames"].shape == (4, 96, 128, 3) and seen["targets"].shape == (4, 10)
    button, assembly = seen["targets"][:2], seen["targets"][2:]
    assert np.all(button[:, 9] > 0.1) and np.allclose(assembly[:, 9], 0.1)   # goal heights
    recipe = backend.control_recipe(get_spec("mw-simcnn-dr0"))
    assert (recipe["randomisation"], recipe["state_columns"]) == (0.0, [4, 14])


def test_a_missing_control_is_trained_once_on_first_use_with_progress(tmp_path, monkeypatch):
    """``validate``'s first step: a missing mw-simcnn control is trained before the loop
    (reported on its bar), saved under its versioned name, then loaded, never retrained."""
    import dataclasses

    from s2r.encoders import build_encoder, status
    from s2r.encoders.backends import simcnn as backend
    from s2r.settings import current

    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("S2R_ENCODERS", str(tmp_path / "encoders.toml"))
    (tmp_path / "encoders.toml").write_text("")
    controls = WORLDS["metaworld"].controls
    small = dataclasses.replace(controls["mw-simcnn-dr0"], episodes=2, steps=4, epochs=1)
    monkeypatch.setitem(controls, "mw-simcnn-dr0", small)
    assert "trained on first use" in status("mw-simcnn-dr0", settings=current()).message
    seen = []
    trained = backend.train_missing_controls(
        ["state", "pixels", "mw-simcnn-dr0"], settings=current(),
        progress=lambda done, total, message="": seen.append(message))
    assert trained == ["mw-simcnn-dr0"]
    assert seen[0].startswith("mw-simcnn-dr0: rendering its training frames (first use")
    assert any(m.startswith("mw-simcnn-dr0 (first use): ") for m in seen[1:])
    path = tmp_path / "weights" / f"mw-simcnn-dr0.v{small.version}.safetensors"
    assert path.is_file() and small.version >= 2          # v2: the 5-minute recipe
    assert backend.train_missing_controls(["mw-simcnn-dr0"], settings=current()) == []
    enc = build_encoder("mw-simcnn-dr0", device="cpu", settings=current())
    assert enc.embed(np.zeros((2, 96, 128, 3), np.uint8)).shape == (2, 128)


def test_randomised_training_gaps_lean_toward_the_full_gap():
    """dr1 v3 draws each episode's gap with density 2g: every gap in [0, strength], three
    in four above half of it (v2's uniform draw had half), the mean near 2/3; none without
    randomisation."""
    from s2r.worlds.metaworld.controls import _gap

    rng = np.random.default_rng(0)
    gaps = np.array([_gap(rng, 1.0) for _ in range(20_000)])
    assert gaps.min() >= 0.0 and gaps.max() <= 1.0
    assert abs(np.mean(gaps > 0.5) - 0.75) < 0.02 and abs(gaps.mean() - 2 / 3) < 0.01
    half = np.array([_gap(rng, 0.5) for _ in range(2_000)])
    assert half.max() <= 0.5 and abs(half.mean() - 1 / 3) < 0.02
    assert _gap(rng, 0.0) == 0.0


def test_the_study_controls_sit_between_dr0_and_dr1():
    """dr0.25/0.5/0.75: the same recipe at increasing strength, episodes and epochs between
    dr0's and dr1's (growing with strength), their own weights files, estimated minutes between
    the measured dr0 and dr1, and not in validate's default set; dr0 and dr1 unchanged."""
    from s2r.encoders import get_spec

    c = WORLDS["metaworld"].controls
    ladder = [c[f"mw-simcnn-dr{s}"] for s in ("0", "0.25", "0.5", "0.75", "1")]
    assert [r.strength for r in ladder] == [0.0, 0.25, 0.5, 0.75, 1.0]
    for field in ("episodes", "epochs", "minutes"):
        values = [getattr(r, field) for r in ladder]
        assert values == sorted(values) and len(set(values)) == 5, field
    assert [(r.episodes, r.epochs, r.version, r.minutes) for r in (ladder[0], ladder[-1])] == [
        (200, 12, 2, 3), (600, 16, 3, 12)]
    for r in ladder:                     # the same recipe but for strength and size
        assert (r.steps, r.seed, r.state_columns, r.task, r.height, r.width) == (
            60, 0, (4, 14), ladder[0].task, 96, 128)
    files = {get_spec(r.id).weights_file for r in ladder}
    assert len(files) == 5
    assert [(r.default, r.minutes_estimated) for r in ladder] == [
        (True, False), (False, True), (False, True), (False, True), (True, False)]
    # minutes: the measured rate (1.25 min per 1,000 episode-epochs) times each one's size
    for r in ladder[1:-1]:
        assert abs(r.minutes - 1.25 * r.episodes * r.epochs / 1000) <= 0.5


def test_an_estimated_control_says_so_in_its_first_use_note(tmp_path):
    from s2r.encoders.first_use import FirstUse

    assert "(estimated ~7 min" in FirstUse("mw-simcnn-dr0.5", 7, tmp_path, estimated=True).note
    assert "(measured ~3 min" in FirstUse("mw-simcnn-dr0", 3, tmp_path).note
