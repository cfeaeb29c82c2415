"""Every view that names a score says its record against closed-loop success (the Scores page's
scatter, ranking and table, the home page's table, the Layers page), and the Validation page
adds a report to your evidence: the pick of every page follows, the page says which evidence
it used, and removing your reports brings the shipped evidence back."""

from __future__ import annotations

import json

from s2r.evidence import score_record, shipped_evidence
from s2r.evidence.choice import PAPER_Y
from s2r.metrics import catalogue
from tests.ui.apptest import no_exception, open_app
from ui import pages
from ui import state as S
from ui.figures import SUBTITLE_COLOUR

RECORD = "Record against closed-loop success"


def _run(page=None):
    at = open_app(page)
    at.run()
    no_exception(at)
    return at


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def _column_help(at, frame_with: str) -> dict:
    """``{column: help}`` of the first dataframe with a column ``frame_with``."""
    for d in at.dataframe:
        if frame_with in d.value.columns:
            config = json.loads(d.proto.columns)
            return {name: c.get("help", "") for name, c in config.items()}
    raise AssertionError(f"no table with a {frame_with!r} column")


def _scatter(at) -> dict:
    return next(s for s in (json.loads(c.proto.spec) for c in at.get("vega_lite_chart"))
                if s.get("title", {}).get("text", "").startswith("Domain invariance vs"))


def test_the_scores_page_names_each_scores_record(computed, own_cache):
    at = _run(pages.SCORES.path)
    y = at.session_state[S.SCORES_Y]
    dis = score_record(shipped_evidence(), "dis").phrase
    captions = _captions(at)
    assert f"{RECORD} ([evidence](validation): the evidence shipped with s2r)" in captions
    assert f"**DIS** {dis}" in captions
    assert score_record(shipped_evidence(), y).phrase in captions
    spec = _scatter(at)
    assert spec["title"]["subtitle"][1:] == [f"DIS: {dis}",
                                             f"{catalogue.get(y).short}: "
                                             f"{score_record(shipped_evidence(), y).phrase}"]
    # the paper's Fig. 5 (DIS against the transfer skill) is named only when y is its y
    assert ("paper Fig. 5" in spec["title"]["text"]) == (y == PAPER_Y)
    assert spec["config"]["title"]["subtitleColor"] == SUBTITLE_COLOUR   # read on both themes
    tips = {t["field"] for layer in spec["layer"]
            for t in layer.get("encoding", {}).get("tooltip", []) if isinstance(t, dict)}
    assert {"record_x", "record_y"} <= tips
    # the ranking names its score's record, the table each column's
    rank = at.session_state[S.SCORES_RANK_METRIC]
    assert score_record(shipped_evidence(), rank).phrase in captions
    helps = _column_help(at, "DIS")
    assert RECORD in helps["DIS"] and score_record(shipped_evidence(), "dis").short in helps["DIS"]

    at.radio(key=S.SCORES_Y).set_value("transfer_score_skill").run()   # the paper's figure
    no_exception(at)
    assert _scatter(at)["title"]["text"] == "Domain invariance vs action score (paper Fig. 5)"


def test_the_home_and_layers_pages_name_the_records(computed, own_cache):
    at = _run()
    helps = _column_help(at, "DIS")
    assert all(RECORD in helps[catalogue.get(k).short] for k in ("dis", "sim2real_score"))
    at = _run(pages.LAYERS.path)
    y = at.session_state[S.LAYERS_Y]
    assert score_record(shipped_evidence(), y).phrase in _captions(at)


def _validation_page_with(monkeypatch, report):
    """The Validation page showing ``report`` as its run's (the closed loop is not run)."""
    from ui.loaders import validation

    monkeypatch.setattr(validation, "validation_report", lambda *a, **k: report)
    monkeypatch.setattr(validation, "recorded_rollout", lambda *a, **k: (None, None))
    return _run(pages.VALIDATION.path)


def test_a_report_added_to_your_evidence_moves_every_pages_pick(computed, own_cache,
                                                                 monkeypatch):
    from tests.evidence.reports import dis_leading_report

    at = _run(pages.SCORES.path)
    shipped = at.session_state[S.SCORES_RANK_METRIC]
    assert shipped != "dis"

    at = _validation_page_with(monkeypatch, dis_leading_report())
    assert "The dashboard ranks by the evidence shipped with s2r." in _captions(at)
    at.button(key=S.VALIDATION_ADD_EVIDENCE).click().run()
    no_exception(at)
    mine = "the evidence shipped with s2r + your 1 report"
    assert [s.value for s in at.success] == [f"Added to your evidence: the dashboard ranks by "
                                             f"{mine}."]
    assert f"From {mine}" in _captions(at)

    at = _run(pages.SCORES.path)                 # a new session: the pick follows
    text = " ".join(m.value for m in at.markdown)
    assert at.session_state[S.SCORES_RANK_METRIC] == "dis"
    assert "the leader on the Domain invariance (DIS)" in text and mine in text
    assert "2 of 2 task-gaps (rho over demo only +1.00" in _captions(at)
    at = _run()
    assert "the leader on the Domain invariance (DIS)" in " ".join(m.value for m in at.markdown)

    at = _validation_page_with(monkeypatch, dis_leading_report())
    at.button(key=S.EVIDENCE_REMOVE).click().run()
    no_exception(at)
    assert "From the evidence shipped with s2r" in _captions(at)
    assert not [b for b in at.button if b.key == S.EVIDENCE_REMOVE]
    assert _run(pages.SCORES.path).session_state[S.SCORES_RANK_METRIC] == shipped
