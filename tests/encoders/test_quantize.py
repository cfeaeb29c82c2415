"""Opt-in int8 embedding: which encoders get it, calibration, the fidelity guard, keys, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import s2r.encoders.quantize as quantize_mod
from s2r.cache import Cache
from s2r.embed import (compute_embeddings, embed_frameset, embedding_precision,
                       embeddings_key, int8_check)
from s2r.encoders import BUILTIN_SPECS, build_encoder, get_spec
from s2r.encoders.quantize import (MAX_INT8_ERROR, calibration_indices, check_precision,
                                   effective_precision, int8_error, int8_unavailable_reason,
                                   precision_tag, quantize_int8)
from s2r.errors import EncoderError


# ----------------------------------------------------------------------------- pure helpers
def test_calibration_indices_split_evenly_between_domains():
    domain = np.array(["sim"] * 10 + ["real"] * 6)
    # two per domain, evenly spaced over each domain's rows (hand-computed)
    np.testing.assert_array_equal(calibration_indices(domain, 4), [0, 9, 10, 15])
    # an odd count gives the extra frame to the first domain
    np.testing.assert_array_equal(calibration_indices(domain, 3), [0, 9, 10])
    # more than there are: every frame once
    np.testing.assert_array_equal(calibration_indices(domain, 100), np.arange(16))
    # one domain only
    np.testing.assert_array_equal(calibration_indices(np.array(["sim"] * 5), 3), [0, 2, 4])


@pytest.mark.parametrize("domain, n, message", [
    (np.array([]), 4, "non-empty"),
    (np.array(["sim"] * 3), 0, "positive"),
])
def test_calibration_indices_bad_input(domain, n, message):
    with pytest.raises(EncoderError, match=message):
        calibration_indices(domain, n)


def test_int8_error_against_hand_computed_values():
    exact = np.array([[0.0, 0.0], [2.0, 0.0]])  # mean (1, 0); spread = sqrt(1 + 1)
    approx = exact + np.array([[0.0, 0.1], [0.0, -0.1]])  # error norm sqrt(0.02)
    assert int8_error(exact, approx) == pytest.approx(np.sqrt(0.02) / np.sqrt(2))
    assert int8_error(exact, exact) == 0.0
    # a common offset of every row counts fully (it is error, not spread)
    assert int8_error(exact, exact + 1.0) == pytest.approx(2.0 / np.sqrt(2))
    with pytest.raises(EncoderError, match="same shape"):
        int8_error(exact, exact[:1])


def test_check_precision_names_the_choices():
    assert check_precision("int8") == "int8"
    with pytest.raises(EncoderError, match="auto, int8"):
        check_precision("fp8")


def test_registry_offers_int8_for_resnet_and_vgg_types_only():
    offered = {i for i, s in BUILTIN_SPECS.items() if s.int8}
    assert offered == {"resnet18", "resnet34", "resnet50", "resnet101", "r3m-resnet18",
                       "r3m-resnet34", "r3m-resnet50", "hrp-resnet18", "mcr", "vip", "vgg16",
                       "vgg19", "resnet18.tv", "resnet34.tv", "resnet50.tv", "resnet101.tv"}
    assert all(BUILTIN_SPECS[i].family == "cnn" for i in offered)
    assert get_spec("resnet18@random").int8 and not get_spec("mobilenetv3@random").int8


@pytest.mark.parametrize("encoder_id, device, expected", [
    ("resnet18@random", "cpu", "int8"),
    ("hrp-resnet18@random", "cpu", "int8"),
    ("resnet18@random", "cuda", "auto"),       # CUDA runs fp16 instead
    ("vit@random", "cpu", "auto"),             # transformers are not quantized
    ("mobilenetv3@random", "cpu", "auto"),     # measured no faster in int8
    ("efficientnet-lite0", "cpu", "auto"),
    ("pixels", "cpu", "auto"),
])
def test_effective_precision(encoder_id, device, expected):
    spec = get_spec(encoder_id)
    assert effective_precision(spec, device, "int8") == expected
    assert effective_precision(spec, device, "auto") == "auto"
    assert (int8_unavailable_reason(spec, device) is None) == (expected == "int8")
    assert precision_tag(expected) == (None if expected == "auto" else "int8/v1")


# ----------------------------------------------------------------------------- quantization
@pytest.fixture(scope="module")
def resnet18():
    return build_encoder("resnet18@random", device="cpu")


@pytest.fixture(scope="module")
def calibration(small_demo):
    return small_demo.read_images(calibration_indices(small_demo.domain, 16))


@pytest.fixture(scope="module")
def resnet18_int8(resnet18, calibration):
    return quantize_int8(resnet18, calibration)


def test_quantized_resnet18_is_really_int8_and_close_to_fp32(small_demo, resnet18,
                                                              resnet18_int8):
    q = resnet18_int8
    assert q.precision == "int8" and "precision=int8" in repr(q)
    assert q.weights_fingerprint == resnet18.weights_fingerprint
    kinds = {type(m).__module__ for m in q.model.modules()}
    assert any(".quantized" in k for k in kinds), kinds  # quantized conv modules inside
    frames = small_demo.read_images(np.arange(0, len(small_demo), 3))
    exact, approx = resnet18.embed(frames), q.embed(frames)
    assert approx.shape == exact.shape == (len(frames), 512) and approx.dtype == np.float32
    cos = (exact * approx).sum(1) / np.linalg.norm(exact, axis=1) / np.linalg.norm(approx, axis=1)
    assert cos.min() > 0.99
    assert np.abs(approx - exact).max() > 1e-4  # not the fp32 model under another name
    # the recorded error is int8_error over the calibration frames, recomputed here
    assert 0 < q.int8_error < 1


def test_recorded_error_matches_an_independent_recomputation(resnet18, resnet18_int8,
                                                             calibration):
    exact = resnet18.embed(calibration)
    approx = resnet18_int8.embed(calibration)
    assert resnet18_int8.int8_error == pytest.approx(int8_error(exact, approx), rel=1e-4)


def test_quantization_is_deterministic_and_leaves_the_fp32_encoder_alone(
        small_demo, resnet18, resnet18_int8, calibration):
    frames = small_demo.read_images(np.arange(6))
    before = resnet18.embed(frames)
    again = quantize_int8(resnet18, calibration)
    np.testing.assert_array_equal(again.embed(frames), resnet18_int8.embed(frames))
    np.testing.assert_array_equal(resnet18.embed(frames), before)
    assert quantize_int8(resnet18_int8, calibration) is resnet18_int8



def test_the_int8_copy_runs_on_the_encoders_threads(resnet18, calibration):
    import dataclasses

    from s2r.settings import current

    one = build_encoder("resnet18@random", device="cpu",
                        settings=dataclasses.replace(current(), threads=1))
    assert quantize_int8(one, calibration).threads == one.threads == 1
    assert resnet18.threads is None and quantize_int8(resnet18, calibration).threads is None


def test_int8_encoder_refuses_saliency(resnet18_int8):
    with pytest.raises(EncoderError, match="no gradients"):
        _ = resnet18_int8.cam_layer


def test_quantize_refuses_what_it_cannot_do(calibration):
    vit = build_encoder("vit@random", device="cpu")
    with pytest.raises(EncoderError, match="int8 is offered only"):
        quantize_int8(vit, calibration)
    with pytest.raises(EncoderError, match="at least 2 frames"):
        quantize_int8(build_encoder("resnet18@random", device="cpu"), calibration[:1])


@pytest.mark.parametrize("encoder_id", ["r3m-resnet18@random", "hrp-resnet18@random"])
def test_checkpoint_architectures_quantize(encoder_id, small_demo, calibration):
    enc = build_encoder(encoder_id, device="cpu")
    q = quantize_int8(enc, calibration[:8])
    frames = small_demo.read_images(np.arange(4))
    exact, approx = enc.embed(frames), q.embed(frames)
    assert approx.shape == (4, 512)
    cos = (exact * approx).sum(1) / np.linalg.norm(exact, axis=1) / np.linalg.norm(approx, axis=1)
    assert cos.min() > 0.98


# ----------------------------------------------------------------------------- pipeline
@pytest.fixture(scope="module")
def tiny():
    """2 + 2 episodes of 8 frames: every frame is a calibration frame (quick to quantize)."""
    from s2r.worlds.demo.dataset import make_demo

    return make_demo(episodes=2, steps=8, gap=0.5, seed=0, height=64, width=80)


def test_random_init_resnet_fails_the_guard_and_is_embedded_exactly(tiny, tmp_path):
    """Random-init embeddings barely vary between frames, so int8 noise is large next to that
    spread: the guard refuses int8 and the embeddings equal the exact ones."""
    cache = Cache(tmp_path / "cache")
    messages = []
    Z8 = embed_frameset(tiny, "resnet18@random", cache=cache, device="cpu",
                        precision="int8", progress=lambda d, t, m: messages.append(m))
    check = int8_check(tiny, "resnet18@random", device="cpu", cache=cache)
    assert check["error"] > MAX_INT8_ERROR and not check["accepted"]
    assert check["calibration_frames"] == 32  # all of them (< 64)
    assert any("int8 would be off by" in m and "embedding exactly" in m for m in messages)
    Z = embed_frameset(tiny, "resnet18@random", cache=cache, device="cpu")
    np.testing.assert_allclose(np.asarray(Z8), np.asarray(Z), rtol=1e-5, atol=1e-6)
    assert embedding_precision(tiny, "resnet18@random", precision="int8", device="cpu",
                               cache=cache) == "auto"
    assert sorted(e.kind for e in cache.ls()) == ["embeddings", "embeddings", "int8-check"]


def test_accepted_int8_is_used_cached_and_keyed_apart(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(quantize_mod, "MAX_INT8_ERROR", 10.0)  # accept (plumbing test)
    cache = Cache(tmp_path / "cache")
    calls = []
    real = quantize_mod.quantize_int8
    monkeypatch.setattr(quantize_mod, "quantize_int8",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    Z8 = np.asarray(embed_frameset(tiny, "resnet18@random", cache=cache, device="cpu",
                                   precision="int8"))
    assert len(calls) == 1  # the check's int8 encoder is reused for the embeddings
    Z = np.asarray(embed_frameset(tiny, "resnet18@random", cache=cache, device="cpu"))
    assert np.abs(Z8 - Z).max() > 1e-4  # different numbers: int8 really ran
    key8 = embeddings_key(tiny, "resnet18@random", precision="int8", device="cpu")
    key = embeddings_key(tiny, "resnet18@random", device="cpu")
    assert key8 == {**key, "precision": "int8/v1"}
    assert embedding_precision(tiny, "resnet18@random", precision="int8", device="cpu",
                               cache=cache) == "int8"
    # a second request is a cache hit: nothing is quantized again
    again = embed_frameset(tiny, "resnet18@random", cache=cache, device="cpu",
                           precision="int8")
    np.testing.assert_array_equal(np.asarray(again), Z8)
    assert len(calls) == 1


def test_unsupported_encoders_ignore_int8_and_share_the_exact_cache(tiny, tmp_path):
    cache = Cache(tmp_path / "cache")
    messages = []
    Z8 = embed_frameset(tiny, "pixels", cache=cache, precision="int8",
                        progress=lambda d, t, m: messages.append(m))
    assert "native precision" in messages[0]
    assert embeddings_key(tiny, "pixels", precision="int8") == \
        embeddings_key(tiny, "pixels")
    Z = embed_frameset(tiny, "pixels", cache=cache)
    np.testing.assert_array_equal(np.asarray(Z8), np.asarray(Z))
    assert [e.kind for e in cache.ls()] == ["embeddings"]


def test_an_int8_encoder_passed_in_embeds_int8(tiny, resnet18_int8):
    out = compute_embeddings(tiny, resnet18_int8, indices=np.arange(5))
    np.testing.assert_array_equal(out, resnet18_int8.embed(tiny.read_images(np.arange(5))))
    assert embeddings_key(tiny, resnet18_int8)["precision"] == "int8/v1"


# ----------------------------------------------------------------------------- scores, CLI
def test_score_records_say_which_precision_ran(tiny, monkeypatch):
    import dataclasses

    from s2r.leaderboard import merge_records
    from s2r.settings import current
    from s2r.metrics.params import ScoreParams
    from s2r.pipeline import score_encoder

    params = ScoreParams(n_boot=0)
    # torch: a refused int8 embeds exactly in torch (int8 is torch's path), so the exact
    # record it must merge with is torch's (ONNX Runtime's is a row of its own)
    exact = score_encoder(tiny, "resnet18@random", params=params, device="cpu",
                          settings=dataclasses.replace(current(), runtime="torch"))
    refused = score_encoder(tiny, "resnet18@random", params=params, device="cpu",
                            precision="int8")
    assert exact["precision"] == refused["precision"] == "auto"
    assert refused["dis"] == pytest.approx(exact["dis"], abs=1e-6)
    monkeypatch.setattr(quantize_mod, "MAX_INT8_ERROR", 10.0)
    int8 = score_encoder(tiny, "resnet18@random", params=params, device="cpu",
                         precision="int8")
    assert int8["precision"] == "int8"
    # same encoder, dataset and parameters but another precision: both rows survive a merge
    assert len(merge_records([[exact], [int8]])) == 2
    assert len(merge_records([[exact], [refused]])) == 1


def test_cli_precision_flag(tmp_path, capsys):
    from s2r.cli import main

    out = tmp_path / "z.npz"
    spec = "demo:episodes=3,steps=6,height=64,width=64"
    assert main(["embed", spec, "--encoder", "resnet18@random", "--out", str(out),
                 "--device", "cpu", "--precision", "int8"]) == 0
    with np.load(out) as f:
        assert str(f["precision"]) == "auto"  # random init: the guard refused int8
    assert main(["score", spec, "--encoders", "pixels,resnet18@random", "--n-boot", "0",
                 "--precision", "int8", "--device", "cpu",
                 "--out", str(tmp_path / "s.json")]) == 0
    records = json.loads((tmp_path / "s.json").read_text())
    assert {r["encoder"]["id"]: r["precision"] for r in records} == {
        "pixels": "auto", "resnet18@random": "auto"}
    with pytest.raises(SystemExit):
        main(["embed", spec, "--encoder", "pixels", "--out", str(out), "--precision", "fp8"])
    assert "invalid choice: 'fp8'" in capsys.readouterr().err


def test_embedding_in_int8_does_not_touch_torch_global_engine(resnet18, calibration):
    engine = torch.backends.quantized.engine
    quantize_int8(resnet18, calibration[:4])
    assert torch.backends.quantized.engine == engine
