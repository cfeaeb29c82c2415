"""score_embeddings records (s2r.metrics.scoring): floors, ceilings, skills, intervals, not
estimable, the Sim2Real score of a record, the null control, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.dis import domain_invariance_score
from s2r.metrics.baselines import MIN_EPISODES, SIM2REAL_FORMULA, sim2real_score
from s2r.metrics.crossval import domain_probe_accuracy, heldout_action_score, transfer_score
from s2r.metrics.action_probe import ALPHA_GRID, PAPER_TRAIN_ALPHA, action_score
from s2r.metrics.params import ScoreParams
from s2r.metrics import catalogue
from s2r.metrics.scoring import (ACTION_SCORES, SCORE_VERSION,
                                 score_embeddings)


def synthetic(n_episodes=12, steps=10, dim=10, shift=0.4, seed=0):
    rng = np.random.default_rng(seed)
    n = n_episodes * steps
    Z = rng.normal(size=(n, dim))
    Y = Z[:, :3] @ rng.normal(size=(3, 4)) + 0.3 * rng.normal(size=(n, 4))
    domain = np.repeat(["sim", "real"], n // 2)
    Z[domain == "real"] += shift
    episode = np.repeat(np.arange(n_episodes), steps)
    return Z, domain, Y, episode


def state_of(Z, domain, noise=0.1, seed=1):
    """A "robot state": the first 3 embedding features before the domain shift, plus noise."""
    rng = np.random.default_rng(seed)
    return Z[:, :3] - 0.4 * (domain == "real")[:, None] + noise * rng.normal(size=(len(Z), 3))


PARAMS = ScoreParams(pca_dim=4, n_boot=200, seed=3)


@pytest.fixture(scope="module")
def record():
    Z, domain, Y, episode = synthetic()
    return score_embeddings(Z, domain, Y, episode, state=state_of(Z, domain), params=PARAMS)


def test_record_has_every_score_with_its_interval(record):
    for k in catalogue.interval_keys():
        lo, v, hi = record[f"{k}_ci_low"], record[k], record[f"{k}_ci_high"]
        assert isinstance(v, float) and np.isfinite(v), k
        assert lo <= v <= hi, k           # every interval contains its estimate
    for k in catalogue.reference_keys():
        assert isinstance(record[k], float) and 0 <= record[k] <= 1
    assert record["params"] == {"pca_dim": 4, "distance": "squared", "ridge_alpha": "auto",
                                "train_alpha": PAPER_TRAIN_ALPHA, "seed": 3, "n_boot": 200,
                                "ci": 0.95, "n_folds": 5, "domain_C": 1.0, "null": None,
                                "sim2real": SIM2REAL_FORMULA}
    used = record["ridge_alpha_used"]
    assert used["action_score_train"] == PAPER_TRAIN_ALPHA
    assert len(used["action_score_heldout"]) == 5
    assert {used["transfer_score"], used["transfer_score_reverse"],
            *used["action_score_heldout"]} <= set(ALPHA_GRID)
    assert record["n_frames"] == {"sim": 60, "real": 60}
    assert record["n_episodes"] == {"sim": 6, "real": 6}
    assert record["heldout_unit"] == {"sim": "episode", "real": "episode"}
    assert record["not_estimable"] == {} and record["has_ceiling"] is True
    assert record["skill_reference"] == {k: "ceiling" for k in ACTION_SCORES}
    assert record["score_version"] == SCORE_VERSION and record["warnings"] == []
    assert set(record["replicates"]) >= {"sim2real_score", "transfer_score_skill", "dis"}
    assert all(len(v) == 200 for v in record["replicates"].values())
    json.dumps(record, allow_nan=False)       # strict JSON: no NaN anywhere


def test_record_agrees_with_the_individual_metrics(record):
    Z, domain, Y, episode = synthetic()
    state = state_of(Z, domain)
    assert record["dis"] == pytest.approx(
        domain_invariance_score(Z, domain, pca_dim=4, random_state=3).value, abs=1e-12)
    assert record["action_score_train"] == pytest.approx(
        action_score(Z, Y, alpha=PAPER_TRAIN_ALPHA).value, abs=1e-9)
    held = heldout_action_score(Z, domain, Y, episode, seed=3)
    assert record["action_score_heldout"] == pytest.approx(held.value, abs=1e-9)
    assert record["action_score_heldout_floor"] == pytest.approx(held.floor, abs=1e-9)
    assert record["action_score_heldout_ceiling"] == pytest.approx(
        heldout_action_score(state, domain, Y, episode, seed=3).value, abs=1e-9)
    for k, source in (("transfer_score", "sim"), ("transfer_score_reverse", "real")):
        t = transfer_score(Z, domain, Y, episode=episode, alpha="auto", source=source, seed=3)
        c = transfer_score(state, domain, Y, episode=episode, alpha="auto", source=source,
                           seed=3)
        assert record[k] == pytest.approx(t.value, abs=1e-9)
        assert record[f"{k}_floor"] == pytest.approx(t.floor, abs=1e-9)
        assert record[f"{k}_ceiling"] == pytest.approx(c.value, abs=1e-9)
    for k in ACTION_SCORES:      # skill = share of the floor-to-ceiling gap
        assert record[f"{k}_skill"] == pytest.approx(
            (record[k] - record[f"{k}_floor"])
            / (record[f"{k}_ceiling"] - record[f"{k}_floor"]), abs=1e-12)
    dp = domain_probe_accuracy(Z, domain, episode, seed=3)
    assert record["domain_probe_accuracy"] == pytest.approx(dp.value, abs=1e-12)
    assert record["domain_separability"] == pytest.approx(dp.separability, abs=1e-9)
    assert record["sim2real_score"] == pytest.approx(
        sim2real_score(record["transfer_score_skill"], record["dis"]))


def test_without_state_skills_are_measured_against_a_perfect_prediction():
    Z, domain, Y, episode = synthetic()
    r = score_embeddings(Z, domain, Y, episode, params=ScoreParams(pca_dim=4, n_boot=20))
    assert r["has_ceiling"] is False and r["paired_retrieval_top1"] is None
    for k in ACTION_SCORES:
        assert r[f"{k}_ceiling"] is None and r["skill_reference"][k] == "perfect"
        assert r[f"{k}_skill"] == pytest.approx(
            (r[k] - r[f"{k}_floor"]) / (1 - r[f"{k}_floor"]), abs=1e-12)


def test_few_episodes_make_the_action_scores_not_estimable():
    Z, domain, Y, episode = synthetic(n_episodes=2 * (MIN_EPISODES - 1))
    r = score_embeddings(Z, domain, Y, episode, params=ScoreParams(pca_dim=4, n_boot=20))
    for k in ACTION_SCORES:
        for key in (k, f"{k}_floor", f"{k}_skill"):
            assert r[key] is None and r[f"{key}_ci_low"] is None
            assert f"{MIN_EPISODES - 1} episode(s)" in r["not_estimable"][key]
    assert r["sim2real_score"] is None and "sim2real_score" in r["not_estimable"]
    # DIS, the domain probe and the training AS do not need held-out episodes.
    assert r["dis"] is not None and r["dis_ci_low"] is not None
    assert r["domain_probe_accuracy"] is not None and r["action_score_train"] is not None
    assert any("not estimable" in w for w in r["warnings"])
    json.dumps(r, allow_nan=False)


def test_sim2real_ranks_invariance_and_transfer():
    # Same action information, growing domain shift: transfer, DIS and Sim2Real all fall.
    params = ScoreParams(pca_dim=4, n_boot=0)
    s = [score_embeddings(*synthetic(shift=sh), params=params) for sh in (0.0, 0.5, 1.5)]
    assert s[0]["sim2real_score"] > s[1]["sim2real_score"] > s[2]["sim2real_score"]
    assert s[0]["transfer_score_skill"] > s[1]["transfer_score_skill"] > s[2][
        "transfer_score_skill"]
    assert s[0]["dis"] > s[1]["dis"] > s[2]["dis"]


def test_null_control_puts_every_skill_at_zero():
    Z, domain, Y, episode = synthetic()
    params = ScoreParams(pca_dim=4, n_boot=100, null="shuffle:2")
    r = score_embeddings(Z, domain, Y, episode, state=state_of(Z, domain), params=params)
    for k in ACTION_SCORES:
        assert r[f"{k}_skill_ci_low"] <= 0.0 <= r[f"{k}_skill_ci_high"], k
    assert r["params"]["null"] == "shuffle:2"
    real = score_embeddings(Z, domain, Y, episode, state=state_of(Z, domain),
                            params=ScoreParams(pca_dim=4, n_boot=100))
    assert real["transfer_score_skill_ci_low"] > 0.3     # the true actions are readable
    with pytest.raises(MetricError, match="shuffle:SEED"):
        ScoreParams(null="permute").validate()


def test_no_bootstrap_gives_none_intervals_and_seeds_are_reproducible():
    data = synthetic()
    r0 = score_embeddings(*data, params=ScoreParams(pca_dim=4, n_boot=0))
    assert all(r0[f"{k}_ci_low"] is None and r0[f"{k}_ci_high"] is None
               for k in catalogue.interval_keys())
    a = score_embeddings(*data, params=ScoreParams(pca_dim=4, n_boot=15, seed=1))
    b = score_embeddings(*data, params=ScoreParams(pca_dim=4, n_boot=15, seed=1))
    c = score_embeddings(*data, params=ScoreParams(pca_dim=4, n_boot=15, seed=2))
    assert a == b
    assert a["dis_ci_low"] != c["dis_ci_low"]
    assert a["bootstrap_id"] == b["bootstrap_id"] != c["bootstrap_id"]
    narrow = score_embeddings(*data, params=ScoreParams(pca_dim=4, n_boot=200, seed=1, ci=0.5))
    wide = score_embeddings(*data, params=ScoreParams(pca_dim=4, n_boot=200, seed=1, ci=0.99))
    for k in ("dis", "transfer_score"):
        assert (wide[f"{k}_ci_high"] - wide[f"{k}_ci_low"]
                >= narrow[f"{k}_ci_high"] - narrow[f"{k}_ci_low"])


def test_single_episode_per_domain_is_a_documented_fallback():
    Z, domain, Y, _ = synthetic(n_episodes=2, steps=60)
    r = score_embeddings(Z, domain, Y, np.repeat([0, 1], 60),
                         params=ScoreParams(pca_dim=4, n_boot=10))
    assert r["heldout_unit"] == {"sim": "time-block", "real": "time-block"}
    assert any("time blocks" in w for w in r["warnings"])
    assert all(np.isfinite(r[k]) for k in ("action_score_heldout", "transfer_score", "dis"))
    # Blocks of fewer than MIN_FRAMES_PER_BLOCK frames: not estimable.
    Z, domain, Y, _ = synthetic(n_episodes=2, steps=30)
    short = score_embeddings(Z, domain, Y, np.repeat([0, 1], 30),
                             params=ScoreParams(pca_dim=4, n_boot=10))
    assert short["action_score_heldout"] is None
    assert "time blocks of 6 frame(s)" in short["not_estimable"]["action_score_heldout"]


@pytest.mark.parametrize("case, message", [
    ("one_domain", "no 'sim' frames"),
    ("nan", "NaN or inf"),
    ("pca_dim", "pca_dim=500 is too large"),
    ("constant_embeddings", "constant"),
    ("constant_actions", "every action dimension is constant"),
    ("distance", "distance must be one of"),
    ("alpha", "ridge_alpha must be a number"),
    ("ci", "ci must be < 1"),
    ("one_frame", "at least 2"),
])
def test_bad_input(case, message):
    Z, domain, Y, episode = synthetic()
    params = ScoreParams(pca_dim=4, n_boot=5)
    if case == "one_domain":
        domain = np.full(len(Z), "real")
    elif case == "nan":
        Z[5] = np.nan
    elif case == "pca_dim":
        params = ScoreParams(pca_dim=500)
    elif case == "constant_embeddings":
        Z = np.zeros_like(Z)
    elif case == "constant_actions":
        Y = np.ones_like(Y)
    elif case == "distance":
        params = ScoreParams(distance="cosine")
    elif case == "alpha":
        params = ScoreParams(ridge_alpha="big")
    elif case == "ci":
        params = ScoreParams(ci=1.0)
    elif case == "one_frame":
        Z, domain, Y, episode = Z[:61], domain[:61], Y[:61], episode[:61]
    with pytest.raises(MetricError, match=message):
        score_embeddings(Z, domain, Y, episode, params=params)
