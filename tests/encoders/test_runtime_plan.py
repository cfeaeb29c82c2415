"""Which runtime each encoder will use, known without building anything
(s2r/encoders/runtime_plan.py), the graph cache's fallback records (read as hostile data) and
``s2r encoders``'s runtime column."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

from s2r.encoders import build_encoder, get_spec
from s2r.encoders import runtime as rt
from s2r.encoders.runtime_plan import NO_MODEL, planned_runtime, planned_runtimes_line
from s2r.settings import current
from tests.helpers.no_export import running_max

pytest.importorskip("onnxruntime")


def _settings(tmp_path, runtime="auto"):
    return dataclasses.replace(current(), runtime=runtime, cache_dir=str(tmp_path))


def _frames(n=2, h=16, w=16):
    return np.random.default_rng(0).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def _embed_onnx(spec, settings):
    enc = build_encoder(spec, device="cpu", settings=settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rt.RuntimeFallbackWarning)
        enc.embed(_frames())
    return enc


def test_the_plan_follows_the_setting_the_device_and_the_precision(tmp_path):
    settings = _settings(tmp_path)
    lite = get_spec("efficientnet-lite0", settings=settings)
    assert planned_runtime(lite, settings, "cpu") == ("onnx", "ONNX Runtime on the CPU")
    assert planned_runtime(lite, _settings(tmp_path, "torch"), "cpu") == (
        "torch", "S2R_RUNTIME=torch")
    assert planned_runtime(lite, settings, "cuda") == ("torch", "CUDA runs torch (fp16)")
    resnet = get_spec("resnet18@random", settings=settings)
    assert planned_runtime(resnet, settings, "cpu", precision="int8") == ("torch", "int8")
    assert planned_runtime(lite, settings, "cpu", precision="int8")[0] == "onnx"  # no int8
    state = get_spec("state", settings=settings)
    assert planned_runtime(state, settings, "cpu")[0] == NO_MODEL
    assert not list(tmp_path.iterdir())          # nothing built, exported or written


def test_a_fallback_is_recorded_and_planned_as_torch_with_why(tmp_path):
    settings = _settings(tmp_path)
    with running_max() as spec:
        assert planned_runtime(spec, settings, "cpu")[0] == "onnx"   # not tried yet
        _embed_onnx(spec, settings)
        (record,) = (tmp_path / "graphs").glob("*.json")
        data = json.loads(record.read_text())
        assert set(data) == {"key", "fallback"} and "cummax" in data["fallback"]
        runtime, why = planned_runtime(spec, settings, "cpu")
        assert runtime == "torch" and why.startswith("fell back before") and "cummax" in why
        # a record of other weights does not say
        record.write_text(json.dumps({"key": {**data["key"], "weights": "sha256:0000"},
                                      "fallback": "x"}))
        assert planned_runtime(spec, settings, "cpu")[0] == "onnx"


def test_a_successful_export_replaces_the_fallback_record(tmp_path):
    settings = _settings(tmp_path)
    spec = get_spec("simcnn-dr1@random", settings=settings)
    enc = _embed_onnx(spec, settings)
    (record,) = (tmp_path / "graphs").glob("*.json")
    good = json.loads(record.read_text())
    record.write_text(json.dumps({"key": good["key"], "fallback": "export failed (X)"}))
    assert planned_runtime(spec, settings, "cpu") == ("torch", "fell back before: export "
                                                      "failed (X)")
    with warnings.catch_warnings():
        warnings.simplefilter("error", rt.RuntimeFallbackWarning)  # not "refused": no graph
        build_encoder(spec, device="cpu", settings=settings).embed(_frames())
    assert "sha256" in json.loads(record.read_text())
    assert planned_runtime(spec, settings, "cpu")[0] == "onnx"
    assert enc.runs_graphs


@pytest.mark.parametrize("content", [
    b"{not json", b"[1, 2]", b'{"key": [], "fallback": "x"}', b'{"key": {}, "fallback": 3}',
    b'{"key": {}, "fallback": "x", "file": "a.onnx"}', b"\xff\xfe", b"[" * 100_000,
    b'{"key": {}, "fallback": "' + b"y" * (rt.MAX_RECORD_BYTES + 10) + b'"}'])
def test_a_hostile_record_is_ignored(tmp_path, content):
    settings = _settings(tmp_path)
    spec = get_spec("simcnn-dr1@random", settings=settings)
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    (graphs / ("0" * 32 + ".json")).write_bytes(content)
    (graphs / "x.json").mkdir()                    # a folder by a record's name
    assert planned_runtime(spec, settings, "cpu")[0] == "onnx"


def test_a_record_with_control_characters_reads_as_one_printable_line(tmp_path):
    settings = _settings(tmp_path)
    with running_max() as spec:
        _embed_onnx(spec, settings)
        (record,) = (tmp_path / "graphs").glob("*.json")
        data = json.loads(record.read_text())
        record.write_text(json.dumps({**data, "fallback": "bad\n\x1b[31mred\r" + "z" * 999}))
        _, why = planned_runtime(spec, settings, "cpu")
    assert why.isprintable() and len(why) < 400 and "\x1b" not in why


def test_the_plans_in_one_line():
    assert planned_runtimes_line({"a": ("onnx", ""), "b": ("torch", "int8"),
                                  "state": (NO_MODEL, "")}) == (
        "Embeddings run in ONNX Runtime on the CPU (torch for: b).")
    assert planned_runtimes_line({"a": ("onnx", "")}) == (
        "Embeddings run in ONNX Runtime on the CPU.")
    assert planned_runtimes_line({"a": ("torch", "S2R_RUNTIME=torch")}) == (
        "Embeddings run in torch (S2R_RUNTIME=torch).")
    assert planned_runtimes_line({"state": (NO_MODEL, "")}) is None


def test_s2r_encoders_shows_the_runtime_in_100_columns(capsys, monkeypatch, tmp_path):
    from s2r.cli import main

    monkeypatch.setenv("S2R_RUNTIME", "auto")
    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("s2r.encoders.runtime_plan._device_type", lambda device: "cpu")
    assert main(["encoders", "--json", "efficientnet-lite0"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["runtime"] == "onnx" and record["runtime_reason"] == "ONNX Runtime on the CPU"
    for args in (["encoders"], ["encoders", "--all"]):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert max(len(line) for line in out.splitlines()) <= 100
        header = out.splitlines()[0].split()
        assert header[-1] == "runtime"
        assert "Embeddings run in ONNX Runtime on the CPU (torch for: pixels)." in out
    lite = next(line for line in out.splitlines() if line.startswith("efficientnet-lite0 "))
    assert lite.split()[-1] == "onnx"
    state = next(line for line in out.splitlines() if line.startswith("state "))
    assert state.split()[-1] == NO_MODEL
    pixels = next(line for line in out.splitlines() if line.startswith("pixels "))
    assert pixels.split()[-1] == "torch"          # raw pixels: no model worth a graph
