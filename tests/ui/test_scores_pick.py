"""The Scores page opens on the evidence's verdict: "Which encoder should I pick?" at its top,
ranked on the score with the strongest record; another evidence file (S2R_EVIDENCE) changes
the page's default score and the pick."""

from __future__ import annotations

from tests.ui.apptest import no_exception, open_app, use_env
from ui import pages
from ui import state as S


def _open(monkeypatch, cache_dir):
    use_env(monkeypatch, cache_dir)
    at = open_app(pages.SCORES.path)
    at.run()
    no_exception(at)
    return at


def _pick_text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def test_the_page_shows_the_pick_and_swapping_the_evidence_changes_it(computed, monkeypatch,
                                                                       swap_evidence):
    from s2r.evidence import default_score, shipped_evidence

    at = _open(monkeypatch, computed[0])
    text = _pick_text(at)
    assert "Which encoder should I pick?" in text and "the leader on the" in text
    assert "evidence shipped with s2r" in text
    shipped = default_score("ranking", shipped_evidence(), world="demo")
    assert at.session_state[S.SCORES_RANK_METRIC] == shipped
    assert at.session_state[S.SCORES_Y] == default_score("y", shipped_evidence(), world="demo")

    swap_evidence()
    at = _open(monkeypatch, computed[0])
    text = _pick_text(at)
    assert at.session_state[S.SCORES_RANK_METRIC] == "dis" != shipped
    assert at.session_state[S.SCORES_Y] == "action_score_heldout_skill"
    assert "the leader on the Domain invariance (DIS)" in text and "S2R_EVIDENCE" in text
    # the paper's Fig. 5 (DIS vs transfer skill) stays one click away
    at.radio(key=S.SCORES_Y).set_value("transfer_score_skill").run()
    no_exception(at)


def test_the_home_page_ends_its_compute_step_with_the_pick_and_ranks_by_the_evidence(
        computed, monkeypatch, swap_evidence):
    use_env(monkeypatch, computed[0])
    at = open_app()
    at.run()
    no_exception(at)
    text = _pick_text(at)
    assert "Which encoder should I pick?" in text and "evidence shipped with s2r" in text
    from s2r.evidence import default_score, shipped_evidence
    from s2r.metrics import catalogue

    column = catalogue.shorts()[default_score("ranking", shipped_evidence(), world="demo")]
    table = next(d.value for d in at.dataframe if "DIS" in d.value)
    first = [float(str(v).split()[0]) for v in table[column]]
    assert first == sorted(first, reverse=True)        # the shipped evidence's score first

    swap_evidence()
    at = open_app()
    at.run()
    no_exception(at)
    text = _pick_text(at)
    assert "the leader on the Domain invariance (DIS)" in text and "S2R_EVIDENCE" in text
    table = next(d.value for d in at.dataframe if "DIS" in d.value)
    dis = [float(str(v).split()[0]) for v in table["DIS"]]
    assert dis == sorted(dis, reverse=True)            # ranked by the evidence's score


def test_the_validation_page_draws_the_evidence_in_effect(monkeypatch, tmp_path, swap_evidence):
    use_env(monkeypatch, tmp_path / "c")
    monkeypatch.setenv("S2R_DEMO_SPEC", "demo:episodes=3,steps=6,height=64,width=64")
    at = open_app(pages.VALIDATION.path)
    at.run()
    no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    assert "the evidence shipped with s2r" in captions
    titles = list(at.dataframe[0].value.index) if at.dataframe else []
    assert "Domain invariance (DIS)" in titles
    swap_evidence()
    at = open_app(pages.VALIDATION.path)
    at.run()
    no_exception(at)
    assert "S2R_EVIDENCE" in " ".join(c.value for c in at.caption)
    at.radio(key=S.VALIDATION_EVIDENCE_OUTCOME).set_value("progress").run()
    no_exception(at)


def test_the_study_evidence_is_two_tables_on_the_validation_page(monkeypatch, tmp_path):
    """At the study's scale (18 task-gaps, four kinds of shift alone) the section shows the
    shift-``all`` task-gaps with the overall combined estimate, then one column per kind."""
    from tests.evidence.handmade import write_evidence
    from tests.evidence.study_shape import study_evidence
    from tests.ui.apptest import validation_tables

    use_env(monkeypatch, tmp_path / "c")
    monkeypatch.setenv("S2R_DEMO_SPEC", "demo:episodes=3,steps=6,height=64,width=64")
    monkeypatch.setenv("S2R_EVIDENCE", str(write_evidence(tmp_path / "study.json",
                                                          study_evidence())))
    at = open_app(pages.VALIDATION.path)
    at.run()
    no_exception(at)
    every, kinds, differences = (d.value for d in at.dataframe[:3])
    assert "button-press-topdown-v3 gap 1" in every.columns
    assert not any("lighting" in c for c in every.columns)
    assert str(every.columns[-1]).startswith("combined (all 18 task-gaps")
    assert list(kinds.columns) == ["lighting", "texture", "camera", "distractors"]
    assert all(str(v).startswith("combined ") for v in kinds["camera"])
    assert "drawer-open-v3" in kinds.loc["Domain invariance (DIS)", "lighting"]
    from s2r.evidence import strongest_score
    from s2r.metrics import catalogue

    leader = catalogue.titles()[strongest_score(study_evidence()).score]
    assert differences.index.name == f"{leader} minus" and leader not in differences.index
    assert list(differences.columns) == ["real success"]
    assert all(any(v in str(c) for v in ("ranks better", "not told apart", "ranks worse"))
               for c in differences["real success"])
    assert not validation_tables(at)                 # all three are the evidence section's
