"""``validate --layers best``: the layer chosen on the frames, its policy deployed beside the
final one's, the paired effect; the report's ``layers`` section."""

from __future__ import annotations

import json

import numpy as np
import pytest

from s2r.cache import Cache
from s2r.closedloop import encoder_rollouts as R
from s2r.closedloop.report import ValidationReport
from s2r.closedloop.validation import validate
from s2r.errors import S2RError
from s2r.metrics.layers import paired_effect
from s2r.metrics.scoring import ScoreParams

TINY = R.RolloutParams(rollouts=2, horizon=4, demos=2, demo_steps=8, height=64, width=64,
                       control_demos=4, control_members=1)
SPEC = "demo:paired=true,episodes=4,steps=5,height=64,width=64"


def test_a_layers_rollouts_have_keys_of_their_own():
    plain = R.rollout_key("resnet18@random", TINY, "real", 1.0, spec=SPEC)
    assert R.rollout_key("resnet18@random", TINY, "real", 1.0, spec=SPEC,
                         layer="layer4") == plain          # the final layer: the same policy
    inner = R.rollout_key("resnet18@random", TINY, "real", 1.0, spec=SPEC, layer="layer2")
    assert inner["layer"] == "layer2" and {k: v for k, v in inner.items()
                                           if k not in ("layer", "taps_version")} == plain


def test_paired_effect_metamorphic():
    rng = np.random.default_rng(0)
    final = [rng.integers(0, 2, 20).astype(float) for _ in range(6)]
    shifted = paired_effect(final, [f + 0.25 for f in final], n_boot=500)
    assert shifted["difference"] == pytest.approx(0.25)
    assert shifted["ci_low"] == pytest.approx(0.25) and shifted["ci_high"] == pytest.approx(0.25)
    assert shifted["resolved"] is True and shifted["p_chosen_better"] == 1.0
    chosen = [rng.integers(0, 2, 20).astype(float) for _ in range(6)]
    ab = paired_effect(final, chosen, n_boot=500, seed=3)
    ba = paired_effect(chosen, final, n_boot=500, seed=3)      # the arms swapped
    assert ba["difference"] == pytest.approx(-ab["difference"])
    assert (ba["ci_low"], ba["ci_high"]) == pytest.approx((-ab["ci_high"], -ab["ci_low"]))
    assert ab["ci_low"] <= ab["difference"] <= ab["ci_high"]
    same = paired_effect(final, final, n_boot=200)
    assert (same["difference"], same["resolved"]) == (0.0, False)
    assert paired_effect([], [])["difference"] is None
    with pytest.raises(ValueError):
        paired_effect([[1.0, 0.0]], [[1.0]])


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    cache = Cache(tmp_path_factory.mktemp("layers-validate") / "cache")
    # on these frames a random ResNet18's stem separates sim from real least (the lowest d')
    return validate(SPEC, ["state", "pixels", "resnet18@random"], [1.0], params=TINY,
                    score_params=ScoreParams(n_boot=20, pca_dim=8), cache=cache, n_boot=100,
                    layers="best", layer_score="domain_separability"), cache


@pytest.mark.slow
def test_validate_layers_best(report):
    rep, cache = report
    section = rep.layers
    assert section["score"] == "domain_separability" and "no rollout" in section["chosen_on"]
    rows = section["rows"]
    assert [(r["encoder"], r["gap"]) for r in rows] == [("pixels", 1.0),
                                                        ("resnet18@random", 1.0)]
    for r in rows:
        final = next(x for x in rep.results if x["encoder"] == r["encoder"]
                     and x["gap"] == r["gap"])
        assert r["success_real_final"] == final["success_real"]
        assert r["progress_real_final"] == final["progress_real"]
        for arm in ("final", "chosen"):
            assert (r[f"success_real_{arm}_ci_low"] <= r[f"success_real_{arm}"]
                    <= r[f"success_real_{arm}_ci_high"])
        if not r["changed"]:                   # the final layer: the final policy's outcome
            assert r["layer_chosen"] == r["layer_final"]
            assert r["success_real_chosen"] == r["success_real_final"]
    pixels = [r for r in rows if r["encoder"] == "pixels"]
    assert all(not r["changed"] and r["layer_count"] == 1 for r in pixels)
    resnet = [r for r in rows if r["encoder"] == "resnet18@random"]
    assert all(r["layer_count"] == 5 and r["layer_final"] == "layer4" for r in resnet)
    # the choice: the lowest domain separability among the layers scored on the frames
    changed = [r for r in resnet if r["changed"]]
    assert [r["layer_chosen"] for r in changed] == ["act1"]
    for r in changed:
        assert r["score_chosen"] < r["score_final"] and r["score_difference"] < 0
        keys = [e.key for e in cache.ls() if e.key.get("kind") == "rollouts"
                and e.key.get("layer") == r["layer_chosen"]]
        assert keys, "the chosen layer's rollouts are cached under keys of their own"
    effects = section["effects"]
    assert len(effects) == 2 * 2 * 2
    allrows = [e for e in effects if e["encoders"] == "all" and e["gap"] == "all"]
    assert {e["outcome"] for e in allrows} == {"success", "progress"}
    assert all(e["encoder_ids"] == ["pixels", "resnet18@random"] for e in allrows)
    for e in effects:
        if e["encoders"] == "changed":
            assert e["encoder_ids"] == ["resnet18@random"]
        if e["difference"] is not None:
            assert e["ci_low"] <= e["difference"] <= e["ci_high"]


@pytest.mark.slow
def test_the_report_section_round_trips_and_is_checked(report, tmp_path):
    rep, _ = report
    data = json.loads(json.dumps(rep.to_dict()))
    again = ValidationReport.from_dict(data, source="r")
    assert again.layers == rep.layers and again.to_dict() == rep.to_dict()
    assert "layers" not in ValidationReport(results=[], correlations=[]).to_dict()
    data["layers"]["rows"][0]["progress_real_chosen"] = 2.0
    with pytest.raises(S2RError, match=r"r layers.rows\[0\]: 'progress_real_chosen' must be a "
                                       r"number in \[0, 1\]"):
        ValidationReport.from_dict(data, source="r")
    data = json.loads(json.dumps(rep.to_dict()))
    data["layers"]["effects"][0]["resolved"] = "yes"
    with pytest.raises(S2RError, match="'resolved' must be true, false or null"):
        ValidationReport.from_dict(data, source="r")
