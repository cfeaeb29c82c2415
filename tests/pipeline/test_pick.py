"""Which encoder should I pick? Hand-made records (paired replicates) and hand-made evidence:
the leader on the evidence's score, resolved or not, and what would change the answer."""

from __future__ import annotations

import numpy as np

from s2r.pipeline.pick import PICK_TITLE, pick_encoder
from tests.evidence.handmade import dis_strongest
from tests.evidence.test_choice import _paper_favoured

KEYS = ("transfer_score_skill", "action_score_heldout_skill", "dis", "sim2real_score")


def _record(eid: str, values: dict, spread: float, n: int = 200) -> dict:
    """A record whose replicates of each key are its value plus its own noise."""
    noise = np.random.default_rng(sum(map(ord, eid))).normal(0.0, spread, n)
    return {"encoder": {"id": eid}, "bootstrap_id": "b", "n_frames": {"sim": 32, "real": 32},
            **values, "replicates": {k: (v + noise * (1 + i)).tolist()
                                     for i, (k, v) in enumerate(values.items())}}


def _records(spread: float) -> list:
    return [_record("a", dict(zip(KEYS, (0.2, 0.5, 0.9, 0.1))), spread),
            _record("b", dict(zip(KEYS, (0.6, 0.3, 0.1, 0.1))), spread),
            _record("state", dict(zip(KEYS, (1.0, 1.0, 1.0, 1.0))), spread)]


def test_the_pick_is_the_leader_on_the_evidences_score_never_the_reference():
    pick = pick_encoder(_records(0.01), _paper_favoured(), reference=["state"])
    assert pick.score == "transfer_score_skill" and pick.encoder == "b"
    assert pick.runner_up == "a" and pick.resolved is True and pick.p_beats_runner_up > 0.975
    assert pick.n_encoders == 2 and pick.n_frames == 64
    # not singled out: the leader on the held-out skill is named, and it is another encoder
    assert pick.other_leader == ("action_score_heldout_skill", "a")
    lines = pick.lines()
    assert lines[0] == PICK_TITLE and "resolved from a" in lines[1]
    assert any("does not single out the Transfer skill" in line and "is a" in line
               for line in lines)


def test_swapping_the_evidence_changes_the_pick():
    pick = pick_encoder(_records(0.01), dis_strongest(), reference=["state"])
    assert pick.score == "dis" and pick.encoder == "a" and pick.choice.singled_out
    assert pick.other_leader is None


def test_a_leader_the_data_do_not_resolve_says_more_frames_would_tell():
    pick = pick_encoder(_records(1.0), dis_strongest(), reference=["state"], n_frames=10)
    assert pick.resolved is False and pick.n_frames == 10
    assert any(c.startswith("not resolved from b: more frames or episodes") for c in pick.changes)
    assert "not resolved from b" in pick.headline()


def test_without_replicates_or_with_one_encoder():
    records = [{k: v for k, v in r.items() if k != "replicates"} for r in _records(0.1)]
    pick = pick_encoder(records, dis_strongest(), reference=["state"])
    assert pick.resolved is None and any("--n-boot" in c for c in pick.changes)
    alone = pick_encoder(_records(0.1)[:1], dis_strongest())
    assert alone.runner_up is None and "the only encoder ranked" in alone.headline()
