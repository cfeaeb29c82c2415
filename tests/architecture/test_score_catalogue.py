"""One catalogue of scores (issue 25 item 3): a score added as one pure function and one row of
:data:`s2r.metrics.catalogue.SCORES` appears in the record with its interval, in the CLI's
table, in the report written with ``--out``, and among the Scores page's axis options."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from s2r.metrics import catalogue
from s2r.metrics.catalogue import Score
from ui import pages

TINY = "demo:episodes=4,steps=8,height=64,width=80"


def mean_norm(Z, domain, actions, weights) -> float:
    """The toy score: the bootstrap-weighted mean Euclidean norm of the embeddings."""
    norms = np.linalg.norm(np.asarray(Z, dtype=np.float64), axis=1)
    return float(np.sum(weights * norms) / np.sum(weights))


TOY = Score("toy_mean_norm", "Toy: mean embedding norm", "Toy norm", 0.0, math.inf,
            views=("summary", "table", "y"), compute=mean_norm)


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(catalogue, "SCORES", catalogue.SCORES + (TOY,))
    return TOY


# ----------------------------------------------------------------------------- the table itself
def test_catalogue_rows_are_unique_and_consistent():
    keys = [s.key for s in catalogue.SCORES]
    assert len(keys) == len(set(keys))
    for s in catalogue.SCORES:
        assert s.title and s.short and s.low < s.high
        assert set(s.views) <= set(catalogue.VIEWS)
        if s.ranked:                       # pairwise comparisons need bootstrap replicates
            assert s.interval, s.key
        if not s.interval:                 # a reference value is never offered as a score
            assert not s.views, s.key
    # every raw action score has its floor and ceiling rows, named as the scorer writes them
    for probe in ("transfer_score", "action_score_heldout", "transfer_score_reverse"):
        for suffix in ("", "_floor", "_ceiling", "_skill"):
            assert catalogue.get(probe + suffix).interval
    with pytest.raises(KeyError, match="unknown score 'nope'"):
        catalogue.get("nope")
    with pytest.raises(ValueError, match="unknown views"):
        Score("x", "X", "X", views=("sidebar",))
    with pytest.raises(ValueError, match="unknown view"):
        catalogue.keys("sidebar")


def test_record_keys_are_the_catalogue_and_bounded_scores_stay_in_range():
    from s2r.metrics.scoring import score_embeddings

    rng = np.random.default_rng(0)
    n_ep, per = 12, 10
    episode = np.repeat(np.arange(2 * n_ep), per)
    domain = np.where(episode < n_ep, "sim", "real")
    actions = rng.normal(size=(len(episode), 3))
    Z = np.concatenate([actions @ rng.normal(size=(3, 6)), rng.normal(size=(len(episode), 4))],
                       axis=1) + (domain == "real")[:, None] * 0.3
    rec = score_embeddings(Z, domain, actions, episode, state=actions + 0.01,
                           params=_params(n_boot=40, pca_dim=4))
    for key in catalogue.interval_keys():
        assert {key, f"{key}_ci_low", f"{key}_ci_high"} <= set(rec), key
        low, high = catalogue.score_range(key)
        for k in (key, f"{key}_ci_low", f"{key}_ci_high"):
            if rec[k] is not None and k != key:
                assert low <= rec[k] <= high, (k, rec[k])
    for key in catalogue.reference_keys():
        assert key in rec and f"{key}_ci_low" not in rec
    assert set(rec["replicates"]) == set(catalogue.ranked_keys())


def _params(**kw):
    from s2r.metrics.params import ScoreParams

    return ScoreParams(**kw)


# ----------------------------------------------------------------------------- a toy score
def test_a_toy_score_is_computed_with_its_interval(toy):
    from s2r.metrics.scoring import score_embeddings

    rng = np.random.default_rng(1)
    episode = np.repeat(np.arange(16), 8)
    domain = np.where(episode < 8, "sim", "real")
    Z = rng.normal(size=(len(episode), 5)) * (1 + episode[:, None] % 3)
    actions = rng.normal(size=(len(episode), 2))
    rec = score_embeddings(Z, domain, actions, episode, params=_params(n_boot=200, pca_dim=4))
    expected = float(np.linalg.norm(Z, axis=1).mean())          # all weights 1
    assert rec["toy_mean_norm"] == pytest.approx(expected, rel=1e-12)
    assert rec["toy_mean_norm_ci_low"] < expected < rec["toy_mean_norm_ci_high"]


@pytest.mark.slow
def test_a_toy_score_reaches_the_cli_table_the_report_and_the_scores_page(
        toy, tmp_path, monkeypatch, capsys):
    from s2r.cli import main

    out = tmp_path / "report.json"
    args = ["score", TINY, "--encoders", "pixels", "--n-boot", "50", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 0
    header = next(line for line in capsys.readouterr().out.splitlines()
                  if line.strip().startswith("encoder.id"))
    assert header.split()[-1] == "toy_mean_norm"             # the table's last column
    (record,) = json.loads(out.read_text())
    assert record["toy_mean_norm_ci_low"] <= record["toy_mean_norm"] \
        <= record["toy_mean_norm_ci_high"]

    # The Scores page (AppTest runs the page in this process: it sees the patched catalogue)
    # offers the toy score on its y axis and shows it in its table.
    from tests.ui.apptest import no_exception, open_app, use_env

    use_env(monkeypatch, tmp_path / "app-cache")
    monkeypatch.setenv("S2R_DEMO_SPEC", TINY)
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "pixels")
    at = open_app()
    at.run()
    no_exception(at)
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    radio = next(r for r in at.radio if r.label == "Action score (y axis)")
    assert "Toy norm" in radio.options
    table = next(d.value for d in at.dataframe if "DIS" in d.value.columns)
    assert "Toy norm" in table.columns
