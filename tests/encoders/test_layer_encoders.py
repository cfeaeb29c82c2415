"""Layer encoders (``ID@LAYER``): one layer of a pretrained encoder as an encoder of its own,
embedding exactly what the layer taps (``score --layers``) give for that layer; their ids,
listing, labels, refusals and random-init controls. Tiny frames, CPU, nothing downloaded."""

from __future__ import annotations

import json

import numpy as np
import pytest

from s2r.encoders import build_encoder, get_spec, list_encoders
from s2r.encoders.builtins import LAYER_TAPS
from s2r.errors import EncoderError
from s2r.settings import current

FRAMES = np.random.default_rng(0).integers(0, 256, (3, 20, 24, 3), dtype=np.uint8)


def test_every_layer_encoder_resolves_lists_and_is_labelled():
    from s2r.encoders.labels import encoder_kind, encoder_label

    listed = {s.id for s in list_encoders("*@blocks.*")}
    assert listed == {f"{base}@{layer}" for base, layer, _, _ in LAYER_TAPS}
    assert len(listed) == 6
    spec = get_spec("efficientnet-lite1@blocks.4")
    assert (spec.base_id, spec.layer, spec.dim, spec.input_size) == (
        "efficientnet-lite1", "blocks.4", 112, (240, 240))
    assert spec.weights_file == get_spec("efficientnet-lite1").weights_file   # same weights
    assert encoder_kind(spec) == "layer tap"
    assert encoder_label(spec) == "layer tap of efficientnet-lite1 (blocks.4)"
    assert encoder_label("efficientnet-lite1@blocks.4@random") == (
        "random init of efficientnet-lite1@blocks.4")
    assert encoder_kind("efficientnet-lite1@random") == "random init"
    assert encoder_label("mw-simcnn-dr0.5") == "control (randomisation 0.5)"
    assert (encoder_kind("state"), encoder_kind("efficientnet-lite1")) == (
        "reference", "image encoder")


def test_the_registered_widths_are_the_layer_plans():
    """The widths written in LAYER_TAPS are what the taps measure, and the pools module's
    trunk attribute is the one the registry's Grad-CAM layers name."""
    from s2r.encoders import builtins, pools
    from s2r.encoders.taps import layer_plan

    assert builtins._TRUNK == pools.TRUNK
    for base, layer, dim, _ in LAYER_TAPS:
        widths = {t.name: t.dim for t in layer_plan(get_spec(base))}
        assert widths[layer] == dim == get_spec(f"{base}@{layer}").dim


@pytest.mark.parametrize("layer", ["blocks.2", "blocks.4"])
def test_a_layer_encoder_embeds_exactly_its_layer_tap(layer):
    """Metamorphic: the encoder's embedding equals the column block the layer taps give for
    the same layer of the base encoder on the same frames (the same hook, module, pooling)."""
    from s2r.encoders.taps import LayerEmbedder, layer_plan, select_layers

    base = build_encoder("efficientnet-lite0", device="cpu", settings=current())
    taps = select_layers(layer_plan(base.spec), [layer])
    want = LayerEmbedder(base, taps).split(LayerEmbedder(base, taps).embed(FRAMES))[layer]
    enc = build_encoder(f"efficientnet-lite0@{layer}", device="cpu", settings=current())
    got = enc.embed(FRAMES)
    assert got.shape == (3, enc.dim) == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * float(np.abs(want).max()))
    assert np.abs(got - base.embed(FRAMES)[:, :enc.dim]).max() > 1e-3   # not the head's
    # its own plan is one layer, its embedding
    assert [(t.name, t.dim, t.final) for t in layer_plan(enc.spec)] == [("head", enc.dim, True)]


def test_random_layer_encoders_are_deterministic_and_not_pretrained():
    a = build_encoder("efficientnet-lite0@random", device="cpu", settings=current())
    b = build_encoder("efficientnet-lite0@random", device="cpu", settings=current())
    np.testing.assert_array_equal(a.embed(FRAMES), b.embed(FRAMES))
    assert a.weights_fingerprint.startswith("random:") and a.dim == 1280
    t = build_encoder("efficientnet-lite0@blocks.4@random", device="cpu", settings=current())
    p = build_encoder("efficientnet-lite0@blocks.4", device="cpu", settings=current())
    zt = t.embed(FRAMES)
    assert zt.shape == (3, 112) and not np.allclose(zt, p.embed(FRAMES))


def test_gradcam_of_a_layer_encoder_is_gradcam_at_that_layer():
    from s2r.encoders.taps import layer_view
    from s2r.saliency.methods import compute_saliency

    base = build_encoder("efficientnet-lite0", device="cpu", settings=current())
    enc = build_encoder("efficientnet-lite0@blocks.4", device="cpu", settings=current())
    got = compute_saliency(enc, FRAMES[:2], method="gradcam").maps
    want = compute_saliency(layer_view(base, "blocks.4"), FRAMES[:2], method="gradcam").maps
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_onnx_runtime_runs_a_layer_encoder_to_the_same_numbers(recwarn):
    enc = build_encoder("efficientnet-lite0@blocks.2", device="cpu", settings=current(),
                        runtime="onnx")
    ref = build_encoder("efficientnet-lite0@blocks.2", device="cpu", settings=current())
    got, want = enc.embed(FRAMES), ref.embed(FRAMES)
    assert enc.runs_graphs and not [w for w in recwarn if "torch" in str(w.message)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("bad, says", [
    ("efficientnet-lite0@nope", "its layer encoders are efficientnet-lite0@blocks.2, "
                                "efficientnet-lite0@blocks.4"),
    ("pixels@blocks.2", "it has no layer encoders"),
    ("resnet18@layer3", "it has no layer encoders"),
])
def test_bad_layer_ids_are_one_clear_line(bad, says):
    with pytest.raises(EncoderError) as err:
        get_spec(bad)
    text = str(err.value)
    assert "\n" not in text and says in text and f"unknown encoder {bad!r}" in text


def test_a_layer_the_architecture_lacks_is_refused_at_build():
    import dataclasses

    spec = dataclasses.replace(get_spec("efficientnet-lite0@blocks.4"), layer="blocks.9")
    with pytest.raises(EncoderError, match=r"no layer 'blocks.9'; its layers: blocks.0, "):
        build_encoder(spec, device="cpu", settings=current())


def test_user_ids_may_not_hold_the_layer_mark():
    from s2r.encoders.fields import id_problem

    assert "'@'" in id_problem("my@enc")


def test_the_cli_lists_layer_encoders_with_their_kind(capsys, no_network):
    from s2r.cli import main

    assert main(["encoders", "--json", "efficientnet-lite0*"]) == 0
    kinds = {r["id"]: (r["kind"], r["label"], r["status"])
             for r in json.loads(capsys.readouterr().out)}
    assert kinds["efficientnet-lite0@blocks.2"] == (
        "layer tap", "layer tap of efficientnet-lite0 (blocks.2)", "ready")
    assert kinds["efficientnet-lite0"][0] == "image encoder"
    assert main(["encoders", "efficientnet-lite0*"]) == 0
    table = capsys.readouterr().out
    assert "layer tap" in table and max(len(line) for line in table.splitlines()) <= 100
