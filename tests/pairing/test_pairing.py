"""Frame pairing: nearest real frame by standardised state (or action)."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import DataError
from s2r.frameset import FrameSet
from s2r.pairing import FramePairer, frame_pair, pair_frames, pairing_features
from tests.helpers.datafiles import frames


def make_fs(sim_state, real_state, sim_actions=None, real_actions=None):
    """Sim frames then real frames; ``sim_state=None`` means no state (sizes from actions)."""
    ns = len(sim_state if sim_state is not None else sim_actions)
    nr = len(real_state if real_state is not None else real_actions)
    n = ns + nr
    rng = np.random.default_rng(0)
    actions = (np.concatenate([sim_actions, real_actions]) if sim_actions is not None
               else rng.normal(size=(n, 2)))
    return FrameSet(
        images=frames(n, 4, 4), actions=actions, domain=["sim"] * ns + ["real"] * nr,
        episode=[0] * ns + [1] * nr, step=list(range(ns)) + list(range(nr)),
        state=None if sim_state is None else np.concatenate([sim_state, real_state]))


def brute_force(features, sim_idx, real_idx):
    d = ((features[sim_idx][:, None, :] - features[real_idx][None, :, :]) ** 2).sum(-1)
    return real_idx[d.argmin(axis=1)], np.sqrt(d.min(axis=1))


def test_exact_partner_when_real_replays_sim_states():
    rng = np.random.default_rng(1)
    sim_state = rng.normal(size=(30, 5)).astype(np.float32)
    perm = rng.permutation(30)
    real_state = np.concatenate([sim_state[perm], rng.normal(size=(10, 5)).astype(np.float32)])
    fs = make_fs(sim_state, real_state)
    real, dist = pair_frames(fs, return_distance=True)
    # sim frame i has the state of real position j where perm[j] == i
    expected = 30 + np.argsort(perm)
    np.testing.assert_array_equal(real, expected)
    np.testing.assert_allclose(dist, 0.0, atol=1e-12)
    assert frame_pair(fs, 7) == (7, int(expected[7]))


def test_standardisation_stops_a_large_unit_dominating():
    # state = (position in mm, gripper width in m). Raw distances would follow the mm column.
    sim_state = np.array([[0.0, 0.00]], np.float32)
    real_state = np.array([[30.0, 0.00],     # 30 mm away, same gripper
                           [1.0, 0.08],      # 1 mm away, gripper fully open instead of closed
                           [500.0, 0.04]], np.float32)
    fs = make_fs(sim_state, real_state)
    feats, used = pairing_features(fs)
    assert used == "state"
    allv = np.concatenate([sim_state, real_state]).astype(np.float64)
    np.testing.assert_allclose(feats, (allv - allv.mean(0)) / allv.std(0))
    # standardised: mm column std ~ 212, width std ~ 0.033 -> the 30 mm frame is nearest
    assert pair_frames(fs)[0] == 1
    raw_nearest = 1 + np.argmin(((real_state - sim_state) ** 2).sum(1))
    assert raw_nearest == 2  # what an unstandardised search would pick


def test_matches_brute_force_on_random_data_and_subsets(monkeypatch):
    import s2r.pairing

    monkeypatch.setattr(s2r.pairing, "_BLOCK_ELEMENTS", 150 * 3)  # 3 sim frames per block
    rng = np.random.default_rng(3)
    fs = make_fs(rng.normal(size=(200, 3)) * [1, 10, 100], rng.normal(size=(150, 3)) * [1, 10, 100])
    feats, _ = pairing_features(fs, "state")
    sims = np.array([5, 199, 0, 42, 42])
    real, dist = pair_frames(fs, sims, return_distance=True)
    exp_real, exp_dist = brute_force(feats, sims, fs.indices("real"))
    np.testing.assert_array_equal(real, exp_real)
    np.testing.assert_allclose(dist, exp_dist, rtol=1e-9)
    pairer = FramePairer(fs)
    np.testing.assert_array_equal(pairer.query(sims), real)
    calls = []
    everything = pairer.query(progress=lambda d, t, m: calls.append((d, t)))
    assert calls[0] == (3, 200) and calls[-1] == (200, 200) and len(calls) == 67
    np.testing.assert_array_equal(everything, brute_force(feats, fs.indices("sim"),
                                                          fs.indices("real"))[0])


def test_by_action_auto_and_forced():
    sim_actions = np.array([[0.0, 0.0], [1.0, 1.0]])
    real_actions = np.array([[1.0, 1.0], [0.0, 0.0]])
    sim_state = np.array([[0.0], [1.0]])
    real_state = np.array([[0.0], [1.0]])  # state pairs 0->2, actions pair 0->3
    fs = make_fs(sim_state, real_state, sim_actions, real_actions)
    np.testing.assert_array_equal(pair_frames(fs), [2, 3])
    np.testing.assert_array_equal(pair_frames(fs, by="state"), [2, 3])
    np.testing.assert_array_equal(pair_frames(fs, by="action"), [3, 2])
    no_state = make_fs(None, None, sim_actions, real_actions)
    np.testing.assert_array_equal(pair_frames(no_state), [3, 2])  # auto falls back to actions
    assert FramePairer(no_state).by_ == "action"
    with pytest.raises(DataError, match="has no state"):
        pair_frames(no_state, by="state")


def test_bad_arguments():
    fs = make_fs(np.zeros((3, 2)), np.ones((2, 2)))
    with pytest.raises(DataError, match="frame 4 is 'real'"):
        pair_frames(fs, [0, 4])
    with pytest.raises(DataError, match="out of range"):
        pair_frames(fs, [9])
    with pytest.raises(DataError, match="must be one of"):
        pair_frames(fs, by="pixels")
    with pytest.raises(DataError, match="'real' domain has no frames"):
        pair_frames(fs.subset(fs.indices("sim")))


def test_paired_demo_has_exact_partners(paired_demo):
    fs = paired_demo
    sims = fs.indices("sim")
    real, dist = pair_frames(fs, return_distance=True)
    np.testing.assert_allclose(dist, 0.0, atol=1e-9)
    np.testing.assert_array_equal(fs.state[real], fs.state[sims])
    n_sim_eps = fs.n_episodes("sim")
    np.testing.assert_array_equal(fs.episode[real], fs.episode[sims] + n_sim_eps)
    # The demo replays sim episode e as real episode E + e, so most partners are the same step.
    assert (fs.step[real] == fs.step[sims]).mean() > 0.8


def test_unpaired_demo_pairs_by_state_not_identity(small_demo):
    fs = small_demo
    real, dist = pair_frames(fs, return_distance=True)
    assert (fs.domain[real] == "real").all()
    assert dist.min() > 0  # independent episodes: no identical states
    feats, used = pairing_features(fs)
    assert used == "state"
    exp, _ = brute_force(feats, fs.indices("sim"), fs.indices("real"))
    np.testing.assert_array_equal(real, exp)
