"""How more encoders narrow the intervals: the per-task-gap widths against an independent
loop over scipy's Spearman on the same draws, and what must happen to every width
(metamorphic: more encoders narrow it, a perfect ranking has none, shuffled outcomes centre
the combined estimate on the floor)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr

from s2r.errors import S2RError
from s2r.evidence import narrowing
from s2r.evidence.narrowing import (encoder_subsets, evidence_narrowing, interval_narrowing,
                                    subset_widths)
from tests.evidence.handmade import DOWN, TIED, UP, make_evidence


def _cell(task: str, x, y, gap=0.5) -> dict:
    """A cell of one score (``dis``) with ``success``; None where an encoder holds none."""
    x = [None if v is None else float(v) for v in x]
    return {"report": 0, "world": "w", "task": task, "shift": "all", "gap": gap,
            "encoders": [f"e{j}" for j in range(len(x))],
            "outcomes": {"success": [float(v) for v in y]}, "scores": {"dis": x}}


def _related(n_cells: int, n_encoders: int, *, noise: float = 0.5, shuffle: bool = False,
             seed: int = 0) -> list:
    """Cells whose outcome is a fixed increasing function of the score plus noise (the same
    true rank relation in each), or outcomes unrelated to the score."""
    rng = np.random.default_rng(seed)
    cells = []
    for c in range(n_cells):
        x = rng.normal(size=n_encoders)
        y = 1 / (1 + np.exp(-(x + noise * rng.normal(size=n_encoders))))
        cells.append(_cell(f"t{c}", x, rng.permutation(y) if shuffle else y))
    return cells


def _rows(cells, ks, n_boot=300, n_subsets=8, seed=0) -> dict:
    rows = interval_narrowing(cells, "dis", ks=ks, n_boot=n_boot, n_subsets=n_subsets,
                              rng=np.random.default_rng(seed))
    return {r["k"]: r for r in rows}


def _naive_widths(x, y, subsets, n_boot, rng) -> np.ndarray:
    """The same encoder bootstrap, one replicate at a time through scipy."""
    out = []
    for s in subsets:
        xs, ys = x[s], y[s]
        pick = rng.integers(0, len(s), (n_boot, len(s)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # scipy warns of a constant replicate
            own = spearmanr(xs, ys).statistic
            reps = np.array([spearmanr(xs[p], ys[p]).statistic for p in pick])
        reps = reps[~np.isnan(reps)]
        if np.isnan(own) or not reps.size:
            out.append(np.nan)
            continue
        low, high = np.quantile(reps, [0.025, 0.975])
        out.append(high - low)
    return np.array(out)


@pytest.mark.parametrize("x", [[0.3, 0.1, 0.9, 0.4, 0.7, 0.2, 0.8, 0.5],
                               [0, 0, 0, 0, 0, 0.7, 0, 0.4]])       # clipped: ties
def test_the_per_task_gap_widths_are_scipys_on_the_same_draws(x):
    x = np.array(x)
    y = np.array([0.2, 0.1, 0.8, 0.5, 0.4, 0.3, 0.9, 0.6])
    subsets = np.vstack([encoder_subsets(8, 5, 6, np.random.default_rng(1)), [0, 1, 2, 3, 4]])
    mine = subset_widths(x, y, subsets, n_boot=150, rng=np.random.default_rng(2))
    naive = _naive_widths(x, y, subsets, 150, np.random.default_rng(2))
    np.testing.assert_allclose(mine, naive, atol=1e-12)
    assert np.isfinite(mine[:-1]).all() and 0 < mine[:-1].min() <= mine[:-1].max() <= 2
    assert np.isnan(mine[-1]) == (np.ptp(x[:5]) == 0)    # five tied encoders: no rho


def test_blocks_of_subsets_give_the_unblocked_widths(monkeypatch):
    x, y = np.arange(9.0), np.array([3, 1, 2, 6, 5, 4, 9, 7, 8.0])
    subsets = encoder_subsets(9, 6, 5, np.random.default_rng(0))
    whole = subset_widths(x, y, subsets, n_boot=40, rng=np.random.default_rng(3))
    monkeypatch.setattr(narrowing, "_BLOCK_VALUES", 2 * 40 * 6)    # blocks of 2, 2 and 1
    np.testing.assert_array_equal(
        subset_widths(x, y, subsets, n_boot=40, rng=np.random.default_rng(3)), whole)


def test_subsets_are_drawn_without_replacement():
    subsets = encoder_subsets(7, 4, 200, np.random.default_rng(0))
    assert subsets.shape == (200, 4)
    assert all(len(set(s)) == 4 and set(s) <= set(range(7)) for s in subsets.tolist())
    assert len({frozenset(s) for s in subsets.tolist()}) > 20        # not one subset repeated


def test_more_encoders_narrow_both_intervals():
    rows = _rows(_related(6, 19), (5, 9, "all"))
    for key in ("task_gap_width", "combined_width"):
        widths = [rows[k][key] for k in (5, 9, "all")]
        assert widths[0] > widths[1] > widths[2] > 0, (key, widths)
    assert rows["all"]["n_encoders"] == 19 and rows[5]["n_encoders"] == 5


def test_a_perfect_ranking_has_no_width_at_any_k():
    rng = np.random.default_rng(0)
    cells = []
    for c in range(4):
        x = rng.normal(size=10)
        cells.append(_cell(f"t{c}", x, 1 / (1 + np.exp(-3 * x))))    # strictly increasing
    for row in _rows(cells, (3, 5, "all")).values():
        assert row["task_gap_width"] == 0 and row["combined_width"] == 0
        assert row["combined_mean"] == 1 and row["undefined_share"] == 0


def test_shuffled_outcomes_centre_the_combined_estimate_on_the_floor():
    for k, row in _rows(_related(30, 13, shuffle=True), (5, "all"), n_boot=200,
                        n_subsets=4).items():
        assert abs(row["combined_mean"]) < 0.12, (k, row)
        assert row["combined_width"] > 0.2
    signal = _rows(_related(30, 13), ("all",), n_boot=200, n_subsets=4)["all"]
    assert signal["combined_mean"] > 0.5


def test_at_all_the_combined_centre_is_the_mean_of_the_cells_rhos():
    cells = _related(3, 7, noise=1.0, seed=4)
    expected = np.mean([spearmanr([v for v in c["scores"]["dis"]],
                                  c["outcomes"]["success"]).statistic for c in cells])
    assert _rows(cells, ("all",))["all"]["combined_mean"] == pytest.approx(expected)


def test_cells_smaller_than_k_are_left_out_and_counted():
    cells = _related(3, 9)
    cells.append(_cell("four", [0.1, 0.5, 0.3, 0.9, None, None], [0.2, 0.6, 0.1, 0.8, 0.5, 0.4]))
    cells.append(_cell("two", [0.1, 0.5], [0.2, 0.6]))
    cells.append(_cell("sim look", np.arange(12.0), np.arange(12.0) / 12, gap=0.0))
    rows = _rows(cells, (5, 9, "all"))
    assert (rows[5]["n_cells"], rows[5]["n_left_out"]) == (3, 2)
    assert (rows[9]["n_cells"], rows[9]["n_left_out"]) == (3, 2)
    assert (rows["all"]["n_cells"], rows["all"]["n_left_out"]) == (4, 1)
    empty = _rows(cells, (10,))[10]
    assert (empty["n_cells"], empty["n_left_out"]) == (0, 5)
    assert empty["task_gap_width"] is None and empty["combined_width"] is None


def test_the_rows_are_seeded():
    cells = _related(3, 8)
    assert _rows(cells, (5, "all"), seed=7) == _rows(cells, (5, "all"), seed=7)
    assert _rows(cells, (5,), seed=7) != _rows(cells, (5,), seed=8)


@pytest.mark.parametrize("kwargs, message", [
    ({"ks": (0,)}, "each k must be a whole number"),
    ({"ks": (1, 5)}, "each k must be a whole number"),
    ({"ks": (2,)}, "each k must be a whole number"),
    ({"ks": (4.5,)}, "each k must be a whole number"),
    ({"ks": (True,)}, "each k must be a whole number"),
    ({"ks": ("five",)}, "each k must be a whole number"),
    ({"ks": ()}, "ks must be a list of 1 to 16"),
    ({"ks": "all"}, "ks must be a list of 1 to 16"),
    ({"n_boot": 0}, "n_boot must be in [1, 100000], got 0"),
    ({"n_boot": 2.5}, "n_boot must be an integer, got 2.5"),
    ({"n_subsets": 0}, "n_subsets must be in [1, 1000], got 0"),
    ({"n_boot": 100_000, "n_subsets": 11}, "n_boot x n_subsets must be at most 1,000,000"),
    ({"outcome": "reward"}, "outcome must be one of success, progress"),
])
def test_bad_counts_are_one_clear_line(kwargs, message):
    kwargs = {"ks": (5,), "n_boot": 10, "n_subsets": 2, "outcome": "success", **kwargs}
    with pytest.raises(S2RError) as caught:
        interval_narrowing(_related(1, 6), "dis", rng=np.random.default_rng(0), **kwargs)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(S2RError, match="must"):
        evidence_narrowing(make_evidence([("w", "t", 0.5, {"dis": UP})], {"dis": (1, 1, 1)}),
                           **kwargs)


def test_every_score_of_an_evidence_draws_the_same_stream():
    cells = [("w", "t1", 0.5, {"dis": UP, "transfer_score": DOWN}),
             ("w", "t2", 1.0, {"dis": TIED, "transfer_score": UP}),
             ("w", "t1", 0.0, {"dis": DOWN, "transfer_score": DOWN})]
    both = make_evidence(cells, {"transfer_score": (0, -1, 1), "dis": (0, -1, 1)})
    alone = make_evidence([c[:3] + ({"dis": c[3]["dis"]},) for c in cells], {"dis": (0, -1, 1)})
    rows = evidence_narrowing(both, ks=(3, "all"), n_boot=50, n_subsets=3)
    assert [(r["score"], r["k"]) for r in rows] == [("transfer_score", 3), ("transfer_score",
                                                    "all"), ("dis", 3), ("dis", "all")]
    assert rows[2:] == evidence_narrowing(alone, ks=(3, "all"), n_boot=50, n_subsets=3)
    alike = make_evidence([c[:3] + ({"dis": c[3]["dis"], "transfer_score": c[3]["dis"]},)
                           for c in cells], {"transfer_score": (0, -1, 1), "dis": (0, -1, 1)})
    twins = evidence_narrowing(alike, ks=(3, "all"), n_boot=50, n_subsets=3)
    assert [{**r, "score": "dis"} for r in twins[:2]] == twins[2:] == rows[2:]
    transfer_all = rows[1]          # +1 at t2, -1 at t1 (the sim look's cell left out)
    assert transfer_all["n_cells"] == 2 and transfer_all["combined_mean"] == 0
    assert transfer_all["task_gap_width"] == 0
