"""A score's record, the strongest score and the default scores, on hand-made evidence whose
answer is known; the shipped evidence and the evidence in effect (S2R_EVIDENCE)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from s2r.errors import S2RError
from s2r.evidence import (TIE_LIMIT, default_score, evidence_in_effect, score_record,
                          shipped_evidence, strongest_score)
from s2r.evidence.choice import candidate_scores
from s2r.metrics import catalogue
from s2r.settings import Settings
from tests.evidence.handmade import (DOWN, TIED, UP, dis_strongest, make_evidence, rho_of,
                                     write_evidence)

HALF = [2, 1, 3, 5, 4]          # two swaps: rho 0.8


def _paper_favoured():
    """The Sim2Real score has the highest lower bound but ties four of five encoders; the
    transfer skill leads the rest, not singled out from the held-out skill."""
    return make_evidence(
        [("metaworld", "hammer-v3", 0.5, {"sim2real_score": TIED, "transfer_score_skill": UP,
                                         "action_score_heldout_skill": HALF, "dis": DOWN}),
         ("metaworld", "hammer-v3", 1.0, {"sim2real_score": TIED, "transfer_score_skill": UP,
                                         "action_score_heldout_skill": UP, "dis": DOWN}),
         ("demo", "demo", 0.5, {"sim2real_score": UP, "transfer_score_skill": HALF,
                               "action_score_heldout_skill": UP, "dis": UP})],
        {"sim2real_score": (0.9, 0.8, 1.0), "transfer_score_skill": (0.6, 0.3, 0.9),
         "action_score_heldout_skill": (0.7, 0.2, 0.95), "dis": (-0.3, -0.8, 0.4)})


def test_a_record_and_its_phrase_are_the_combined_numbers():
    ev = _paper_favoured()
    r = score_record(ev, "transfer_score_skill")
    assert (r.scope, r.mean_rho, r.ci_low, r.ci_high) == ("combined", 0.6, 0.3, 0.9)
    assert r.n_rows == 3 and r.n_above_chance == 3 and r.tied_share == 0.0   # 0.8 - 0.3 > 0
    assert r.phrase == ("ranked encoders as deployment did in 3 of 3 task-gaps (combined rho "
                        "+0.60 [+0.30, +0.90])")
    assert score_record(ev, "sim2real_score").tied_share == pytest.approx(0.8)  # 4 of 5, twice
    never = score_record(ev, "paired_retrieval_mrr")
    assert not never.validated and never.phrase == ("never validated against closed-loop "
                                                    "success")


def test_a_world_record_is_over_that_worlds_rows_only():
    ev = _paper_favoured()
    mw = score_record(ev, "action_score_heldout_skill", world="metaworld")
    assert mw.scope == "metaworld" and mw.n_rows == 2
    assert mw.mean_rho == pytest.approx((rho_of(HALF) + 1.0) / 2)      # 0.9, not the 0.7 given
    assert mw.ci_low <= mw.mean_rho <= mw.ci_high and "rho over metaworld only" in mw.phrase
    demo = score_record(ev, "dis", world="demo")
    assert demo.mean_rho == pytest.approx(1.0) and demo.n_rows == 1
    # a world the evidence never measured: the combined record
    assert score_record(ev, "dis", world="real").scope == "combined"


def test_the_strongest_score_leaves_out_a_score_that_ties_most_encoders():
    choice = strongest_score(_paper_favoured())
    assert choice.tie_heavy == ("sim2real_score",)       # its lower bound 0.8 was the highest
    assert (choice.score, choice.runner_up) == ("transfer_score_skill",
                                                "action_score_heldout_skill")
    # 0.3 is above 0 but not above the runner-up's mean 0.7: not singled out
    assert not choice.singled_out
    assert any("does not single it out" in line for line in choice.lines())


def test_without_the_ties_the_paper_score_wins_and_is_singled_out():
    ev = _paper_favoured()
    for row in ev["rows"]:
        row["n_tied"] = 0
    choice = strongest_score(ev)
    assert choice.score == "sim2real_score" and choice.singled_out    # 0.8 > 0.7 and > 0
    assert choice.tie_heavy == () and TIE_LIMIT == 0.5


def test_singled_out_needs_a_lower_bound_above_zero_and_the_runner_ups_mean():
    ev = dis_strongest()
    choice = strongest_score(ev)
    assert (choice.score, choice.runner_up, choice.singled_out) == (
        "dis", "action_score_heldout_skill", True)
    ev["combined"][0]["ci_low"] = 0.05       # still the highest lower bound, below 0.1
    assert strongest_score(ev).score == "dis" and not strongest_score(ev).singled_out


def test_in_a_world_the_choice_follows_that_worlds_rows():
    """On Meta-World alone the transfer skill ranks as deployment at both gaps (every
    bootstrap draw gives rho 1), the held-out skill at 0.8 and 1: singled out there, not in
    the combined evidence."""
    choice = strongest_score(_paper_favoured(), world="metaworld")
    assert choice.record.scope == "metaworld" and choice.score == "transfer_score_skill"
    assert choice.record.ci_low == pytest.approx(1.0) and choice.singled_out
    assert choice.runner_up_record.mean_rho == pytest.approx(0.9)
    assert choice.tie_heavy == ("sim2real_score",)


def test_default_scores_come_from_the_evidence():
    ev = dis_strongest()
    assert default_score("ranking", ev) == "dis"
    assert default_score("validation", ev) == "dis"
    assert default_score("y", ev) == "action_score_heldout_skill"     # DIS is no action score
    assert default_score("x", ev) == "dis"
    assert default_score("ranking", _paper_favoured()) == "transfer_score_skill"
    assert set(candidate_scores("y")) <= set(catalogue.keys("y"))
    with pytest.raises(ValueError, match="unknown view"):
        default_score("nowhere", ev)


def test_no_usable_record_gives_the_first_candidate_not_singled_out():
    ev = make_evidence([("demo", "demo", 0.5, {"dis": UP})], {"dis": (0.5, -0.2, 0.9)})
    ev["combined"][0].update(mean_rho=None, ci_low=None, ci_high=None, verdict="undefined")
    choice = strongest_score(ev)
    assert choice.score == candidate_scores()[0] and not choice.singled_out
    assert choice.record.phrase.startswith("never validated")


def test_the_shipped_evidence_reads_and_does_not_rank_by_a_tie_heavy_score():
    ev = shipped_evidence()
    choice = strongest_score(ev)
    assert choice.record.validated and choice.record.tied_share <= TIE_LIMIT
    assert choice.score in candidate_scores()
    shares = {k: score_record(ev, k).tied_share for k in candidate_scores()}
    assert all(choice.record.ci_low >= score_record(ev, k).ci_low for k, s in shares.items()
               if s is not None and s <= TIE_LIMIT and score_record(ev, k).validated)


def test_the_evidence_in_effect_is_the_users_file_else_the_shipped_one(tmp_path):
    base = Settings.from_environ({})
    assert evidence_in_effect(base) is shipped_evidence()
    path = write_evidence(tmp_path / "mine.json", dis_strongest())
    mine = evidence_in_effect(dataclasses.replace(base, evidence=path))
    assert default_score("ranking", mine) == "dis"
    assert Settings.from_environ({"S2R_EVIDENCE": str(path)}).evidence == path
    (tmp_path / "bad.json").write_text('{"rows": []}')
    with pytest.raises(S2RError, match="bad.json"):
        evidence_in_effect(dataclasses.replace(base, evidence=tmp_path / "bad.json"))
    with pytest.raises(TypeError, match="settings"):
        evidence_in_effect(None)


def test_a_world_interval_is_reproducible_and_narrows_with_more_task_gaps():
    one = make_evidence([("demo", "demo", 0.5, {"dis": HALF}),
                         ("metaworld", "hammer-v3", 0.5, {"dis": UP})], {"dis": (0.9, 0.5, 1.0)})
    many = make_evidence([("demo", "demo", g, {"dis": HALF}) for g in (0.25, 0.5, 0.75, 1.0)]
                         + [("metaworld", "hammer-v3", 0.5, {"dis": UP})],
                         {"dis": (0.9, 0.5, 1.0)})
    a, b = score_record(one, "dis", world="demo"), score_record(one, "dis", world="demo")
    assert a == b
    c = score_record(many, "dis", world="demo")
    assert np.isclose(a.mean_rho, c.mean_rho)
    assert (c.ci_high - c.ci_low) <= (a.ci_high - a.ci_low) + 1e-9
