"""Predictive validity (s2r.closedloop.encoder_rollouts, s2r.closedloop.validation,
`s2r validate`)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from s2r.cache import Cache
from s2r.cli import main
from s2r.errors import DataError, MetricError
from s2r.closedloop import agent
from s2r.closedloop import encoder_rollouts as R
from s2r.closedloop.keys import demo_key
from s2r.closedloop.memo import Memo
from s2r.closedloop.outcome import Outcome
from s2r.closedloop.validation import validate
from s2r.metrics import catalogue

#: The validated scores every report holds (not those computed only when asked for).
SCORE_NAMES = [k for k in catalogue.keys("validation") if k not in catalogue.asked_keys()]

TINY = R.RolloutParams(rollouts=3, horizon=6, demos=4, demo_steps=16, height=64, width=64,
                       control_demos=6)
SPEC = "demo:paired=true,episodes=3,steps=6,height=64,width=64"


def test_outcomes_are_cached_and_a_hit_fits_no_policy(tmp_path, monkeypatch):
    cache = Cache(tmp_path / "c")
    first = R.encoder_rollouts("state", [0.0, 1.0], spec=SPEC, params=TINY, cache=cache)
    assert set(first["real"]) == {0.0, 1.0}
    for outcome in (first["sim"], *first["real"].values()):
        assert len(outcome.successes) == 3 and len(outcome.steps) == 3
        assert 0 <= outcome.ci_low <= outcome.success_rate <= outcome.ci_high <= 1
        assert (0 <= outcome.progress_ci_low <= outcome.mean_progress
                <= outcome.progress_ci_high <= 1)
        assert outcome.mean_progress == pytest.approx(np.mean(outcome.stages) / 6)
        assert outcome.progress == tuple(k / 6 for k in outcome.stages)
        assert len(outcome.stage_rates) == 6
        assert outcome.stage_rates[-1] == outcome.success_rate
        assert Outcome.from_record(outcome.to_record()) == outcome
    frames = R.recorded_rollout("state", TINY, "real", 1.0, cache, spec=SPEC)
    assert frames.shape[1:] == (64, 64, 3)
    assert len(frames) == len(first["real"][1.0].record["actions"])

    def no_fit(*a, **k):
        raise AssertionError("a cached outcome refitted the policy")

    monkeypatch.setattr(agent, "fit", no_fit)
    again = R.encoder_rollouts("state", [1.0, 0.0], spec=SPEC, params=TINY, cache=cache)
    assert again["real"][1.0] == first["real"][1.0] and again["sim"] == first["sim"]
    with pytest.raises(AssertionError, match="refitted"):      # a new gap is a miss
        R.encoder_rollouts("state", [0.5], spec=SPEC, params=TINY, cache=cache)


def test_the_real_look_at_gap_0_reuses_the_sim_looks_rollouts(tmp_path, monkeypatch):
    from s2r.closedloop import rollout

    calls = []

    real_run = rollout.run_rollouts

    def counting(act, task, **kw):
        calls.append((kw["look"], kw["gap"]))
        return real_run(act, task, **kw)

    monkeypatch.setattr(rollout, "run_rollouts", counting)
    cache = Cache(tmp_path / "c")
    out = R.encoder_rollouts("pixels", [0.0, 1.0], spec=SPEC, params=TINY, cache=cache)
    assert calls == [("sim", 0.0), ("real", 1.0)]
    zero, sim = out["real"][0.0], out["sim"]
    assert (zero.look, zero.gap) == ("real", 0.0)
    assert replace(zero, look="sim") == sim
    np.testing.assert_array_equal(R.recorded_rollout("pixels", TINY, "real", 0.0, cache,
                                                     spec=SPEC),
                                  R.recorded_rollout("pixels", TINY, "sim", 0.0, cache,
                                                     spec=SPEC))
    # readers of the record by its key (the Validation page's rollout viewer) find it
    kept = cache.get_json(R.rollout_key("pixels", TINY, "real", 0.0, spec=SPEC))
    assert kept == zero.to_record() and kept["record"]["states"] == sim.record["states"]


def test_the_demonstrations_are_drawn_once_for_every_encoder_of_a_validation(tmp_path,
                                                                          monkeypatch):
    from s2r.worlds.demo.world import DemoTask

    drawn = []
    real_demos = DemoTask.demonstrations

    def counting(self, n, steps, **kw):
        drawn.append((n, steps, kw["seed"]))
        return real_demos(self, n, steps, **kw)

    monkeypatch.setattr(DemoTask, "demonstrations", counting)
    monkeypatch.setattr(agent, "DEMOS", Memo(size=1))
    cache = Cache(tmp_path / "c")
    outs = [R.encoder_rollouts(e, [1.0], spec=SPEC, params=TINY, cache=cache)
            for e in ("state", "pixels", "resnet18@random")]
    assert drawn == [(4, 16, 0)]                # one drawing served three encoders
    for e in ("pixels", "resnet18@random"):     # each still embedded them with its own encoder
        z = cache.get_array(demo_key(R.task_of(SPEC), e, TINY.for_task(R.task_of(SPEC))))
        assert z is not None and len(z) > 0
    demo = agent.DEMOS.values()[0][0]
    with pytest.raises(ValueError):             # shared between encoders, so never written
        demo.frames[0, 0, 0, 0] = 1
    R.encoder_rollouts("pixels", [1.0], spec=SPEC, params=replace(TINY, seed=1), cache=cache)
    assert drawn == [(4, 16, 0), (4, 16, 1)]    # other demonstrations are drawn anew
    monkeypatch.setattr(agent, "DEMOS", Memo(size=1))   # reused ones give what fresh ones give
    fresh = R.encoder_rollouts("resnet18@random", [1.0], spec=SPEC, params=TINY,
                               cache=Cache(tmp_path / "fresh"))
    assert fresh == outs[2] and len(drawn) == 3


def test_the_key_holds_every_parameter_the_code_and_the_task():
    base = R.rollout_key("pixels", TINY, "real", 0.5, spec=SPEC)
    assert R.rollout_key("pixels", TINY, "real", 0.5, spec="demo") == base   # the same task
    for changed in (R.rollout_key("pixels", TINY, "real", 1.0, spec=SPEC),
                    R.rollout_key("pixels", R.RolloutParams(**{**TINY.to_dict(), "demos": 5}),
                                  "real", 0.5, spec=SPEC),
                    R.rollout_key("efficientnet-lite0", TINY, "real", 0.5, spec=SPEC)):
        assert changed != base
    assert base["code"] and R.rollout_key("pixels", TINY, "sim", 0.3, spec=SPEC)["gap"] is None
    assert base["task"] == R.task_of(SPEC).identity()


def test_the_defaults_of_horizon_and_demonstrations_are_the_tasks():
    task = R.task_of(SPEC)
    p = R.RolloutParams().for_task(task)
    assert (p.horizon, p.demo_steps) == (task.horizon, task.demo_steps) == (30, 24)
    assert R.RolloutParams(horizon=7).for_task(task).horizon == 7
    # the key of unresolved parameters is the key of the task's
    assert R.rollout_key("state", R.RolloutParams(), "sim", 0, spec=SPEC) == R.rollout_key(
        "state", R.RolloutParams(horizon=30, demo_steps=24), "sim", 0, spec=SPEC)


@pytest.mark.slow
def test_validate_reports_every_row_score_and_correlation(tmp_path):
    ids = ["state", "pixels", "efficientnet-lite0", "resnet18@random"]
    report = validate(SPEC, ids, [0.0, 1.0], params=TINY, cache=Cache(tmp_path / "c"),
                      n_boot=50)
    assert json.loads(json.dumps(report.to_dict()))["results"][0]["encoder"] == "state"
    rows = report.results
    assert [(r["encoder"], r["gap"]) for r in rows] == [(e, g) for e in ids for g in (0.0, 1.0)]
    for r in rows:
        for key in ("success_real", "success_real_ci_low", "success_real_ci_high",
                    "success_sim", "dis", "sim2real_score", "transfer_score_skill",
                    "paired_retrieval_mrr", "action_score_heldout_skill"):
            assert key in r
        assert r["success_real_ci_low"] <= r["success_real"] <= r["success_real_ci_high"]
        for name in ("progress_real", "progress_sim"):
            assert r[name + "_ci_low"] <= r[name] <= r[name + "_ci_high"]
        assert len(r["stages_real"]) == len(report.stages) == 6
    corr = report.correlations
    assert {(c["score"], c["gap"], c["outcome"]) for c in corr} == {
        (s, g, o) for s in SCORE_NAMES for g in (0.0, 1.0, "all")
        for o in ("success", "progress")}
    for c in corr:
        assert c["spearman"] is None or -1 <= c["spearman"] <= 1
        assert c["encoders"] == ["pixels", "efficientnet-lite0", "resnet18@random"]
    assert report.params["rollouts"]["height"] == 64


def test_validate_refuses_what_it_cannot_do(tmp_path):
    with pytest.raises(DataError, match="validate needs a simulated world's dataset spec "
                                        r"\('demo:\.\.\.', 'metaworld:\.\.\.'\): only a world's "
                                        "frames come from a simulator"):
        validate(str(tmp_path), ["state", "pixels", "efficientnet-lite0"], [0.5])
    with pytest.raises(DataError, match="needs a simulated world's dataset spec"):
        R.encoder_rollouts("state", [0.5], spec=str(tmp_path), params=TINY)
    with pytest.raises(MetricError, match="at least 3 encoders"):
        validate(SPEC, ["state", "pixels"], [0.5])


@pytest.mark.slow
def test_the_command_writes_the_report(tmp_path, capsys):
    out = tmp_path / "report.json"
    code = main(["validate", SPEC, "--encoders", "state,pixels,efficientnet-lite0", "--gaps",
                 "0,1", "--rollouts", "3", "--horizon", "6", "--demos", "4", "--n-boot", "20",
                 "--control-demos", "6",
                 "--out", str(out), "--cache-dir", str(tmp_path / "c")])
    assert code == 0
    report = json.loads(out.read_text())
    assert len(report["results"]) == 6
    text = capsys.readouterr().out
    assert "rank correlation with real success" in text and "state" in text
    assert "rank correlation with real progress" in text
    # per gap first, the pooled number last and labelled (issue 35 item 6)
    at_gap, pooled = text.index("image encoders at gap 1 "), text.index("pooled over all gaps")
    assert text.index("image encoders at gap 0 ") < at_gap < pooled
    assert np.isfinite(report["results"][0]["success_real"])


def test_correlations_rank_image_encoders_only_for_both_outcomes():
    from s2r.closedloop.validation import correlations

    rows, outcomes = [], []
    quality = {"state": 1.0, "a": 0.9, "b": 0.5, "c": 0.1}
    for e, q in quality.items():
        rows.append({"encoder": e, "gap": 1.0, "image_encoder": e != "state",
                     **{name: (q if e != "state" else -5.0) for name in SCORE_NAMES}})
        successes = [i < round(10 * q) for i in range(10)]
        outcomes.append({"successes": successes, "progress": [q] * 10})
    out = correlations(rows, outcomes, n_boot=50)
    assert {c["outcome"] for c in out} == {"success", "progress"}
    for c in out:
        assert c["encoders"] == ["a", "b", "c"]          # the reference is not ranked
        assert c["spearman"] == pytest.approx(1.0)        # with it (score -5) it would not be
