"""The Validation page (app_pages/validation.py): cache first, results, rollout viewer."""

from __future__ import annotations

import pytest

from s2r.cache import Cache
from s2r.closedloop.encoder_rollouts import RolloutParams
from s2r.closedloop.validation import demo_options, validate
from s2r.figures import axes
from s2r.figures import validation as V
from tests.ui.apptest import no_exception, open_app, use_env, validation_tables
from ui import state as S
from ui import pages
from ui import world_specs as W

PAGE = pages.VALIDATION.path
TINY = "demo:episodes=3,steps=6,height=64,width=64"
IDS = ["state", "pixels", "efficientnet-lite0"]


def _open(monkeypatch, cache_dir, *, rollouts=5, demos=10):
    use_env(monkeypatch, cache_dir)
    monkeypatch.setenv("S2R_DEMO_SPEC", TINY)
    at = open_app(PAGE)
    at.session_state[S.VALIDATION_ENCODERS] = IDS
    at.session_state[S.VALIDATION_GAPS] = [0.0, 1.0]
    at.session_state[S.VALIDATION_ROLLOUTS] = rollouts
    at.session_state[S.VALIDATION_DEMOS] = demos
    at.session_state[S.VALIDATION_CONTROL_DEMOS] = 6
    return at


@pytest.mark.slow
def test_nothing_cached_offers_the_run_button_and_computes_nothing(tmp_path, monkeypatch):
    at = _open(monkeypatch, tmp_path / "c")
    at.run()
    no_exception(at)
    assert any(b.label == "Run validation" for b in at.button)
    assert not validation_tables(at)                  # only the evidence section's table
    assert not list((tmp_path / "c").rglob("*.npy"))     # the cache look-up wrote nothing


@pytest.mark.slow
def test_a_cached_report_shows_tables_chart_and_the_rollout_viewer(tmp_path, monkeypatch):
    spec = W.world_spec("demo", **{**demo_options(TINY), "paired": True})
    params = RolloutParams(rollouts=5, demos=10, height=64, width=64, control_demos=6)
    validate(spec, IDS, [0.0, 1.0], params=params, cache=Cache(tmp_path / "c"), n_boot=20)
    at = _open(monkeypatch, tmp_path / "c")
    at.run()
    no_exception(at)
    assert not any(b.label == "Run validation" for b in at.button)
    success = validation_tables(at)[0]
    assert set(IDS) == set(success.index) and "gap 1" in success.columns
    assert success.loc["state", "kind"] == "reference"
    assert success.loc["pixels", "kind"] == "image encoder"
    stages = validation_tables(at)[1]
    assert list(stages.columns)[-1] == "released" and set(stages.index) == set(IDS)
    verdicts = validation_tables(at)[2]                  # per gap first, pooled last (issue 35)
    assert list(verdicts.columns) == ["gap 0", "gap 1", "pooled over gaps (second)"]
    corr = validation_tables(at)[3]
    assert set(corr["score"]) >= {"dis", "transfer_score_skill", "sim2real_score"}
    assert at.radio(key=S.VALIDATION_CORR_GAP).value == 1.0   # opens on the largest gap
    # two image encoders: nothing to rank, and the page says so in plain words
    assert any("undefined here" in m.value for m in at.markdown)
    # the scatter's score axis is clipped to the score's range, and the caption says it
    # (issue 36 item 2)
    shown = at.radio(key=S.VALIDATION_SCORE).value     # the evidence's score, defined here
    assert any(c.value == axes.range_note([shown]) and "meaningful range" in c.value
               for c in at.caption)
    assert at.slider(key=S.VALIDATION_VIEW_STEP).max >= 0
    assert at.selectbox(key=S.VALIDATION_VIEW_GAP).value == 1.0   # opens on the largest gap
    at.selectbox(key=S.VALIDATION_VIEW_GAP).select(0.0).run()     # the sim look's record
    no_exception(at)
    assert len(validation_tables(at)[-1]) > 0                        # the actions it took
    assert at.selectbox(key=S.VALIDATION_VIEW_ENCODER).value in ("pixels", "efficientnet-lite0")
    at.selectbox(key=S.VALIDATION_VIEW_ENCODER).select("efficientnet-lite0").run()
    at.toggle(key=S.VALIDATION_VIEW_SALIENCY).set_value(True).run()
    no_exception(at)
    assert any("Sim/real agreement" in m.value for m in at.markdown)
    # the scatter's figure downloads and the overlays' colour bar (issue 27)
    assert {b.proto.label for b in at.get("download_button")} >= {"SVG", "PDF", "PNG"}
    assert any("red = most salient" in c.value for c in at.caption)


class _Report:
    """What verdict_table reads of a ValidationReport: its correlation rows."""

    def __init__(self, rows):
        self.rows = rows

    def correlations_at(self, gap, outcome):
        return [r for r in self.rows if str(r["gap"]) == str(gap) and r["outcome"] == outcome]


def test_the_verdict_table_leads_with_each_gap_and_puts_the_pooled_number_last():
    def row(score, gap, rho, low, high, outcome="progress"):
        return {"score": score, "gap": gap, "outcome": outcome, "spearman": rho,
                "spearman_ci_low": low, "spearman_ci_high": high}

    report = _Report([row("dis", 0.5, -0.27, -0.88, 0.55), row("dis", 1.0, -0.9, -0.99, -0.2),
                      row("dis", "all", 0.63, 0.46, 0.84),
                      row("sim2real_score", 1.0, None, None, None),
                      row("dis", 1.0, 0.9, 0.5, 0.99, outcome="success")])
    table = V.verdict_table(report, "progress", [0.5, 1.0])
    assert list(table.columns) == ["gap 0.5", "gap 1", "pooled over gaps (second)"]
    dis = table.loc["Domain invariance (DIS)"]
    assert dis["gap 0.5"] == "-0.27 [-0.88, +0.55] chance"
    assert dis["gap 1"] == "-0.90 [-0.99, -0.20] against"          # not the success row
    assert dis["pooled over gaps (second)"] == "+0.63 [+0.46, +0.84] above chance"
    s2r = table.loc["Sim2Real score"]
    assert s2r["gap 1"] == "undefined" and s2r["gap 0.5"] == "undefined"
    assert "Transfer skill (sim probe on real)" not in table.index    # no row: not listed


def test_the_scatter_opens_on_the_first_score_defined_at_the_headline_gap():
    def row(score, gap, rho, outcome="success"):
        return {"score": score, "gap": gap, "outcome": outcome, "spearman": rho}

    choices = ["sim2real_score", "dis", "paired_retrieval_mrr"]
    report = _Report([row("sim2real_score", 1.0, None), row("dis", 1.0, 0.2),
                      row("paired_retrieval_mrr", 1.0, 0.9),
                      row("sim2real_score", 0.5, 0.4)])
    assert V.default_score(report, 1.0, "success", choices) == "dis"   # Sim2Real flat at 1
    assert V.default_score(report, 0.5, "success", choices) == "sim2real_score"
    assert V.default_score(report, 1.0, "progress", choices) == "sim2real_score"  # none: first
    assert V.default_score(_Report([row("dis", 1.0, None), row("sim2real_score", 1.0, -0.1)]),
                           1.0, "success", choices) == "sim2real_score"


def test_verdicts_say_in_plain_words_what_an_interval_allows():
    row = {"spearman": 0.7, "spearman_ci_low": 0.2, "spearman_ci_high": 0.95}
    assert V.verdict(row) == "ranked the encoders as deployment did (rho +0.70 [+0.20, +0.95])"
    assert V.verdict({**row, "spearman_ci_low": -0.1}).startswith(
        "cannot be told from chance here")
    assert V.verdict({"spearman": -0.8, "spearman_ci_low": -0.95,
                      "spearman_ci_high": -0.3}).startswith("ranked them against deployment")
    assert V.verdict({"spearman": None}).startswith("undefined here")
    assert V.encoder_kind("state") == "reference"
    assert V.encoder_kind("simcnn-dr1") == "control"
    assert V.encoder_kind("resnet18@random") == "random init"
    assert V.encoder_kind("efficientnet-lite0@blocks.4") == "layer tap"
    assert V.encoder_kind("efficientnet-lite0") == "image encoder"
