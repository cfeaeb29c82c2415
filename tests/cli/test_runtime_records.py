"""The CLI and ONNX Runtime: a model that does not export is one ``warning:`` line, and it
shows in ``s2r encoders`` after; score outputs and validation reports name the runtime that
computed their embeddings (and read without it, as written before)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from s2r.cli import main
from tests.helpers.no_export import RUNNING_MAX, running_max

pytest.importorskip("onnxruntime")

TINY_DEMO = "demo:episodes=2,steps=4,height=64,width=80"
GOLDEN_REPORT = Path(__file__).parents[1] / "data" / "golden" / "validation_small.json"


def _lines(text: str) -> list:
    return [line for line in re.split(r"[\r\n]+", text) if line.strip()]


def test_a_model_that_does_not_export_is_one_warning_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "cache"))
    with running_max(registered=True):
        assert main(["embed", TINY_DEMO, "--encoder", RUNNING_MAX, "--runtime", "onnx",
                     "--device", "cpu", "--out", str(tmp_path / "z.npz")]) == 0
        err = capsys.readouterr().err
        warned = [line for line in _lines(err) if line.startswith("warning:")]
        assert len(warned) == 1, err
        assert warned[0].startswith(f"warning: {RUNNING_MAX}: runs in torch")
        assert "cummax" in warned[0]
        assert "RuntimeFallbackWarning" not in err and "Traceback" not in err
        assert "warnings.warn" not in err and ".py:" not in err
        # and `s2r encoders` says so after, from the graph cache's record
        monkeypatch.setenv("S2R_RUNTIME", "onnx")
        monkeypatch.setattr("s2r.encoders.runtime_plan._device_type", lambda device: "cpu")
        assert main(["encoders", "--json", RUNNING_MAX]) == 0
        (record,) = json.loads(capsys.readouterr().out)
    assert record["runtime"] == "torch" and "cummax" in record["runtime_reason"]


def test_score_outputs_name_the_runtime(tmp_path):
    args = [TINY_DEMO, "--encoders", "mobilenetv3@random,pixels,state", "--n-boot", "0",
            "--pca-dim", "4",
            "--device", "cpu", "--cache-dir", str(tmp_path / "c")]
    onnx, plain = tmp_path / "onnx.json", tmp_path / "torch.csv"
    assert main(["score", *args, "--runtime", "auto", "--out", str(onnx)]) == 0
    assert main(["score", *args, "--runtime", "torch", "--out", str(plain)]) == 0
    by_id = {r["encoder"]["id"]: r for r in json.loads(onnx.read_text())}
    assert by_id["mobilenetv3@random"]["runtime"] == "onnxruntime/v1"
    assert "runtime" not in by_id["pixels"]       # a resize and a flatten: torch's, as before
    assert "runtime" not in by_id["state"]        # no model ran
    from s2r.leaderboard import merge_records, read_records

    torch_records = read_records(plain)
    assert all(not isinstance(r.get("runtime"), str) for r in torch_records)  # as before
    # one runtime's result never stands for the other's when leaderboards are merged
    merged = merge_records([read_records(onnx), torch_records])
    assert sorted(r["encoder"]["id"] for r in merged) == [
        "mobilenetv3@random", "mobilenetv3@random", "pixels", "state"]


def test_a_report_row_names_the_runtime_and_an_old_report_still_reads():
    from s2r.closedloop.report import ValidationReport
    from s2r.errors import S2RError

    old = json.loads(GOLDEN_REPORT.read_text())
    assert all("runtime" not in r for r in old["results"])
    assert ValidationReport.from_dict(old).results == old["results"]
    old["results"][0]["runtime"] = "onnxruntime/v1"
    assert ValidationReport.from_dict(old).results[0]["runtime"] == "onnxruntime/v1"
    old["results"][0]["runtime"] = 7
    with pytest.raises(S2RError, match="runtime"):
        ValidationReport.from_dict(old)


def test_a_validation_row_takes_the_runtime_of_its_score_record():
    from s2r.closedloop.outcome import Outcome
    from s2r.closedloop.report import ValidationReport
    from s2r.closedloop.validation import _row

    outcome = Outcome(look="real", gap=0.5, success_rate=0.5, ci_low=0.1, ci_high=0.9,
                      successes=(True, False), mean_progress=0.5, progress_ci_low=0.1,
                      progress_ci_high=0.9, stages=(1, 0), stage_rates=(0.5,), steps=(3, 4))
    onnx = _row("pixels", 0.5, outcome, outcome, {"dis": 0.3, "runtime": "onnxruntime/v1"})
    plain = _row("pixels", 0.5, outcome, outcome, {"dis": 0.3})
    assert onnx["runtime"] == "onnxruntime/v1" and onnx["dis"] == 0.3
    assert "runtime" not in plain                   # torch: the row as it always was
    report = ValidationReport(results=[onnx, plain], correlations=[])
    assert ValidationReport.from_dict(report.to_dict()).results[0]["runtime"] == (
        "onnxruntime/v1")
