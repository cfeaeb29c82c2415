"""User encoders: inline references, config files, register_encoder, and their errors."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
import torch

from s2r.encoders import (EncoderRegistry, build_encoder, get_spec, list_encoders,
                          spec_from_checkpoint, spec_from_open_clip, spec_from_timm, status)
from s2r.cli import main
from s2r.encoders import factory
from s2r.encoders.builtins import BUILTIN_SPECS
from s2r.encoders.backends.checkpoint import build_architecture
from s2r.errors import EncoderError
from s2r.settings import current


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
    spec = get_spec("timm:convnext_tiny", settings=current())
    assert spec.id == "timm:convnext_tiny" and spec.backend == "timm"
    assert spec.identifier == "convnext_tiny" and spec.tag == "in12k_ft_in1k"
    assert spec.family == "cnn" and spec.architecture == "CNN" and spec.dim == 768
    assert spec.params_m == pytest.approx(27.82, abs=0.01)
    assert spec.cam_layer == "stages.3" and spec.table_number is None
    assert spec.hub_repo == "timm/convnext_tiny.in12k_ft_in1k"
    vit = get_spec("timm:vit_small_patch16_224.augreg_in21k_ft_in1k", settings=current())
    assert (vit.family, vit.dim, vit.cam_layer) == ("vit", 384, "blocks.-1.norm1")
    assert vit.mean == (0.5, 0.5, 0.5)
    enc = build_encoder("timm:vit_small_patch16_224.augreg_in21k_ft_in1k@random", device="cpu",
                        settings=current())
    assert enc.embed(np.zeros((1, 40, 50, 3), np.uint8)).shape == (1, 384)
    assert enc.spec.name.endswith("(random init)")
    assert status("timm:convnext_tiny", settings=current()).state == "weights-missing"
    found = status("timm:convnext_tiny", settings=current())
    assert "timm_convnext_tiny.safetensors" in found.message


def test_bad_timm_names_list_close_ones():
    with pytest.raises(EncoderError, match="timm has no model 'convnext_tinyy'.*convnext_tiny"):
        get_spec("timm:convnext_tinyy", settings=current())
    with pytest.raises(EncoderError, match="no pretrained tag 'fb_in2k'.*fb_in1k"):
        get_spec("timm:convnext_tiny.fb_in2k", settings=current())
    with pytest.raises(EncoderError, match="expected 'timm:NAME"):
        get_spec("timm:", settings=current())


def test_inline_open_clip_reference():
    spec = get_spec("open_clip:ViT-B-32:laion2b_s34b_b79k", settings=current())
    assert spec.backend == "open_clip" and spec.family == "clip" and spec.dim == 512
    assert spec.hub_repo == "laion/CLIP-ViT-B-32-laion2B-s34B-b79K"
    assert spec.params_m == pytest.approx(87.85, abs=0.01)
    assert spec.cam_layer == "transformer.resblocks.-1.ln_1"
    rn = get_spec("open_clip:RN50:openai", settings=current())
    assert (rn.family, rn.cam_layer, rn.dim) == ("cnn", "layer4.-1", 1024)
    assert "QuickGELU" in rn.notes
    with pytest.raises(EncoderError, match="open_clip has no model 'ViT-B-322'.*ViT-B-32"):
        get_spec("open_clip:ViT-B-322:openai", settings=current())
    with pytest.raises(EncoderError, match="no pretrained tag 'laion9b'.*laion2b_s34b_b79k"):
        get_spec("open_clip:ViT-B-32:laion9b", settings=current())
    with pytest.raises(EncoderError, match="open_clip:MODEL:PRETRAINED"):
        get_spec("open_clip:ViT-B-32", settings=current())


def test_inline_checkpoint_reference_with_auto_mapping(tmp_path):
    path = tmp_path / "my r18.pth"
    model = _resnet18_file(path)
    ref = f"ckpt:resnet18:{path}"
    spec = get_spec(ref, settings=current())
    assert spec.checkpoint.file == str(path) and spec.checkpoint.mapping == "auto"
    assert status(ref, settings=current()).state == "ready"
    enc = build_encoder(ref, device="cpu", settings=current())
    for key, value in model.state_dict().items():
        torch.testing.assert_close(enc.model.state_dict()[key], value)
    frames = np.random.default_rng(0).integers(0, 256, (2, 40, 40, 3), dtype=np.uint8)
    with torch.no_grad():
        expected = model.eval()(enc.preprocess(frames).contiguous()).numpy()
    np.testing.assert_allclose(enc.embed(frames), expected, rtol=1e-4, atol=1e-5)
    missing = get_spec(f"ckpt:resnet50:{tmp_path / 'absent.pth'}", settings=current())
    assert status(missing, settings=current()).state == "weights-missing"
    with pytest.raises(EncoderError, match="absent.pth"):
        build_encoder(missing, device="cpu", settings=current())
    with pytest.raises(EncoderError, match="unknown architecture 'resnet51'.*resnet50"):
        get_spec(f"ckpt:resnet51:{path}", settings=current())


def test_auto_mapping_handles_other_prefixes_and_reports_mismatch(tmp_path):
    ok = tmp_path / "backbone.pth"
    _resnet18_file(ok, prefix="backbone.", container="")
    build_encoder(f"ckpt:resnet18:{ok}", device="cpu", settings=current())
    wrong = tmp_path / "r50.pth"
    torch.save(build_architecture("resnet50").state_dict(), wrong)
    with pytest.raises(EncoderError, match="does not match the architecture"):
        build_encoder(f"ckpt:resnet18:{wrong}", device="cpu", settings=current())


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
    ids = [s.id for s in list_encoders(settings=current())]
    assert ids[-3:] == ["convnext-t", "my-r18", "laion-b32"]
    assert len(ids) == len(BUILTIN_SPECS) + 3  # the built-ins, then the config's entries
    mine = get_spec("my-r18", settings=current())
    assert mine.name == "My ResNet18" and mine.pretraining_group == "manipulation"
    assert mine.std == (0.25, 0.25, 0.25) and mine.source.startswith("encoder config")
    assert mine.checkpoint.file == str((tmp_path / "ckpts" / "r18.pth").absolute())
    settings = current()
    assert status("my-r18", settings=settings).state == "ready"
    assert status("convnext-t", settings=settings).state == "weights-missing"
    assert get_spec("convnext-t", settings=current()).tag == "fb_in1k"
    # int8: declared for the timm entry, implied for a ResNet checkpoint, off for open_clip
    assert get_spec("convnext-t", settings=settings).int8 and mine.int8
    assert not get_spec("laion-b32", settings=settings).int8
    enc = build_encoder("my-r18", device="cpu", settings=current())
    assert enc.embed(np.zeros((1, 32, 32, 3), np.uint8)).shape == (1, 512)
    assert get_spec("my-r18@random", settings=current()).name == "My ResNet18 (random init)"
    assert "convnext-t@random" in [s.id for s in list_encoders("*-t*", include_random=True,
                                                               settings=settings)]


def test_json_config_via_environment(tmp_path, monkeypatch):
    path = tmp_path / "enc.json"
    path.write_text(json.dumps({"encoders": [{"id": "r34", "timm": "resnet34.a1_in1k"}]}))
    monkeypatch.setenv("S2R_ENCODERS", str(path))
    r34 = get_spec("r34", settings=current())
    assert r34.identifier == "resnet34" and r34.dim == 512
    monkeypatch.setenv("S2R_ENCODERS", str(tmp_path / "missing.toml"))
    with pytest.raises(EncoderError, match="missing.toml does not exist.*S2R_ENCODERS"):
        list_encoders(settings=current())


@pytest.mark.parametrize("entry, match", [
    ('id = "a"\ntimm = "resnet18"\nwidth = 3', r"unknown field\(s\) \['width'\]"),
    ('timm = "resnet18"', "missing 'id'"),
    ('id = "a"\ntimm = "resnet18"\nopen_clip = "RN50:openai"', "exactly one of"),
    ('id = "a"\ncheckpoint = "x.pth"', "needs 'arch'"),
    ('id = "a:b"\ntimm = "resnet18"', "may not contain ':'"),
    ('id = "a"\ntimm = "resnet18"\narch = "resnet18"', "only apply to checkpoint"),
    ('id = "a"\ntimm = "resnet18"\narchitecture = "RNN"',
     "field 'architecture' must be one of 'CNN', 'Transformer'; got 'RNN'"),
    ('id = "a"\nopen_clip = "RN50"', "MODEL:PRETRAINED"),
])
def test_config_errors_name_the_file_entry_and_field(tmp_path, entry, match):
    path = tmp_path / "s2r_encoders.toml"
    path.write_text("[[encoders]]\n" + entry + "\n")
    with pytest.raises(EncoderError, match=match) as err:
        list_encoders(settings=current())
    assert "s2r_encoders.toml" in str(err.value) or "'a'" in str(err.value)


def test_unparseable_config(tmp_path):
    (tmp_path / "s2r_encoders.toml").write_text("[[encoders]\nid=")
    with pytest.raises(EncoderError, match="s2r_encoders.toml: cannot parse"):
        get_spec("anything", settings=current())
    (tmp_path / "s2r_encoders.toml").write_text('[models]\nx = 1\n')
    with pytest.raises(EncoderError, match=r"unknown top-level key\(s\) \['models'\]"):
        list_encoders(settings=current())


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
        get_spec("r18-a1", settings=current())  # the default registry was not touched


# ---------------------------------------------------------------------------------------------
# Every field checked when the file is read; ids unique and not built-in (issue 11)
# ---------------------------------------------------------------------------------------------

TIMM = 'timm = "resnet18"\n'
CKPT = 'checkpoint = "x.pth"\narch = "resnet18"\n'


@pytest.mark.parametrize("fields, message", [
    (TIMM + 'mean = "red"', "field 'mean' must be 3 numbers, e.g. [0.485, 0.456, 0.406]; "
                            "got 'red'"),
    (TIMM + "mean = [0.5, 0.5]", "field 'mean' must be 3 numbers"),
    (TIMM + 'mean = [0.5, "a", 0.5]', "field 'mean' must be 3 numbers"),
    (TIMM + "std = [0.2, 0.2, 0]", "field 'std' must be 3 numbers > 0"),
    (TIMM + "std = 0.5", "field 'std' must be 3 numbers > 0"),
    (TIMM + "input_size = -5", "field 'input_size' must be [height, width], two positive "
                               "integers, e.g. [224, 224]; got -5"),
    (TIMM + "input_size = [0, 224]", "field 'input_size' must be [height, width]"),
    (TIMM + "input_size = [224.5, 224]", "field 'input_size' must be [height, width]"),
    (TIMM + "input_size = [224, 224, 3]", "field 'input_size' must be [height, width]"),
    (TIMM + 'dim = "big"', "field 'dim' must be a positive integer"),
    (TIMM + "dim = 0", "field 'dim' must be a positive integer"),
    (TIMM + "dim = true", "field 'dim' must be a positive integer"),
    (TIMM + 'params_m = "x"', "field 'params_m' must be a number >= 0"),
    (TIMM + "params_m = -1.0", "field 'params_m' must be a number >= 0"),
    (TIMM + 'int8 = "yes"', "field 'int8' must be true or false; got 'yes'"),
    (TIMM + "name = 3", "field 'name' must be a non-empty string; got 3"),
    (TIMM + 'name = " "', "field 'name' must be a non-empty string"),
    (TIMM + "cam_layer = 5", "field 'cam_layer' must be a dotted layer path"),
    (TIMM + "training_type = 2", "field 'training_type' must be a string"),
    (TIMM + "pretraining_data = false", "field 'pretraining_data' must be a string"),
    (TIMM + 'license = ["MIT"]', "field 'license' must be a string"),
    (TIMM + "notes = 1", "field 'notes' must be a string"),
    (TIMM + 'family = "rnn"', "field 'family' must be one of 'cnn', 'vit', 'swin', 'clip'; "
                              "got 'rnn'"),
    (TIMM + 'family = "pixels"', "field 'family' must be one of 'cnn', 'vit', 'swin', 'clip'"),
    (TIMM + 'architecture = "Pixels"', "field 'architecture' must be one of 'CNN', "
                                       "'Transformer'"),
    (TIMM + 'pretraining_group = "robots"', "field 'pretraining_group' must be one of "
                                            "'general', 'manipulation', 'none'"),
    ("timm = 5", "field 'timm' must be a timm model name"),
    ('open_clip = "RN50:"', "field 'open_clip' must be \"MODEL:PRETRAINED\""),
    ("checkpoint = 5\narch = \"resnet18\"", "field 'checkpoint' must be a file path"),
    ('checkpoint = "x.pth"\narch = 18', "field 'arch' must be an architecture name"),
    (CKPT + 'mapping = "foo"', "field 'mapping' must be one of 'r3m', 'vip', 'mae', 'hrp', "
                               "'torchvision', 'auto'; got 'foo'"),
    (CKPT + 'key_paths = "model"', "field 'key_paths' must be a list of strings"),
    (TIMM + "mena = [0.5, 0.5, 0.5]", r"unknown field(s) ['mena']; allowed: "),
])
def test_config_fields_are_checked_when_the_file_is_read(tmp_path, monkeypatch, fields,
                                                         message):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was built before the config was checked")

    monkeypatch.setattr(factory, "meta_build", no_model)
    (tmp_path / "s2r_encoders.toml").write_text(f'[[encoders]]\nid = "a"\n{fields}\n')
    with pytest.raises(EncoderError) as err:
        list_encoders(settings=current())
    text = str(err.value)
    assert text.startswith("encoder config s2r_encoders.toml entry 1 (id 'a'): "), text
    assert message in text and "\n" not in text


def test_an_id_that_is_not_a_string_is_named(tmp_path):
    (tmp_path / "s2r_encoders.toml").write_text('[[encoders]]\nid = 5\ntimm = "resnet18"\n')
    with pytest.raises(EncoderError, match="entry 1: field 'id' must be a non-empty string"):
        list_encoders(settings=current())


def test_dim_and_input_size_must_fit_the_model(tmp_path):
    path = tmp_path / "s2r_encoders.toml"
    path.write_text(f'[[encoders]]\nid = "a"\n{TIMM}dim = 100\n')
    with pytest.raises(EncoderError, match=r"\(id 'a'\): field 'dim' must match the model's "
                                           r"output \(512 numbers per frame"):
        get_spec("a", settings=current())
    path.write_text(f'[[encoders]]\nid = "a"\n{TIMM}dim = 512\n')
    assert get_spec("a", settings=current()).dim == 512
    path.write_text('[[encoders]]\nid = "v"\ntimm = "vit_small_patch16_224.augreg_in21k_ft_in1k"'
                    "\ninput_size = [64, 64]\n")
    with pytest.raises(EncoderError, match=r"\(id 'v'\): field 'input_size' must be a size the "
                                           r"model accepts \(it runs at \[224, 224\]\); got "
                                           r"\[64, 64\]"):
        get_spec("v", settings=current())


def test_a_builtin_id_cannot_be_redefined(tmp_path):
    (tmp_path / "s2r_encoders.toml").write_text(
        '[[encoders]]\nid = "mine"\ntimm = "resnet18"\n\n[[encoders]]\nid = "pixels"\n'
        'timm = "resnet18"\n')
    message = (r"s2r_encoders.toml entry 2 \(id 'pixels'\): id 'pixels' is a built-in encoder; "
               r"built-in ids cannot be redefined: choose another id")
    with pytest.raises(EncoderError, match=message):
        list_encoders(settings=current())
    with pytest.raises(EncoderError, match=message):  # not silently the built-in one
        get_spec("pixels", settings=current())


def test_a_registered_id_cannot_be_redefined_by_the_config(tmp_path):
    path = tmp_path / "enc.toml"
    path.write_text('[[encoders]]\nid = "r18-copy"\ntimm = "resnet18"\n')
    registry = EncoderRegistry(config_path=path)
    registry.register(dataclasses.replace(get_spec("resnet18"), id="r18-copy", source="user"))
    with pytest.raises(EncoderError, match=r"enc.toml entry 1 \(id 'r18-copy'\): id 'r18-copy' "
                                           r"is already registered with register_encoder"):
        registry.list()


def test_two_entries_with_one_id_name_both_entries(tmp_path):
    (tmp_path / "s2r_encoders.toml").write_text(
        '[[encoders]]\nid = "a"\ntimm = "resnet18"\n\n[[encoders]]\nid = "b"\n'
        'timm = "resnet34"\n\n[[encoders]]\nid = "a"\ntimm = "resnet50"\n')
    with pytest.raises(EncoderError, match=r"s2r_encoders.toml entry 3 \(id 'a'\): id 'a' is "
                                           r"already used by entry 1 of the same file; ids "
                                           r"must be unique"):
        get_spec("a", settings=current())


def test_toml_and_json_configs_side_by_side_are_an_error(tmp_path, monkeypatch):
    (tmp_path / "s2r_encoders.toml").write_text('[[encoders]]\nid = "a"\ntimm = "resnet18"\n')
    (tmp_path / "s2r_encoders.json").write_text('{"encoders": []}')
    with pytest.raises(EncoderError, match="s2r_encoders.toml and s2r_encoders.json are both "
                                           "here; s2r reads one"):
        list_encoders(settings=current())
    monkeypatch.setenv("S2R_ENCODERS", str(tmp_path / "s2r_encoders.json"))
    assert [s.id for s in list_encoders("a", settings=current())] == []


def test_a_missing_checkpoint_file_says_so_and_offers_no_download(tmp_path, capsys):
    (tmp_path / "s2r_encoders.toml").write_text(f'[[encoders]]\nid = "mine"\n{CKPT}')
    missing = str(tmp_path / "x.pth")
    for ref, where in (("mine", " (from encoder config s2r_encoders.toml entry 1 (id 'mine'))"),
                       (f"ckpt:resnet18:{missing}", "")):
        st = status(ref, settings=current())
        expected = f"encoder {ref!r}: checkpoint file {missing} does not exist{where}; fix"
        assert st.state == "weights-missing" and st.message.startswith(expected), st.message
        assert st.url is None and "file://" not in st.message and "download" not in st.message
        with pytest.raises(EncoderError) as err:
            build_encoder(ref, device="cpu", settings=current())
        assert str(err.value).startswith(expected) and "download" not in str(err.value)
    assert main(["encoders", "mine"]) == 0
    out = capsys.readouterr().out
    assert f"checkpoint file {missing} does not exist" in out and "file://" not in out
    assert "need weights" not in out


BROKEN = '[[encoders]]\nid = "a"\ntimm = "resnet18"\nmean = "red"\n'
DEMO = "demo:episodes=1,steps=3,height=64,width=64"


@pytest.mark.parametrize("config, argv, message", [
    (BROKEN, ["encoders"], "field 'mean' must be 3 numbers"),
    (BROKEN, ["encoders", "--json"], "field 'mean' must be 3 numbers"),
    (BROKEN, ["embed", DEMO, "--encoder", "a"], "field 'mean' must be 3 numbers"),
    (BROKEN, ["embed", DEMO, "--encoder", "pixels"], "field 'mean' must be 3 numbers"),
    ('[[encoders]]\nid = "pixels"\ntimm = "resnet18"\n', ["embed", DEMO, "--encoder", "pixels"],
     "built-in ids cannot be redefined"),
])
def test_cli_gives_one_error_line_for_a_broken_config(tmp_path, capsys, config, argv, message):
    (tmp_path / "s2r_encoders.toml").write_text(config)
    out = tmp_path / "z.npz"
    if argv[0] == "embed":
        argv = [*argv, "--out", str(out), "--no-cache"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and captured.err.rstrip().endswith(errors[0])
    assert errors[0].startswith("error: encoder config s2r_encoders.toml entry 1 (id ")
    assert message in errors[0] and "Traceback" not in captured.err
    assert not out.exists() and captured.out == ""


@pytest.mark.parametrize("encoder_id, message", [
    ("a,b", "may not contain ','"),
    ("a\nb", "whitespace or control characters"),
    ("a b", "whitespace or control characters"),
    ("r18*", "wildcards"),
    ("r1?", "wildcards"),
    ("[r]", "wildcards"),
    ("x" * 101, "101 characters long; ids are at most 100"),
    ("a:b", "may not contain ':'"),
    ("a@random", "may not end in @random"),
])
def test_odd_ids_are_refused_with_a_reason(encoder_id, message):
    """Ids that would break ``--encoders`` lists and patterns, or lines of output."""
    from s2r.encoders.config import check_entry

    with pytest.raises(EncoderError, match=re.escape(message)) as err:
        check_entry({"id": encoder_id, "timm": "resnet18"}, where="entry 1")
    assert "\n" not in str(err.value)


def test_an_id_that_is_a_builtin_id_in_other_case_is_refused(tmp_path):
    from s2r.encoders.config import check_encoder_config

    path = tmp_path / "s2r_encoders.toml"
    path.write_text('[[encoders]]\nid = "ResNet18"\ntimm = "resnet18"\n')
    with pytest.raises(EncoderError, match="'ResNet18' differs only in case from 'resnet18', "
                                           "which is a built-in encoder"):
        check_encoder_config(path, settings=current())
    path.write_text('[[encoders]]\nid = "resnet18-mine"\ntimm = "resnet18"\n')
    assert [c[0] for c in check_encoder_config(path, settings=current())] == ["resnet18-mine"]


def test_a_config_over_its_bound_or_not_a_file_is_one_line(tmp_path):
    import os

    from s2r.encoders.config import CONFIG_MAX_BYTES, check_encoder_config

    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(CONFIG_MAX_BYTES + 1)
    with pytest.raises(EncoderError, match="over the limit of 4,194,304 bytes"):
        check_encoder_config(big, settings=current())
    os.mkfifo(tmp_path / "fifo.toml")
    with pytest.raises(EncoderError, match="is a FIFO"):
        check_encoder_config(tmp_path / "fifo.toml", settings=current())
    nested = tmp_path / "deep.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(EncoderError, match="cannot parse"):
        check_encoder_config(nested, settings=current())
