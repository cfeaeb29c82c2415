"""The closed loop's cache keys, its code id, its outcome records and its memo."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.closedloop import keys
from s2r.closedloop.memo import Memo
from s2r.closedloop.outcome import Outcome, outcome_columns

#: The digest of the closed loop's policy and rollout code (:func:`s2r.closedloop.keys.
#: code_digest`) that :data:`s2r.closedloop.keys.CODE_ID` was last checked against. When this
#: test fails, that code changed: if what it computes changed (policies, rollouts, outcomes),
#: give CODE_ID a new value (cached rollouts are then misses); either way, record the new
#: digest here.
CLOSED_LOOP_CODE_DIGEST = "594f1c5ef817ade7"


def test_closed_loop_code_is_unchanged_or_its_code_id_was_considered():
    assert keys.code_digest() == CLOSED_LOOP_CODE_DIGEST, (
        "the closed loop's policy or rollout code changed: bump the pinned id if behaviour "
        "changed (s2r.closedloop.keys.CODE_ID), else record the new digest: "
        f"CLOSED_LOOP_CODE_DIGEST = {keys.code_digest()!r}")


def test_every_key_holds_the_pinned_code_id():
    assert keys.CODE_ID == "594f1c5ef817ade7"     # the value keys were written with
    assert keys.ROLLOUT_VERSION == 3


#: A rollout record as the cache holds it (the layout records have always had).
RECORD = {"look": "real", "gap": 0.5, "success_rate": 0.5, "ci_low": 0.1, "ci_high": 0.9,
          "successes": [True, False], "progress": 0.75, "progress_ci_low": 0.5,
          "progress_ci_high": 1.0, "stages": [4, 2], "stage_rates": [1.0, 1.0, 0.5, 0.5],
          "steps": [7, 30], "record": {"index": 0, "actions": [[0.1]], "states": [[1.0, 2.0]]}}


def test_an_outcome_reads_and_writes_the_cached_record_unchanged():
    outcome = Outcome.from_record(RECORD)
    assert outcome.to_record() == RECORD
    assert list(outcome.to_record()) == list(RECORD)            # the same layout
    assert outcome.progress == (1.0, 0.5) and outcome.mean_progress == 0.75
    assert outcome.rollouts == 2 and outcome.mean_steps == 18.5
    assert outcome.per_rollout() == {"successes": [True, False], "progress": [1.0, 0.5]}
    assert outcome_columns(outcome, "real") == {
        "success_real": 0.5, "success_real_ci_low": 0.1, "success_real_ci_high": 0.9,
        "progress_real": 0.75, "progress_real_ci_low": 0.5, "progress_real_ci_high": 1.0}
    assert list(outcome_columns(outcome, "sim", ("progress",))) == [
        "progress_sim", "progress_sim_ci_low", "progress_sim_ci_high"]
    with pytest.raises(AttributeError):
        outcome.look = "sim"


def test_a_memo_computes_once_and_keeps_at_most_its_size():
    calls = []

    def make(v):
        return lambda: calls.append(v) or v

    last = Memo(size=1)
    assert last.get("a", make(1)) == 1 and last.get("a", make(2)) == 1
    assert last.get("b", make(3)) == 3 and last.values() == [3]
    assert last.get("a", make(4)) == 4 and calls == [1, 3, 4]
    every = Memo()
    for k in range(5):
        every.get(k, make(k))
    assert every.values() == list(range(5))
    every.clear()
    assert every.values() == []


def test_the_runtime_is_in_an_image_encoders_closed_loop_keys_only_when_not_torch():
    import dataclasses

    from s2r.closedloop.params import RolloutParams
    from s2r.encoders.runtime import runtime_tag
    from s2r.settings import current
    from s2r.closedloop.agent import Embedder
    from s2r.datasets.world import task_of

    task = task_of("demo:height=64,width=80")
    params = RolloutParams(rollouts=2, horizon=4, demos=2).for_task(task)
    auto = dataclasses.replace(current(), runtime="auto")
    torch_only = dataclasses.replace(current(), runtime="torch")
    for make in (lambda s, d: keys.rollout_key(task, "resnet18@random", params, "real", 0.5,
                                               s, device=d),
                 lambda s, d: keys.demo_key(task, "resnet18@random", params, s, device=d)):
        onnx_key, torch_key = make(auto, "cpu"), make(torch_only, "cpu")
        assert onnx_key == {**torch_key, "runtime": runtime_tag("onnx")}
        assert "runtime" not in make(auto, "cuda")            # CUDA runs torch (fp16)
    # the state reference runs no model: one key whatever the runtime
    assert (keys.rollout_key(task, "state", params, "sim", 0.0, auto, device="cpu")
            == keys.rollout_key(task, "state", params, "sim", 0.0, torch_only, device="cpu"))
    # the embedder builds with the runtime its keys name
    embedder = Embedder("resnet18@random", "cpu", auto)
    assert keys.embedding_runtime(embedder.spec, auto, "cpu") == "onnx"
    assert embedder(np.zeros((1, 64, 80, 3), np.uint8), None).shape == (1, embedder.spec.dim)
    assert embedder.encoder.runs_graphs
