"""Saliency of a recorded closed-loop rollout's frame (s2r.pipeline.rollout_saliency, issue 34):
the workflow the Validation page ran by itself (render the sim look of the recorded state,
maps of both, agreement) as one library function on the CLI's saliency step."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.cache import Cache
from s2r.closedloop import encoder_rollouts as R
from s2r.errors import S2RError

TINY = R.RolloutParams(rollouts=3, horizon=6, demos=4, demo_steps=16, height=64, width=64,
                       control_demos=6)
GAP = 1.0
SPEC = "demo:paired=true,episodes=3,steps=6,height=64,width=64"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The pixel baseline's rollouts, recorded in a cache; its encoder."""
    from s2r.encoders import build_encoder

    cache = Cache(tmp_path_factory.mktemp("rollouts") / "cache")
    R.encoder_rollouts("pixels", [GAP], spec=SPEC, params=TINY, cache=cache)
    return cache, build_encoder("pixels", device="cpu")


def test_the_pair_is_the_recorded_frame_and_its_state_in_the_sim_look(recorded):
    from s2r.closedloop.encoder_rollouts import task_of
    from s2r.closedloop.rollout import render_rollout_frame
    from s2r.pipeline import rollout_saliency
    from s2r.saliency import saliency_maps, sim_real_agreement

    cache, encoder = recorded
    frames = R.recorded_rollout("pixels", TINY, "real", GAP, cache, spec=SPEC)
    record = cache.get_json(R.rollout_key("pixels", TINY, "real", GAP, spec=SPEC))["record"]
    step = len(frames) // 2
    res = rollout_saliency(encoder, SPEC, TINY, GAP, step, method="ig", cache=cache)
    assert res.sim_indices.tolist() == res.real_indices.tolist() == [step]
    np.testing.assert_array_equal(res.real_frames[0], frames[step])     # what the policy saw
    sim = render_rollout_frame(task_of(SPEC), record["states"][step], k=record["index"],
                               look="sim",
                               seed=TINY.seed, height=64, width=64, step=step)
    np.testing.assert_array_equal(res.sim_frames[0], sim)
    assert not np.array_equal(res.sim_frames[0], res.real_frames[0])     # gap 1: two looks
    assert res.sim.maps.shape == res.real.maps.shape == (1, 64, 64)
    assert res.target == "embedding" and res.sim_masks is None
    # the maps the page computed before: both frames in one batch, toward the embedding
    before = saliency_maps(encoder, np.stack([sim, frames[step]]), method="ig")
    np.testing.assert_allclose(np.concatenate([res.sim.maps, res.real.maps]), before,
                               atol=1e-5)
    agreement = res.measures()[0]["agreement"]
    assert agreement == sim_real_agreement(res.sim.maps[0], res.real.maps[0])
    assert -1.0 <= agreement <= 1.0


def test_a_missing_rollout_or_step_is_one_clear_error(recorded, tmp_path):
    from s2r.pipeline import rollout_saliency

    cache, encoder = recorded
    frames = R.recorded_rollout("pixels", TINY, "real", GAP, cache, spec=SPEC)
    with pytest.raises(S2RError, match=rf"step {len(frames)} is not a step of the recorded "
                                       rf"rollout of pixels at gap 1 \(0\.\.{len(frames) - 1}\)"):
        rollout_saliency(encoder, SPEC, TINY, GAP, len(frames), method="ig", cache=cache)
    with pytest.raises(S2RError, match="rollout of pixels at gap 0.5 is not in the cache"):
        rollout_saliency(encoder, SPEC, TINY, 0.5, 0, method="ig", cache=cache)
    with pytest.raises(S2RError, match="not in the cache: run the validation first"):
        rollout_saliency(encoder, SPEC, TINY, GAP, 0, method="ig", cache=Cache(tmp_path / "empty"))


def test_a_weights_folder_encoders_rollout_is_found_with_the_settings(tmp_path, monkeypatch):
    """A control (its weights file in the weights folder, its fingerprint in the rollout's
    key): the Validation page's viewer found no frame for it and failed with "the weights
    folder needs s2r's settings" (seen on the default Meta-World run, mw-simcnn-dr1); with
    the settings handed down its recorded step comes back in both looks."""
    from s2r.pipeline import rollout_step_frames
    from s2r.settings import current
    from tests.helpers.simcnn_files import CONTROL_FILES, LEGACY_CONTROL_INFO, write_simcnn

    weights = tmp_path / "weights"
    weights.mkdir()
    write_simcnn(weights / CONTROL_FILES["simcnn-dr0"], LEGACY_CONTROL_INFO["simcnn-dr0"])
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(weights))
    cache, settings = Cache(tmp_path / "cache"), current()
    R.encoder_rollouts("simcnn-dr0", [GAP], spec=SPEC, params=TINY, cache=cache,
                       settings=settings)
    frames = R.recorded_rollout("simcnn-dr0", TINY, "real", GAP, cache, spec=SPEC,
                                settings=settings)
    real, sim = rollout_step_frames("simcnn-dr0", SPEC, TINY, GAP, 1, cache=cache,
                                    settings=settings)
    np.testing.assert_array_equal(real, frames[1])
    assert sim.shape == real.shape == (64, 64, 3) and not np.array_equal(sim, real)
