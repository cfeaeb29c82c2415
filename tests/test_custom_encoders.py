"""User encoders: inline references, config files, register_encoder, and their errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from s2r.encoders import (EncoderRegistry, build_encoder, get_spec, list_encoders,
                          spec_from_checkpoint, spec_from_open_clip, spec_from_timm, status)
from s2r.encoders.build import build_architecture
from s2r.errors import EncoderError


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no stray ./s2r_encoders.toml
    monkeypatch.delenv("S2R_ENCODERS", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))


def _resnet18_file(path, *, prefix="module.", container="state_dict"):
    model = build_architecture("resnet18")
    sd = {f"{prefix}{k}": v for k, v in model.state_dict().items()}
    sd[f"{prefix}fc.weight"] = torch.zeros(1000, 512)  # a classifier the embedding drops
    torch.save({container: sd, "epoch": 3} if container else sd, path)
    return model


def test_inline_timm_reference_pins_the_tag_and_infers_metadata():
    spec = get_spec("timm:convnext_tiny")
    assert spec.id == "timm:convnext_tiny" and spec.backend == "timm"
    assert spec.identifier == "convnext_tiny" and spec.tag == "in12k_ft_in1k"
    assert spec.family == "cnn" and spec.architecture == "CNN" and spec.dim == 768
    assert spec.params_m == pytest.approx(27.82, abs=0.01)
    assert spec.cam_layer == "stages.3" and spec.table_number is None
    assert spec.hub_repo == "timm/convnext_tiny.in12k_ft_in1k"
    vit = get_spec("timm:vit_small_patch16_224.augreg_in21k_ft_in1k")
    assert (vit.family, vit.dim, vit.cam_layer) == ("vit", 384, "blocks.-1.norm1")
    assert vit.mean == (0.5, 0.5, 0.5)
    enc = build_encoder("timm:vit_small_patch16_224.augreg_in21k_ft_in1k@random", device="cpu")
    assert enc.embed(np.zeros((1, 40, 50, 3), np.uint8)).shape == (1, 384)
    assert enc.spec.name.endswith("(random init)")
    assert status("timm:convnext_tiny").state == "weights-missing"
    assert "timm_convnext_tiny.safetensors" in status("timm:convnext_tiny").message


def test_bad_timm_names_list_close_ones():
    with pytest.raises(EncoderError, match="timm has no model 'convnext_tinyy'.*convnext_tiny"):
        get_spec("timm:convnext_tinyy")
    with pytest.raises(EncoderError, match="no pretrained tag 'fb_in2k'.*fb_in1k"):
        get_spec("timm:convnext_tiny.fb_in2k")
    with pytest.raises(EncoderError, match="expected 'timm:NAME"):
        get_spec("timm:")


def test_inline_open_clip_reference():
    spec = get_spec("open_clip:ViT-B-32:laion2b_s34b_b79k")
    assert spec.backend == "open_clip" and spec.family == "clip" and spec.dim == 512
    assert spec.hub_repo == "laion/CLIP-ViT-B-32-laion2B-s34B-b79K"
    assert spec.params_m == pytest.approx(87.85, abs=0.01)
    assert spec.cam_layer == "transformer.resblocks.-1.ln_1"
    rn = get_spec("open_clip:RN50:openai")
    assert (rn.family, rn.cam_layer, rn.dim) == ("cnn", "layer4.-1", 1024)
    assert "QuickGELU" in rn.notes
    with pytest.raises(EncoderError, match="open_clip has no model 'ViT-B-322'.*ViT-B-32"):
        get_spec("open_clip:ViT-B-322:openai")
    with pytest.raises(EncoderError, match="no pretrained tag 'laion9b'.*laion2b_s34b_b79k"):
        get_spec("open_clip:ViT-B-32:laion9b")
    with pytest.raises(EncoderError, match="open_clip:MODEL:PRETRAINED"):
        get_spec("open_clip:ViT-B-32")


def test_inline_checkpoint_reference_with_auto_mapping(tmp_path):
    path = tmp_path / "my r18.pth"
    model = _resnet18_file(path)
    ref = f"ckpt:resnet18:{path}"
    spec = get_spec(ref)
    assert spec.checkpoint.file == str(path) and spec.checkpoint.mapping == "auto"
    assert status(ref).state == "ready"
    enc = build_encoder(ref, device="cpu")
    for key, value in model.state_dict().items():
        torch.testing.assert_close(enc.model.state_dict()[key], value)
    frames = np.random.default_rng(0).integers(0, 256, (2, 40, 40, 3), dtype=np.uint8)
    with torch.no_grad():
        expected = model.eval()(enc.preprocess(frames).contiguous()).numpy()
    np.testing.assert_allclose(enc.embed(frames), expected, rtol=1e-4, atol=1e-5)
    missing = get_spec(f"ckpt:resnet50:{tmp_path / 'absent.pth'}")
    assert status(missing).state == "weights-missing"
    with pytest.raises(EncoderError, match="absent.pth"):
        build_encoder(missing, device="cpu")
    with pytest.raises(EncoderError, match="unknown architecture 'resnet51'.*resnet50"):
        get_spec(f"ckpt:resnet51:{path}")


def test_auto_mapping_handles_other_prefixes_and_reports_mismatch(tmp_path):
    ok = tmp_path / "backbone.pth"
    _resnet18_file(ok, prefix="backbone.", container="")
    build_encoder(f"ckpt:resnet18:{ok}", device="cpu")
    wrong = tmp_path / "r50.pth"
    torch.save(build_architecture("resnet50").state_dict(), wrong)
    with pytest.raises(EncoderError, match="does not match the architecture"):
        build_encoder(f"ckpt:resnet18:{wrong}", device="cpu")


CONFIG = """
[[encoders]]
id = "convnext-t"
timm = "convnext_tiny.fb_in1k"
name = "ConvNeXt-T"
pretraining_data = "General (ImageNet)"
training_type = "Supervised"
int8 = true

[[encoders]]
id = "my-r18"
checkpoint = "ckpts/r18.pth"
arch = "resnet18"
name = "My ResNet18"
pretraining_data = "Manipulation"
pretraining_group = "manipulation"
mean = [0.5, 0.5, 0.5]
std = [0.25, 0.25, 0.25]

[[encoders]]
id = "laion-b32"
open_clip = "ViT-B-32:laion2b_s34b_b79k"
"""


def test_config_file_entries_join_the_registry(tmp_path):
    (tmp_path / "ckpts").mkdir()
    _resnet18_file(tmp_path / "ckpts" / "r18.pth")
    (tmp_path / "s2r_encoders.toml").write_text(CONFIG)
    ids = [s.id for s in list_encoders()]
    assert ids[-3:] == ["convnext-t", "my-r18", "laion-b32"] and len(ids) == 29
    mine = get_spec("my-r18")
    assert mine.name == "My ResNet18" and mine.pretraining_group == "manipulation"
    assert mine.std == (0.25, 0.25, 0.25) and mine.source.startswith("encoder config")
    assert mine.checkpoint.file == str((tmp_path / "ckpts" / "r18.pth").absolute())
    assert status("my-r18").state == "ready" and status("convnext-t").state == "weights-missing"
    assert get_spec("convnext-t").tag == "fb_in1k"
    # int8: declared for the timm entry, implied for a ResNet checkpoint, off for open_clip
    assert get_spec("convnext-t").int8 and mine.int8 and not get_spec("laion-b32").int8
    enc = build_encoder("my-r18", device="cpu")
    assert enc.embed(np.zeros((1, 32, 32, 3), np.uint8)).shape == (1, 512)
    assert get_spec("my-r18@random").name == "My ResNet18 (random init)"
    assert "convnext-t@random" in [s.id for s in list_encoders("*-t*", include_random=True)]


def test_json_config_via_environment(tmp_path, monkeypatch):
    path = tmp_path / "enc.json"
    path.write_text(json.dumps({"encoders": [{"id": "r34", "timm": "resnet34.a1_in1k"}]}))
    monkeypatch.setenv("S2R_ENCODERS", str(path))
    assert get_spec("r34").identifier == "resnet34" and get_spec("r34").dim == 512
    monkeypatch.setenv("S2R_ENCODERS", str(tmp_path / "missing.toml"))
    with pytest.raises(EncoderError, match="missing.toml does not exist.*S2R_ENCODERS"):
        list_encoders()


@pytest.mark.parametrize("entry, match", [
    ('id = "a"\ntimm = "resnet18"\nwidth = 3', r"unknown field\(s\) \['width'\]"),
    ('timm = "resnet18"', "missing 'id'"),
    ('id = "a"\ntimm = "resnet18"\nopen_clip = "RN50:openai"', "exactly one of"),
    ('id = "a"\ncheckpoint = "x.pth"', "needs 'arch'"),
    ('id = "a:b"\ntimm = "resnet18"', "may not contain ':'"),
    ('id = "a"\ntimm = "resnet18"\narch = "resnet18"', "only apply to checkpoint"),
    ('id = "a"\ntimm = "resnet18"\narchitecture = "RNN"', "architecture must be one of"),
    ('id = "a"\nopen_clip = "RN50"', "MODEL:PRETRAINED"),
])
def test_config_errors_name_the_file_entry_and_field(tmp_path, entry, match):
    path = tmp_path / "s2r_encoders.toml"
    path.write_text("[[encoders]]\n" + entry + "\n")
    with pytest.raises(EncoderError, match=match) as err:
        list_encoders()
    assert "s2r_encoders.toml" in str(err.value) or "'a'" in str(err.value)


def test_unparseable_config(tmp_path):
    (tmp_path / "s2r_encoders.toml").write_text("[[encoders]\nid=")
    with pytest.raises(EncoderError, match="s2r_encoders.toml: cannot parse"):
        get_spec("anything")
    (tmp_path / "s2r_encoders.toml").write_text('[models]\nx = 1\n')
    with pytest.raises(EncoderError, match=r"unknown top-level key\(s\) \['models'\]"):
        list_encoders()


def test_register_spec_factories_into_an_explicit_registry(tmp_path):
    registry = EncoderRegistry()
    spec = spec_from_timm("resnet18.a1_in1k", id="r18-a1", name="ResNet18 A1",
                          pretraining_data="General (ImageNet)")
    registry.register(spec)
    assert registry.get("r18-a1").name == "ResNet18 A1"
    assert spec.source == "user"
    clip = spec_from_open_clip("ViT-B-32", "laion2b_s34b_b79k", id="b32")
    assert clip.id == "b32" and clip.dim == 512
    ckpt = spec_from_checkpoint("resnet50-fc1024", tmp_path / "vip.pt", id="vip-copy",
                                mapping="vip")
    assert ckpt.dim == 1024 and ckpt.checkpoint.mapping == "vip"
    with pytest.raises(EncoderError, match="unknown checkpoint mapping 'vipp'"):
        spec_from_checkpoint("resnet50", tmp_path / "x.pt", mapping="vipp")
    with pytest.raises(EncoderError, match="unknown encoder 'r18-a1'"):
        get_spec("r18-a1")  # the default registry was not touched
