"""Rollout runs side by side (s2r.closedloop.overlap): results in order, jobs truly concurrent,
progress only from the calling thread, a failure stops the others; an encoder's outcomes
are the same whether its runs overlap or not (the toy world, a Meta-World pair)."""

from __future__ import annotations

import threading
import time

import pytest

from s2r.closedloop.overlap import run_overlapped
from s2r.errors import MetricError


def test_results_come_in_order_and_one_lane_runs_on_the_calling_thread():
    caller = threading.get_ident()
    seen = []

    def job(k):
        def run(progress):
            seen.append(threading.get_ident())
            time.sleep(0.01 * (3 - k))          # later jobs finish first
            return k * k
        return run

    assert run_overlapped([job(k) for k in range(3)], 2) == [0, 1, 4]
    seen.clear()
    assert run_overlapped([job(k) for k in range(3)], 1) == [0, 1, 4]
    assert seen == [caller] * 3
    assert run_overlapped([], 2) == []


def test_two_lanes_run_two_jobs_at_once():
    both = threading.Barrier(2, timeout=10)       # breaks unless both jobs wait at once

    def job(progress):
        both.wait()
        return True

    assert run_overlapped([job, job], 2) == [True, True]
    with pytest.raises(threading.BrokenBarrierError):
        run_overlapped([job, job], 1)


def test_progress_is_reported_from_the_calling_thread_only():
    caller, calls = threading.get_ident(), []

    def progress(done, total, message):
        calls.append((threading.get_ident(), done, total, message))

    def job(name):
        def run(report):
            for t in range(1, 6):
                report(t, 5, f"{name} step {t}")
                time.sleep(0.06)
            return name
        return run

    assert run_overlapped([job("a"), job("b")], 2, progress) == ["a", "b"]
    assert calls and {c[0] for c in calls} == {caller}
    assert all(total == 10 and 0 < done <= 10 for _, done, total, _ in calls)
    assert any("a step" in m and "b step" in m for *_, m in calls)     # both shown


def test_a_failing_job_raises_and_stops_the_others_at_their_next_report():
    stopped = threading.Event()

    def endless(report):
        try:
            while True:
                report(0, 1, "running")
                time.sleep(0.01)
        finally:
            stopped.set()

    def failing(report):
        time.sleep(0.1)
        raise MetricError("the policy returned NaN")

    start = time.monotonic()
    with pytest.raises(MetricError, match="returned NaN"):
        run_overlapped([endless, failing], 2)
    assert stopped.is_set() and time.monotonic() - start < 30


def test_an_encoders_outcomes_are_the_same_with_its_runs_overlapped(monkeypatch, tmp_path):
    """The toy world's task run with two lanes gives the outcomes of one lane: each run keeps
    its own batches and its own memory."""
    from s2r.cache import Cache
    from s2r.closedloop import encoder_rollouts as R
    from s2r.worlds import WORLDS
    from tests.worlds.toy import TOY, ToyTask

    monkeypatch.setitem(WORLDS._worlds, TOY.name, TOY)
    params = R.RolloutParams(rollouts=4, demos=3, control_demos=5, control_members=1,
                             height=64, width=64)
    out = {}
    for lanes in (1, 2):
        monkeypatch.setattr(ToyTask, "overlap", lanes)
        calls = []
        out[lanes] = R.encoder_rollouts(
            "pixels", [0.0, 0.5, 1.0], spec="toy", params=params,
            cache=Cache(tmp_path / f"c{lanes}"),
            progress=lambda d, t, m: calls.append(threading.get_ident()))
        assert set(calls) == {threading.get_ident()}
    one, two = out[1], out[2]
    assert one["sim"].to_record() == two["sim"].to_record()
    assert {g: o.to_record() for g, o in one["real"].items()} == {
        g: o.to_record() for g, o in two["real"].items()}
    assert one["real"][0.0].successes == one["sim"].successes     # gap 0: the sim look's


@pytest.mark.slow
def test_a_validation_with_runs_side_by_side_reports_what_one_after_another_does(
        monkeypatch, tmp_path):
    """``validate`` with each encoder's looks and gaps side by side where the task allows it
    gives the report of runs one after another (outcomes, scores, correlations), progress only
    on the calling thread and never going back."""
    from s2r.cache import Cache
    from s2r.closedloop.params import RolloutParams
    from s2r.closedloop.validation import validate
    from s2r.worlds import WORLDS
    from tests.worlds.toy import TOY, ToyTask

    monkeypatch.setitem(WORLDS._worlds, TOY.name, TOY)
    params = RolloutParams(rollouts=3, demos=4, control_demos=8, control_members=1)
    reports = {}
    for lanes in (1, 2):
        monkeypatch.setattr(ToyTask, "overlap", lanes)
        calls = []
        reports[lanes] = validate(
            "toy:episodes=6,steps=6", ["state", "pixels", "mobilenetv3@random"], [0.0, 1.0],
            params=params, cache=Cache(tmp_path / f"c{lanes}"), n_boot=20,
            progress=lambda d, t, m: calls.append((threading.get_ident(), d, t)))
        assert {c[0] for c in calls} == {threading.get_ident()}
        done = [d for _, d, _ in calls]
        assert done == sorted(done) and done[-1] == calls[-1][2]
    one, two = (reports[k].to_dict() for k in (1, 2))
    assert one["outcomes"] == two["outcomes"] and one["results"] == two["results"]
    assert one["correlations"] == two["correlations"]
