"""Score records per (encoder, layer): the final layer's is today's record; ``score --layers``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from s2r.cache import Cache
from s2r.cli import main
from s2r.errors import EncoderError
from s2r.metrics import catalogue
from s2r.metrics.scoring import ScoreParams
from s2r.pipeline import score_encoder
from s2r.pipeline.layers import per_encoder_layers, score_encoders_layers, score_layers

DEMO = "demo:episodes=4,steps=5,height=64,width=80,gap=0.5"
PARAMS = ScoreParams(n_boot=20, pca_dim=8)


@pytest.fixture(scope="module")
def demo():
    from s2r.datasets import load_dataset

    return load_dataset(DEMO)


@pytest.fixture(scope="module")
def scored(demo, tmp_path_factory):
    cache = Cache(tmp_path_factory.mktemp("layers") / "cache")
    records = score_encoders_layers(demo, ["resnet18@random", "state"], "all", params=PARAMS,
                                    cache=cache)
    return records, cache


def test_one_record_per_layer_with_its_fields(scored):
    records, _ = scored
    resnet = [r for r in records if r["encoder"]["id"] == "resnet18@random"]
    assert [r["layer"] for r in resnet] == ["act1", "layer1", "layer2", "layer3", "layer4"]
    assert [r["layer_index"] for r in resnet] == list(range(5))
    assert [r["embedding_dim"] for r in resnet] == [64, 64, 128, 256, 512]
    assert [r["layer_is_final"] for r in resnet] == [False] * 4 + [True]
    depths = [r["layer_depth"] for r in resnet]
    assert depths == sorted(depths) and 0 <= depths[0] and depths[-1] == 1.0
    for r in resnet:
        assert r["encoder"]["dim"] == 512 and r["layer_count"] == 5
        for k in catalogue.interval_keys():
            if r.get(k) is not None and r.get(f"{k}_ci_low") is not None:
                assert r[f"{k}_ci_low"] <= r[k] <= r[f"{k}_ci_high"], (r["layer"], k)
    assert sum(r["layer_best"] for r in resnet) == 1
    state = [r for r in records if r["encoder"]["id"] == "state"]
    assert [(r["layer"], r["layer_best"]) for r in state] == [("state", True)]
    # different layers, different embeddings: their scores differ
    assert len({round(r["dis"], 9) for r in resnet}) == 5


def test_the_final_layers_record_is_the_plain_record(scored, demo):
    records, cache = scored
    final = next(r for r in records if r["encoder"]["id"] == "resnet18@random"
                 and r["layer_is_final"])
    plain = score_encoder(demo, "resnet18@random", params=PARAMS, cache=False)  # recomputed
    for k, v in plain.items():
        if isinstance(v, float):
            # ONNX Runtime (the default on the CPU): the layers' graph (taps as extra outputs)
            # and the plain graph round the last bits apart (~1e-7 of a value)
            assert final[k] == pytest.approx(v, rel=1e-5, abs=1e-6), k
        elif k == "replicates":                       # bootstrap replicates, 6 digits kept
            assert final[k].keys() == v.keys()
            for name, values in v.items():
                assert final[k][name] == pytest.approx(values, rel=1e-4, abs=1e-5), name
        else:
            assert final[k] == v, k


def test_a_later_request_for_one_layer_is_a_cache_read(scored, demo, monkeypatch):
    records, cache = scored
    import s2r.embed.layers as layers_module
    import s2r.pipeline.scores as scores_module

    monkeypatch.setattr(layers_module, "build", lambda *a, **k: pytest.fail("built"))
    monkeypatch.setattr(scores_module, "score_embeddings", lambda *a, **k: pytest.fail("scored"))
    again = score_layers(demo, "resnet18@random", ["layer2"], params=PARAMS, cache=cache)
    want = next(r for r in records if r.get("layer") == "layer2")
    assert again[0]["dis"] == want["dis"] and again[0]["layer"] == "layer2"


def test_layer_names_per_encoder_and_errors():
    got = per_encoder_layers(["resnet18@random", "pixels"], ["layer2", "last"], cache=False)
    assert got == {"resnet18@random": ["layer2", "last"], "pixels": ["last"]}
    with pytest.raises(EncoderError, match="no encoder has layer 'blocks.9'"):
        per_encoder_layers(["resnet18@random", "pixels"], ["blocks.9"], cache=False)
    with pytest.raises(EncoderError, match="efficientnet-lite0 has none of the layers"):
        per_encoder_layers(["resnet18@random", "efficientnet-lite0"], ["layer2"], cache=False)


def test_score_layers_cli(tmp_path, capsys):
    out = tmp_path / "layers.json"
    args = ["score", DEMO, "--encoders", "resnet18@random,state", "--layers", "all",
            "--n-boot", "20", "--pca-dim", "8", "--device", "cpu",
            "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "best layer of resnet18@random on sim2real_score:" in text
    records = json.loads(out.read_text())
    assert len(records) == 6 and {r["layer"] for r in records} >= {"act1", "layer4", "state"}
    # the pairwise file ranks (encoder, layer) pairs
    pairs = tmp_path / "pairs.json"
    assert main([*args[:-2], "--out", str(tmp_path / "again.csv"), "--pairwise",
                 str(pairs)]) == 0
    labels = {row["encoder_a"] for row in json.loads(pairs.read_text())["comparisons"]}
    assert "resnet18@random @ layer2" in labels and "state @ state" in labels


@pytest.mark.parametrize("extra, message", [
    (["--layers", "layer9"], "no encoder has layer 'layer9'"),
    (["--layers", ","], "--layers: expected 'all', 'last' or layer names"),
    (["--layers", "all", "--layer-score", "nope"], "--layer-score must be one of"),
    (["--layer-score", "dis"], "--layer-score picks a best layer"),
    (["--layers", "all", "--backend", "ray"], "--layers runs on this machine"),
])
def test_layer_errors_exit_2_with_nothing_written(extra, message, tmp_path, monkeypatch,
                                                  capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["score", DEMO, "--encoders", "resnet18@random,pixels", "--out", "x.json", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:") and message in err[-1]
    assert not (tmp_path / "x.json").exists()
    if "layer9" in message:
        assert "resnet18@random: act1, layer1, layer2, layer3, layer4" in err[-1]


def test_merging_keeps_one_row_per_layer(scored, tmp_path):
    from s2r.leaderboard import merge_records, record_identity

    records, _ = scored
    plain = {k: v for k, v in records[4].items() if not k.startswith("layer")}
    merged = merge_records([records, [plain]])
    assert len(merged) == len(records)            # the plain record is the final layer's
    assert len({record_identity(r) for r in records}) == len(records)
    assert np.isfinite(records[0]["dis"])


def test_saliency_at_a_layer_cli(tmp_path, capsys):
    args = ["saliency", DEMO, "--encoder", "resnet18@random", "--frames", "2", "--device", "cpu",
            "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--layer", "layer2", "--out", str(tmp_path / "at2")]) == 0
    report = json.loads((tmp_path / "at2" / "saliency.json").read_text())
    assert report["layer"] == "layer2" and len(report["pairs"]) == 1
    assert "resnet18@random at layer2" in capsys.readouterr().out
    assert main([*args, "--layer", "last", "--out", str(tmp_path / "last")]) == 0
    assert main([*args, "--layer", "layer9", "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "no layer 'layer9'" in err and "act1, layer1" in err
    assert not (tmp_path / "bad").exists()


def test_a_hostile_layer_name_is_quoted_short(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    name = "\x1b[31m" + "x" * 5000
    argv = ["score", DEMO, "--encoders", "pixels", "--out", "x.json", "--layers", name]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err[-1]) < 400 and "\x1b" not in err[-1] and "(5,005 characters)" in err[-1]
