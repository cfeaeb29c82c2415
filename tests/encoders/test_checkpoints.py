"""Checkpoint loading: every release's key naming (synthetic state_dicts with the real key
names and shapes), hub files in the weights folder / hub cache, safe reading, bad files."""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import warnings

import numpy as np
import pytest
import torch

from s2r.encoders import build_encoder, read_checkpoint, status, weights_fingerprint
from s2r.encoders.backends.checkpoint import build_architecture
from s2r.encoders.locate import file_fingerprint
from s2r.errors import EncoderError
from tests.helpers.state_dicts import synthetic
from s2r.settings import current


@pytest.fixture(autouse=True)
def _dirs(tmp_path, monkeypatch):
    weights = tmp_path / "weights"
    weights.mkdir()
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(weights))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    return weights


@pytest.fixture
def weights(_dirs):
    return _dirs


def frames(n=2, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, 60, 80, 3), dtype=np.uint8)


def reference_embed(make, state_dict, enc, batch):
    """Embeddings of an independently built model loaded with plain load_state_dict."""
    model = make().eval()
    model.load_state_dict(state_dict)
    with torch.no_grad():
        return model(enc.preprocess(batch).contiguous()).numpy()


def assert_loaded(enc, state_dict, rename=lambda k: k):
    own = enc.model.state_dict()
    assert set(own) == {rename(k) for k in state_dict}
    for key, value in state_dict.items():
        torch.testing.assert_close(own[rename(key)], value.to(own[rename(key)].dtype),
                                   msg=key)


# ---------------------------------------------------------------------------------------------
# The releases
# ---------------------------------------------------------------------------------------------

def test_r3m_release_layout(weights, no_network):
    make = lambda: build_architecture("resnet18")
    sd = synthetic(make)
    r3m = {f"module.convnet.{k}": v for k, v in sd.items()}
    r3m["module.lang_enc.model.embeddings.word_embeddings.weight"] = torch.randn(30, 8)
    r3m["module.lang_rew.pred.0.weight"] = torch.randn(4, 8)
    path = weights / "r3m_resnet18.pt"
    torch.save({"r3m": r3m, "optimizer": {"state": {}, "param_groups": [{"lr": 1e-4}]}}, path)
    assert status("r3m-resnet18", settings=current()).state == "ready"
    enc = build_encoder("r3m-resnet18", device="cpu", settings=current())
    assert not enc.spec.random_init
    assert_loaded(enc, sd)
    assert enc.weights_fingerprint == file_fingerprint(path)
    # without building
    assert weights_fingerprint("r3m-resnet18", settings=current()) == enc.weights_fingerprint
    batch = frames()
    np.testing.assert_allclose(enc.embed(batch), reference_embed(make, sd, enc, batch),
                               rtol=1e-4, atol=1e-5)


def test_vip_release_layout_keeps_its_1024_head(weights):
    make = lambda: build_architecture("resnet50-fc1024")
    sd = synthetic(make, seed=1)
    assert sd["fc.weight"].shape == (1024, 2048)
    torch.save({"vip": {f"module.convnet.{k}": v for k, v in sd.items()}},
               weights / "vip_resnet50.pt")
    enc = build_encoder("vip", device="cpu", settings=current())
    assert_loaded(enc, sd)
    batch = frames(1)
    z = enc.embed(batch)
    assert z.shape == (1, 1024)
    np.testing.assert_allclose(z, reference_embed(make, sd, enc, batch), rtol=1e-4, atol=1e-5)


def test_mcr_plain_torchvision_state_dict(weights):
    make = lambda: build_architecture("resnet50")
    sd = synthetic(make, seed=2)
    assert not any(k.startswith("fc.") for k in sd)
    torch.save(sd, weights / "mcr_resnet50.pth")
    enc = build_encoder("mcr", device="cpu", settings=current())
    assert_loaded(enc, sd)
    assert enc.embed(frames(1)).shape == (1, 2048)


def test_legacy_torch_save_format_is_read(weights):
    sd = {"conv1.weight": torch.randn(4, 3, 3, 3), "bn1.num_batches_tracked": torch.tensor(7)}
    path = weights / "old.pth"
    torch.save({"state_dict": sd}, path, _use_new_zipfile_serialization=False)
    out = read_checkpoint(path)["state_dict"]
    torch.testing.assert_close(out["conv1.weight"], sd["conv1.weight"])
    assert int(out["bn1.num_batches_tracked"]) == 7


@pytest.mark.parametrize("container", ["features", "model"])
def test_hrp_resnet18_groupnorm_release_layout(weights, container):
    make = lambda: build_architecture("resnet18-gn16")
    sd = synthetic(make, seed=3)
    assert "bn1.weight" in sd and not any("running_mean" in k for k in sd)  # GroupNorm
    torch.save({container: {f"_model.{k}": v for k, v in sd.items()}},
               weights / "hrp_resnet18.pth")
    enc = build_encoder("hrp-resnet18", device="cpu", settings=current())
    assert isinstance(enc.model.bn1, torch.nn.GroupNorm) and enc.model.bn1.num_groups == 16
    assert_loaded(enc, sd)
    if container == "features":
        batch = frames()
        np.testing.assert_allclose(enc.embed(batch), reference_embed(make, sd, enc, batch),
                                   rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def mae_state_dict():
    """timm ViT-B/16 keys plus MAE's decoder and mask token (the MVP / VC-1 / HRP layout)."""
    sd = synthetic(lambda: build_architecture("vit_base_patch16_224"), seed=4)
    extra = {"mask_token": torch.randn(1, 1, 512), "decoder_pos_embed": torch.randn(1, 197, 512),
             "decoder_embed.weight": torch.randn(512, 768), "decoder_embed.bias": torch.randn(512),
             "decoder_blocks.0.norm1.weight": torch.randn(512),
             "decoder_blocks.0.attn.qkv.weight": torch.randn(1536, 512),
             "decoder_norm.weight": torch.randn(512), "decoder_pred.weight": torch.randn(768, 512)}
    return sd, extra


def test_mae_releases_mvp_vc1_hrp_vit(weights, mae_state_dict):
    sd, extra = mae_state_dict
    first = weights / "mae_pretrain_egosoup_vit_base.pth"
    # MAE training scripts also pickle their argparse options and numpy scalars.
    torch.save({"model": {**sd, **extra}, "args": argparse.Namespace(lr=1.5e-4, mask_ratio=0.75),
                "epoch": np.int64(399), "loss": np.float64(0.41)}, first)
    os.link(first, weights / "vc1_vitb.pth")
    torch.save({**sd, **extra}, weights / "hrp_vit.pth")  # HRP's IN_hrp.pth: a bare state dict
    for encoder_id in ("mvp", "vc1-b", "hrp-vit"):
        enc = build_encoder(encoder_id, device="cpu", settings=current())
        assert_loaded(enc, sd)
        assert enc.grid_size == (14, 14) and enc.num_prefix_tokens == 1
        if encoder_id == "mvp":
            z = enc.embed(frames(1))
            assert z.shape == (1, 768) and np.isfinite(z).all()
        del enc
        gc.collect()


# ---------------------------------------------------------------------------------------------
# Hub models: files in the weights folder or the local hub cache
# ---------------------------------------------------------------------------------------------

def _timm(name, **kw):
    import timm

    return lambda: timm.create_model(name, pretrained=False, **kw)


def test_timm_hub_file_in_weights_folder_drops_the_classifier(weights, no_network):
    from safetensors.torch import save_file

    full = synthetic(_timm("resnet18"), seed=5)  # what the hub's model.safetensors holds
    assert "fc.weight" in full
    save_file(full, str(weights / "resnet18.safetensors"))
    assert status("resnet18", settings=current()).state == "ready"
    enc = build_encoder("resnet18", device="cpu", settings=current())
    trunk = {k: v for k, v in full.items() if not k.startswith("fc.")}
    assert_loaded(enc, trunk)
    batch = frames()
    np.testing.assert_allclose(
        enc.embed(batch), reference_embed(_timm("resnet18", num_classes=0), trunk, enc, batch),
        rtol=1e-4, atol=1e-5)


def test_timm_weights_from_the_hub_cache(tmp_path, monkeypatch, no_network):
    from safetensors.torch import save_file

    cache = tmp_path / "hf"
    repo = cache / "models--timm--mobilenetv3_large_100.ra_in1k"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("c0ffee")
    (repo / "snapshots" / "c0ffee").mkdir(parents=True)
    full = synthetic(_timm("mobilenetv3_large_100"), seed=6)
    file = repo / "snapshots" / "c0ffee" / "model.safetensors"
    save_file(full, str(file))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    enc = build_encoder("mobilenetv3", device="cpu", settings=current())
    assert enc.weights_path == str(file) and enc.weights_fingerprint == file_fingerprint(file)
    assert_loaded(enc, {k: v for k, v in full.items() if not k.startswith("classifier.")})


def test_dinov2_hub_weights_at_518_are_resampled_to_224(weights):
    from safetensors.torch import save_file

    full = synthetic(_timm("vit_base_patch14_dinov2"), seed=7)
    assert full["pos_embed"].shape == (1, 1370, 768)  # 37 x 37 + CLS at its default 518
    save_file(full, str(weights / "dinov2-b.safetensors"))
    enc = build_encoder("dinov2-b", device="cpu", settings=current())
    own = enc.model.state_dict()
    assert own["pos_embed"].shape == (1, 257, 768)
    torch.testing.assert_close(own["pos_embed"][:, 0], full["pos_embed"][:, 0])  # CLS kept
    torch.testing.assert_close(own["blocks.11.mlp.fc2.weight"], full["blocks.11.mlp.fc2.weight"])
    assert enc.grid_size == (16, 16)


def test_open_clip_file_loads_the_image_tower_from_fp16(weights):
    from s2r.encoders import get_spec
    from s2r.encoders.backends.open_clip import open_clip_visual

    visual = synthetic(lambda: open_clip_visual(get_spec("clip-base-32")), seed=8)
    full = {f"visual.{k}": v.half() for k, v in visual.items()}  # OpenAI weights are fp16
    full.update({"token_embedding.weight": torch.randn(10, 512).half(),
                 "positional_embedding": torch.randn(77, 512).half(),
                 "transformer.resblocks.0.ln_1.weight": torch.randn(512).half(),
                 "text_projection": torch.randn(512, 512).half(), "logit_scale": torch.ones([])})
    torch.save(full, weights / "clip-base-32.bin")
    enc = build_encoder("clip-base-32", device="cpu", settings=current())
    assert all(p.dtype == torch.float32 for p in enc.model.parameters())
    assert_loaded(enc, {k: v.half() for k, v in visual.items()})
    assert enc.embed(frames(1)).shape == (1, 512)


# ---------------------------------------------------------------------------------------------
# Offline / online behaviour of hub weights
# ---------------------------------------------------------------------------------------------

def test_missing_hub_weights_offline_say_how_to_get_them(no_network, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EncoderError) as err:
        build_encoder("resnet50", device="cpu", settings=current())
    msg = str(err.value)
    assert "offline" in msg and "resnet50.safetensors" in msg and "S2R_WEIGHTS_DIR" in msg
    assert "https://huggingface.co/timm/resnet50.a1_in1k/resolve/main/model.safetensors" in msg
    assert "resnet50@random" in msg
    with pytest.raises(EncoderError, match="r3m_resnet34.pt.*S2R_WEIGHTS_DIR"):
        build_encoder("r3m-resnet34", device="cpu", settings=current())
    # looking never resolves or fetches
    assert weights_fingerprint("resnet50", settings=current()) == "missing"


def test_unreachable_hub_fails_fast(monkeypatch):
    from s2r.encoders import locate

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(locate, "hub_reachable", lambda *a, **k: False)
    with pytest.raises(EncoderError, match="not reachable.*vgg16.safetensors"):
        build_encoder("vgg16", device="cpu", settings=current())


def test_online_downloads_through_the_hub_library(monkeypatch, tmp_path):
    """With the network (simulated), weights come from hf_hub_download into the hub cache."""
    import huggingface_hub
    from safetensors.torch import save_file

    from s2r.encoders import locate

    full = synthetic(_timm("efficientnet_b0"), seed=9)
    calls = []

    def fake_download(repo_id, filename, cache_dir=None, **kwargs):
        calls.append((repo_id, filename, cache_dir))
        path = tmp_path / "downloaded" / filename
        path.parent.mkdir(exist_ok=True)
        save_file(full, str(path))
        return str(path)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(locate, "hub_reachable", lambda *a, **k: True)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    enc = build_encoder("efficientnet-b0", device="cpu", settings=current())
    assert calls == [("timm/efficientnet_b0.ra_in1k", "model.safetensors",
                      os.environ["HF_HUB_CACHE"])]
    assert_loaded(enc, {k: v for k, v in full.items() if not k.startswith("classifier.")})


def test_hub_reachable_gives_up_quickly():
    from s2r.encoders.locate import hub_reachable

    import time

    start = time.monotonic()
    assert hub_reachable("192.0.2.1", 9, timeout=0.3) is False  # TEST-NET-1: never answers
    assert time.monotonic() - start < 2.0


# ---------------------------------------------------------------------------------------------
# Bad files
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def r18():
    return synthetic(lambda: build_architecture("resnet18"), seed=10)


def _save_r3m(weights, sd):
    torch.save({"r3m": {f"module.convnet.{k}": v for k, v in sd.items()}},
               weights / "r3m_resnet18.pt")


def test_wrong_keys_are_named(weights, r18):
    sd = dict(r18)
    del sd["layer4.1.bn2.weight"]
    sd["foo.weight"] = torch.zeros(3)
    _save_r3m(weights, sd)
    with pytest.raises(EncoderError) as err:
        build_encoder("r3m-resnet18", device="cpu", settings=current())
    msg = str(err.value)
    assert "r3m_resnet18.pt" in msg
    assert "missing keys 1 (layer4.1.bn2.weight)" in msg
    assert "unexpected keys 1 (foo.weight)" in msg


def test_wrong_shapes_are_named(weights, r18):
    sd = dict(r18)
    sd["conv1.weight"] = torch.zeros(64, 3, 5, 5)
    _save_r3m(weights, sd)
    with pytest.raises(EncoderError, match=r"conv1.weight: file \(64, 3, 5, 5\) vs model "
                                           r"\(64, 3, 7, 7\)"):
        build_encoder("r3m-resnet18", device="cpu", settings=current())


def test_a_different_architecture_reports_counts(weights):
    _save_r3m(weights, synthetic(lambda: build_architecture("resnet34"), seed=11))
    with pytest.raises(EncoderError, match=r"unexpected keys \d{2,} \(.*, \.\.\.\)"):
        build_encoder("r3m-resnet18", device="cpu", settings=current())


def test_state_dict_not_where_expected(weights, r18):
    torch.save({"weights": r18}, weights / "r3m_resnet18.pt")
    with pytest.raises(EncoderError, match="no state_dict.*'r3m'.*holds \\['weights'\\]"):
        build_encoder("r3m-resnet18", device="cpu", settings=current())


def test_not_a_checkpoint(weights):
    (weights / "vip_resnet50.pt").write_text("<html>Google Drive: virus scan warning</html>")
    with pytest.raises(EncoderError, match="vip_resnet50.pt is not a checkpoint.*torch.save"):
        build_encoder("vip", device="cpu", settings=current())
    with pytest.raises(EncoderError, match="does not exist"):
        read_checkpoint(weights / "nope.pt")
    bad = weights / "x.safetensors"
    bad.write_bytes((40).to_bytes(8, "little") + b'{"a": {"dtype": "F32", "shape": [9], "d')
    with pytest.raises(EncoderError, match="x.safetensors"):
        read_checkpoint(bad)


def test_torchscript_archive_is_refused(weights):
    torch.jit.script(torch.nn.Linear(2, 2)).save(str(weights / "clip.pt"))
    with pytest.raises(EncoderError, match="TorchScript"):
        read_checkpoint(weights / "clip.pt")


class Custom:
    def __init__(self):
        self.value = 1


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("legacy", [False, True])
def test_pickles_needing_code_execution_are_refused(weights, tmp_path, legacy):
    marker = tmp_path / "pwned"
    path = weights / "mcr_resnet50.pth"
    torch.save({"model": {"w": torch.zeros(2)}, "x": Payload(marker)}, path,
               _use_new_zipfile_serialization=not legacy)
    with pytest.raises(EncoderError, match="refused to load.*run code") as err:
        build_encoder("mcr", device="cpu", settings=current())
    assert not marker.exists()
    assert "system" in str(err.value)  # named for the legacy format too
    torch.save({"w": torch.zeros(2), "obj": Custom()}, path)
    with pytest.raises(EncoderError, match=r"refused to load.*Custom"):
        read_checkpoint(path)


def test_plain_pickle_of_a_dict_is_not_a_torch_checkpoint(weights):
    path = weights / "p.pkl"
    with open(path, "wb") as fh:
        pickle.dump({"a": Payload(weights / "pwned")}, fh)
    with pytest.raises(EncoderError, match="refused|could not be read"):
        read_checkpoint(path)
    assert not (weights / "pwned").exists()


@pytest.mark.parametrize("legacy", [False, True])
def test_protocol_4_pickles_are_refused_in_one_line_without_torch_warnings(weights, tmp_path,
                                                                         legacy):
    marker = tmp_path / "pwned"
    path = weights / "p4.pth"
    torch.save({"model": {"w": torch.zeros(2)}, "x": Payload(marker)}, path, pickle_protocol=4,
               _use_new_zipfile_serialization=not legacy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(EncoderError) as err:
            read_checkpoint(path)
        torch.save({"w": torch.zeros(2)}, weights / "p4-plain.pth", pickle_protocol=4)
        with pytest.raises(EncoderError) as plain:
            read_checkpoint(weights / "p4-plain.pth")
        torch.save({"w": torch.ones(2)}, weights / "p3.pth", pickle_protocol=3)
        torch.testing.assert_close(read_checkpoint(weights / "p3.pth")["w"], torch.ones(2))
    assert [str(w.message) for w in caught] == []  # torch's "Detected pickle protocol" too
    assert not marker.exists()
    text = str(err.value)
    assert text.startswith(f"refused to load {path}: it is pickled with protocol 4, which "
                           "torch's weights-only loader cannot read; it imports ")
    assert "system" in text and "\n" not in text and "_rebuild_tensor" not in text
    assert "protocol 4" in str(plain.value) and "imports" not in str(plain.value)
