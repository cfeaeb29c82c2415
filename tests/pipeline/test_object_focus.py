"""The object focus of registry encoders on a FrameSet with masks (s2r.pipeline.object_focus):
the demo's masks, cached apart from the score record, None with a reason where it cannot be."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from s2r.metrics.params import ScoreParams

TINY = "demo:episodes=4,steps=8,height=64,width=80"
PARAMS = ScoreParams(n_boot=50, pca_dim=4)


@pytest.fixture(scope="module")
def demo():
    from s2r.datasets import load_dataset

    return load_dataset(TINY)


def test_the_subset_is_bounded_and_spread_over_the_real_frames():
    from s2r.pipeline.object_focus import focus_rows

    domain = np.array(["sim"] * 100 + ["real"] * 100)
    rows = focus_rows(domain, 10)
    assert rows.size == 10 and (domain[rows] == "real").all()
    assert rows[0] == 100 and rows[-1] == 199
    assert focus_rows(domain[:105], 10).tolist() == list(range(100, 105))


def test_object_focus_on_the_demo_is_cached_and_its_floor_is_the_masks_area(demo, tmp_path,
                                                                           monkeypatch):
    from s2r.cache import Cache
    from s2r.pipeline import object_focus as of

    cache = Cache(tmp_path / "cache")
    rec = of.object_focus(demo, "resnet18@random", PARAMS, cache=cache, device="cpu")
    rows = of.focus_rows(demo.domain)
    assert rec["object_focus_reason"] is None
    assert rec["object_focus_floor"] == pytest.approx(demo.read_masks(rows).mean())
    assert rec["object_focus_floor_ci_low"] <= rec["object_focus_floor"] \
        <= rec["object_focus_floor_ci_high"]
    assert 0.0 <= rec["object_focus_ci_low"] <= rec["object_focus"] \
        <= rec["object_focus_ci_high"] <= 1.0
    assert rec["object_focus_frames"]["n_frames"] == rows.size == 32

    def boom(*args, **kwargs):
        raise AssertionError("the focus should come from the cache")

    monkeypatch.setattr(of, "_compute", boom)
    assert of.object_focus(demo, "resnet18@random", PARAMS, cache=cache) == rec


def test_no_focus_without_masks_or_without_a_gradcam_layer(demo, monkeypatch):
    from s2r.cache import NullCache
    from s2r.pipeline import object_focus as of

    def boom(*args, **kwargs):
        raise AssertionError("nothing is computed")

    monkeypatch.setattr(of, "_compute", boom)
    bare = dataclasses.replace(demo, masks=None)
    rec = of.object_focus(bare, "resnet18@random", PARAMS, cache=NullCache())
    assert rec["object_focus"] is None and "no task-object masks" in rec["object_focus_reason"]
    for encoder in ("pixels", "state"):
        rec = of.object_focus(demo, encoder, PARAMS, cache=NullCache())
        assert rec["object_focus"] is None and "Grad-CAM" in rec["object_focus_reason"]


def test_the_record_gets_the_focus_and_the_reason_and_keeps_its_key(demo, monkeypatch):
    from s2r.pipeline import scores

    key = scores.score_key(demo, "pixels", PARAMS)
    assert "computed_scores" not in key          # the record's key is what it was
    rec = scores.score_encoder(demo, "pixels", params=PARAMS, cache=False)
    assert "object_focus" not in rec and "object_focus" not in rec.get("not_estimable", {})
    rec = scores.score_encoder(demo, "pixels", params=PARAMS, cache=False, object_focus=True)
    assert rec["object_focus"] is None and rec["object_focus_floor"] is None
    assert "Grad-CAM" in rec["not_estimable"]["object_focus"]
    fake = {"object_focus": 0.5, "object_focus_ci_low": 0.4, "object_focus_ci_high": 0.6,
            "object_focus_floor": 0.1, "object_focus_floor_ci_low": 0.09,
            "object_focus_floor_ci_high": 0.11, "object_focus_frames": {"n_frames": 32},
            "object_focus_reason": None}
    merged = scores.with_object_focus(rec, fake)
    assert merged["object_focus"] == 0.5 and "object_focus_reason" not in merged
    assert merged["not_estimable"] == rec["not_estimable"]


def test_the_scores_pages_table_shows_the_focus_and_its_floor(demo):
    from s2r.figures.scores import scores_frame
    from s2r.figures.tables import column_help, score_table
    from s2r.pipeline import scores

    rec = scores.score_encoder(demo, "pixels", params=PARAMS, cache=False)
    focused = scores.with_object_focus({**rec, "encoder": {**rec["encoder"], "id": "x"}}, {
        "object_focus": 0.5, "object_focus_ci_low": 0.4, "object_focus_ci_high": 0.6,
        "object_focus_floor": 0.125, "object_focus_floor_ci_low": 0.1,
        "object_focus_floor_ci_high": 0.15, "object_focus_reason": None})
    table = score_table(scores_frame([rec, focused]), "table")
    assert {"Object focus", "Object focus floor"} <= set(table.columns)
    row = table[table["id"] == "x"].iloc[0]
    assert row["Object focus"].startswith("0.500") and row["Object focus floor"].startswith("0.125")
    assert table[table["id"] == "pixels"].iloc[0]["Object focus"] == "n/a"
    assert "uniform map" in column_help("table")["Object focus floor"]


def test_score_computes_the_focus_only_when_asked(tmp_path, monkeypatch, capsys):
    import json

    from s2r.cli import main
    from s2r.pipeline import object_focus as of

    calls = []
    real = of._compute
    monkeypatch.setattr(of, "_compute", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    argv = ["score", "demo:episodes=4,steps=6,height=64,width=80", "--encoders",
            "resnet18@random,pixels", "--n-boot", "50", "--pca-dim", "4"]
    assert main([*argv, "--out", str(tmp_path / "plain.json")]) == 0
    assert calls == []
    assert main([*argv, "--object-focus", "--out", str(tmp_path / "focus.json")]) == 0
    assert calls == ["resnet18@random"]                 # pixels has no Grad-CAM layer
    focused = {r["encoder"]["id"]: r for r in json.loads((tmp_path / "focus.json").read_text())}
    assert 0.0 <= focused["resnet18@random"]["object_focus"] <= 1.0
    assert focused["pixels"]["object_focus"] is None
    capsys.readouterr()
    assert main([*argv, "--object-focus", "--layers", "all",
                 "--out", str(tmp_path / "l.json")]) == 2
    assert "--object-focus explains each encoder's final embedding" in capsys.readouterr().err
