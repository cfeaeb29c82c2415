"""Every row of Table I (and the torchvision ResNets) from a file in its upstream's exact layout.

For each encoder, a weights file is written the way its upstream saves or publishes it (key
names, nesting, the extras it carries), with random values, into the weights folder; it is
then loaded through s2r's own path (``build_encoder``: safe reader, key mapping, strict load),
every model key must be filled with the file's value (after upstream's own renaming), and
``weights verify``'s :func:`~s2r.encoders.weights.file_format` names the layout. For R3M, VIP,
MVP, VC-1, HRP-ViT and HRP-ResNet18, an independent functional re-implementation of upstream's
forward (written from reading upstream, below) must give s2r's embedding on the same weights.

Upstream files followed (each layout below names its own):

- timm hub files (``timm/<arch>.<tag>``, ``model.safetensors``): the model's ``state_dict()``
  with its classifier (timm/models/_hub.py ``save_for_hf``); torchvision's own files (the
  ``.tv`` ResNets, VGG): ``torchvision.models.<arch>().state_dict()``.
- open_clip hub files (``open_clip_pytorch_model.bin``): the whole CLIP model, image tower
  under ``visual.*`` (open_clip/model.py ``CLIP``), fp16 as OpenAI released it.
- R3M: facebookresearch/r3m, r3m/train_representation.py ``save_snapshot`` (``{"r3m":
  DataParallel(R3M).state_dict(), "global_step": int}``), r3m/models/models_r3m.py (convnet,
  lang_enc = DistilBERT, lang_rew.pred).
- VIP: facebookresearch/vip, vip/train_vip.py ``save_snapshot`` (``{"vip": ..., "global_step"}``),
  vip/models/model_vip.py (``convnet.fc = Linear(2048, 1024)``).
- MVP: MAE's util/misc.py ``save_model`` (``model``, ``optimizer``, ``epoch``, ``scaler``,
  ``args``), read by ir413/mvp mvp/backbones/vit.py ``load_checkpoint`` (``["model"]``).
- VC-1: facebookresearch/eai-vc vc_models/models/vit/vit.py ``load_mae_encoder``
  (``["model"]``, drops ``decoder*`` and ``mask_token``).
- HRP-ViT: data4robotics (branch hrp_release) data4robotics/models/vit.py ``load_vit``: a bare
  state dict (``IN_hrp.pth``); HRP-ResNet18: data4robotics/models/base.py ``BaseModel``
  (``{"features": {"_model.*"}}``, GroupNorm(16) ResNet18 of models/resnet.py).
- MCR: GqJiang/robots-pretrain-robots ``mcr_resnet50.pth``: a torchvision ResNet50
  state dict without ``fc``.
"""

from __future__ import annotations

import argparse
import gc

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from s2r.encoders import build_encoder, get_spec
from s2r.encoders.weights import file_format
from tests.helpers.state_dicts import synthetic
from s2r.settings import current

IN_MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
IN_STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


@pytest.fixture(autouse=True)
def _weights(tmp_path, monkeypatch, no_network):
    folder = tmp_path / "weights"
    folder.mkdir()
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(folder))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    return folder


def _timm(arch, **kw):
    import timm

    return lambda: timm.create_model(arch, pretrained=False, **kw)


def _tv(arch, **kw):
    import torchvision

    return lambda: getattr(torchvision.models, arch)(weights=None, **kw)


# ---------------------------------------------------------------------------------------------
# Layouts: (what upstream's file holds, {model key: expected value}, the format s2r names)
# ---------------------------------------------------------------------------------------------

def timm_hub(arch, head, *, seed=0, **kw):
    """timm's hub file of ``arch``: its state dict, classifier ``head`` included."""
    sd = synthetic(_timm(arch, **kw), seed=seed)
    return sd, {k: v for k, v in sd.items() if not k.startswith(head + ".")}, "timm"


def torchvision_file(arch, *, seed=0):
    """torchvision's own weights file: ``torchvision.models.<arch>().state_dict()``."""
    sd = synthetic(_tv(arch), seed=seed)
    if arch.startswith("vgg"):  # what timm's vgg _filter_fn does, written out
        expected = {k: v for k, v in sd.items() if k.startswith("features.")}
        expected["pre_logits.fc1.weight"] = sd["classifier.0.weight"].reshape(4096, 512, 7, 7)
        expected["pre_logits.fc1.bias"] = sd["classifier.0.bias"]
        expected["pre_logits.fc2.weight"] = sd["classifier.3.weight"].reshape(4096, 4096, 1, 1)
        expected["pre_logits.fc2.bias"] = sd["classifier.3.bias"]
        return sd, expected, "torchvision"
    return sd, {k: v for k, v in sd.items() if not k.startswith("fc.")}, "timm"


def dinov2_hub(*, seed=0):
    """timm/vit_base_patch14_dinov2.lvd142m: built at 518 (37 x 37 patches); s2r runs it at
    224, with the position embedding resized as DINOv2's ``interpolate_pos_encoding``
    (facebookresearch/dinov2, dinov2/models/vision_transformer.py) does at run time."""
    sd, expected, kind = timm_hub("vit_base_patch14_dinov2", "head", seed=seed)
    pos = sd["pos_embed"]
    assert pos.shape == (1, 1 + 37 * 37, 768)
    grid = pos[:, 1:].reshape(1, 37, 37, 768).permute(0, 3, 1, 2)
    w0 = h0 = 224 // 14
    resized = F.interpolate(grid, mode="bicubic", antialias=False,
                            scale_factor=((w0 + 0.1) / 37, (h0 + 0.1) / 37))
    expected["pos_embed"] = torch.cat(
        [pos[:, :1], resized.permute(0, 2, 3, 1).reshape(1, w0 * h0, 768)], dim=1)
    return sd, expected, kind


def open_clip_hub(encoder_id, *, seed=0):
    """The whole CLIP model (image tower ``visual.*``, text tower at the top level,
    ``logit_scale``), fp16 like OpenAI's release."""
    import open_clip
    from open_clip.model import _build_text_tower

    from s2r.encoders.backends.open_clip import open_clip_visual

    spec = get_spec(encoder_id)
    cfg = open_clip.get_model_config(spec.identifier)
    visual = synthetic(lambda: open_clip_visual(spec), seed=seed)
    text = synthetic(lambda: _build_text_tower(cfg["embed_dim"], cfg["text_cfg"],
                                               quick_gelu=True), seed=seed + 1)
    raw = {**{f"visual.{k}": v.half() for k, v in visual.items()},
           **{k: v.half() for k, v in text.items()}, "logit_scale": torch.tensor(4.6052)}
    return (raw, {k: v.half().float() for k, v in visual.items()},
            "open_clip (whole CLIP model; image tower 'visual.*')")


def _distilbert_and_reward_head():
    """A few of R3M's language-side keys (DistilBERT lang_enc, lang_rew.pred): dropped by
    upstream's ``remove_language_head``; small shapes (only their names matter)."""
    names = ["lang_enc.model.embeddings.word_embeddings.weight",
             "lang_enc.model.embeddings.position_embeddings.weight",
             "lang_enc.model.transformer.layer.0.attention.q_lin.weight",
             "lang_enc.model.transformer.layer.5.output_layer_norm.bias",
             "lang_rew.pred.0.weight", "lang_rew.pred.0.bias", "lang_rew.pred.4.weight"]
    return {f"module.{n}": torch.randn(3, 2) for n in names}


def r3m_release(depth, *, seed=0):
    convnet = synthetic(lambda: _tv_trunk(f"resnet{depth}"), seed=seed)
    state = {f"module.convnet.{k}": v for k, v in convnet.items()}
    state.update(_distilbert_and_reward_head())
    return {"r3m": state, "global_step": 1_000_000}, convnet, \
        "r3m release layout, state dict at 'r3m'"


def vip_release(*, seed=0):
    convnet = synthetic(lambda: _resnet50_fc1024(), seed=seed)
    return {"vip": {f"module.convnet.{k}": v for k, v in convnet.items()},
            "global_step": 2_000_000}, convnet, "vip release layout, state dict at 'vip'"


def _mae_decoder():
    """MAE's decoder and mask token (models_mae.py ``MaskedAutoencoderViT``): dropped by every
    MAE-release loader; real names, small shapes."""
    out = {"mask_token": torch.randn(1, 1, 8), "decoder_pos_embed": torch.randn(1, 197, 8),
           "decoder_embed.weight": torch.randn(8, 768), "decoder_embed.bias": torch.randn(8),
           "decoder_norm.weight": torch.randn(8), "decoder_norm.bias": torch.randn(8),
           "decoder_pred.weight": torch.randn(768, 8), "decoder_pred.bias": torch.randn(768)}
    for i in range(8):
        for part in ("norm1.weight", "attn.qkv.weight", "attn.proj.weight", "mlp.fc1.weight",
                     "mlp.fc2.bias", "norm2.bias"):
            out[f"decoder_blocks.{i}.{part}"] = torch.randn(4, 2)
    return out


def mae_release(*, seed=0):
    """MAE's ``save_model``: encoder + decoder under ``model``, and the training state."""
    encoder = synthetic(_timm("vit_base_patch16_224", num_classes=0), seed=seed)
    raw = {"model": {**encoder, **_mae_decoder()},
           "optimizer": {"state": {}, "param_groups": [{"lr": 1.5e-4, "params": [0, 1]}]},
           "epoch": 799, "scaler": {"scale": 65536.0, "growth_tracker": 0},
           "args": argparse.Namespace(model="mae_vit_base_patch16", mask_ratio=0.75,
                                      norm_pix_loss=True, input_size=224)}
    return raw, encoder, "mae release layout, state dict at 'model'"


def hrp_vit_release(*, seed=0):
    """HRP's ``IN_hrp.pth``: the bare state dict (``load_vit`` falls back to the top level)."""
    encoder = synthetic(_timm("vit_base_patch16_224", num_classes=0), seed=seed)
    return {**encoder, **_mae_decoder()}, encoder, \
        "mae release layout, state dict at the top level"


def hrp_resnet18_release(*, seed=0):
    trunk = synthetic(lambda: _tv_trunk("resnet18", gn=True), seed=seed)
    return {"features": {f"_model.{k}": v for k, v in trunk.items()}}, trunk, \
        "hrp release layout, state dict at 'features'"


def mcr_release(*, seed=0):
    trunk = synthetic(lambda: _tv_trunk("resnet50"), seed=seed)
    return trunk, trunk, "torchvision release layout, state dict at the top level"


def _tv_trunk(arch, gn=False):
    import torch.nn as nn

    model = _tv(arch, **({"norm_layer": lambda c: nn.GroupNorm(16, c)} if gn else {}))()
    model.fc = nn.Identity()
    return model


def _resnet50_fc1024():
    import torch.nn as nn

    model = _tv("resnet50")()
    model.fc = nn.Linear(2048, 1024)
    return model


#: id -> (layout builder, file name s2r reads, cost): "slow" for files over ~50M parameters.
ROWS = {
    "clip-base-16": (lambda: open_clip_hub("clip-base-16"), "clip-base-16.bin", "slow"),
    "clip-base-32": (lambda: open_clip_hub("clip-base-32"), "clip-base-32.bin", "slow"),
    "clip-large-14": (lambda: open_clip_hub("clip-large-14"), "clip-large-14.bin", "slow"),
    "dinov2-b": (dinov2_hub, "dinov2-b.safetensors", "slow"),
    "efficientnet-b0": (lambda: timm_hub("efficientnet_b0", "classifier"),
                        "efficientnet-b0.safetensors", ""),
    "hrp-resnet18": (hrp_resnet18_release, "hrp_resnet18.pth", ""),
    "hrp-vit": (hrp_vit_release, "hrp_vit.pth", "slow"),
    "mcr": (mcr_release, "mcr_resnet50.pth", ""),
    "mobilenetv3": (lambda: timm_hub("mobilenetv3_large_100", "classifier"),
                    "mobilenetv3.safetensors", ""),
    "mvp": (mae_release, "mae_pretrain_egosoup_vit_base.pth", "slow"),
    "r3m-resnet18": (lambda: r3m_release(18), "r3m_resnet18.pt", ""),
    "r3m-resnet34": (lambda: r3m_release(34), "r3m_resnet34.pt", ""),
    "r3m-resnet50": (lambda: r3m_release(50), "r3m_resnet50.pt", ""),
    **{f"resnet{d}": (lambda d=d: timm_hub(f"resnet{d}", "fc"), f"resnet{d}.safetensors", "")
       for d in (18, 34, 50, 101)},
    **{f"resnet{d}.tv": (lambda d=d: torchvision_file(f"resnet{d}"), f"resnet{d}.tv.pth", "")
       for d in (18, 34, 50, 101)},
    "swin": (lambda: timm_hub("swin_base_patch4_window7_224", "head"), "swin.safetensors",
             "slow"),
    "vc1-b": (mae_release, "vc1_vitb.pth", "slow"),
    "vgg16": (lambda: timm_hub("vgg16", "head"), "vgg16.safetensors", "slow"),
    "vgg19": (lambda: timm_hub("vgg19", "head"), "vgg19.safetensors", "slow"),
    "vip": (vip_release, "vip_resnet50.pt", ""),
    "vit": (lambda: timm_hub("vit_base_patch16_224", "head"), "vit.safetensors", "slow"),
}
#: The same timm backbones from torchvision-format files placed by hand.
TORCHVISION_FILES = {"vgg16": "vgg16.pth", "vgg19": "vgg19.pth", "resnet50": "resnet50.pth"}


def _save(raw, path):
    if path.suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(raw, str(path))
    else:
        torch.save(raw, path)


def _check_loaded(enc, expected):
    own = enc.model.state_dict()
    missing = sorted(set(own) - set(expected))
    extra = sorted(set(expected) - set(own))
    assert not missing and not extra, (missing[:5], extra[:5])
    for key, value in expected.items():
        torch.testing.assert_close(own[key], value.to(own[key].dtype), msg=key)


def test_every_row_has_a_layout():
    table = {s.id for s in map(get_spec, ROWS) if s.table_number is not None}
    assert len(table) == 23 and len(ROWS) == 27


@pytest.mark.parametrize("encoder_id", [
    pytest.param(i, marks=pytest.mark.slow) if cost == "slow" else i
    for i, (_, _, cost) in ROWS.items()])
def test_upstream_layout_loads_strictly(encoder_id, _weights):
    build, name, _ = ROWS[encoder_id]
    raw, expected, kind = build()
    path = _weights / name
    _save(raw, path)
    del raw
    assert get_spec(encoder_id).weights_file.rsplit(".", 1)[0] == name.rsplit(".", 1)[0]
    assert file_format(encoder_id, settings=current()) == kind
    enc = build_encoder(encoder_id, device="cpu", settings=current())
    assert enc.weights_path == str(path)
    _check_loaded(enc, expected)
    if encoder_id in FORWARDS:
        frames = np.random.default_rng(0).integers(0, 256, (2, 224, 224, 3), dtype=np.uint8)
        ours = enc.embed(frames)
        theirs = FORWARDS[encoder_id](expected, frames).numpy()
        scale = float(np.abs(theirs).max())
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5 * max(scale, 1.0))
    del enc, expected
    gc.collect()


@pytest.mark.parametrize("arch", [pytest.param("vgg16", marks=pytest.mark.slow),
                                  pytest.param("vgg19", marks=pytest.mark.slow), "resnet50"])
def test_torchvision_files_placed_by_hand_load_into_the_timm_backbones(arch, _weights, capsys):
    """VGG's torchvision keys (``classifier.0/3/6``) are converted by timm's one-argument
    ``_filter_fn`` (called as timm's _builder.py does); ResNet keys are the same in both.
    ``weights verify`` names the format it found."""
    from s2r.cli import main

    raw, expected, kind = torchvision_file(arch, seed=5)
    path = _weights / TORCHVISION_FILES[arch]
    _save(raw, path)
    assert file_format(arch, settings=current()) == kind
    enc = build_encoder(arch, device="cpu", settings=current())
    _check_loaded(enc, expected)
    capsys.readouterr()
    assert main(["weights", "verify"]) == 0
    assert f"{arch}: {path} loads ({kind} format)" in capsys.readouterr().out


def test_weights_verify_names_a_file_that_does_not_load(_weights, capsys):
    from s2r.cli import main

    raw, _, _ = torchvision_file("resnet18", seed=6)
    _save(raw, _weights / "resnet50.pth")  # a ResNet18 file under ResNet50's name
    assert main(["weights", "verify"]) == 2
    err = capsys.readouterr().err
    assert "resnet50.pth" in err and "does not match the architecture" in err


# ---------------------------------------------------------------------------------------------
# Upstream's forwards, re-implemented from reading upstream (functional, no torchvision/timm)
# ---------------------------------------------------------------------------------------------

def _imagenet(frames):
    """R3M/VIP: ``obs.float() / 255`` then ``Normalize(IN)`` (models_r3m.py, model_vip.py
    ``forward`` at 224 x 224: no resize); VC-1/HRP/MVP transforms: ToTensor + Normalize(IN)."""
    x = torch.from_numpy(frames).permute(0, 3, 1, 2).float() / 255.0
    return (x - IN_MEAN) / IN_STD


def ref_resnet(sd, frames, *, depth, group_norm=False):
    """torchvision's ResNet (v1.5: the stride on the 3x3 conv of a bottleneck), as R3M's and
    VIP's ``self.convnet`` and data4robotics' ``ResNet`` (GroupNorm(16) for HRP) run it;
    ``fc`` applied when present (VIP's Linear(2048, 1024)), else Identity."""
    def norm(h, name):
        if group_norm:
            return F.group_norm(h, 16, sd[name + ".weight"], sd[name + ".bias"], 1e-5)
        return F.batch_norm(h, sd[name + ".running_mean"], sd[name + ".running_var"],
                            sd[name + ".weight"], sd[name + ".bias"], False, 0.0, 1e-5)

    h = F.relu(norm(F.conv2d(_imagenet(frames), sd["conv1.weight"], stride=2, padding=3),
                    "bn1"))
    h = F.max_pool2d(h, 3, 2, 1)
    blocks = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3)}[depth]
    for layer, n in enumerate(blocks, 1):
        for b in range(n):
            p = f"layer{layer}.{b}."
            stride = 2 if b == 0 and layer > 1 else 1
            if depth >= 50:
                o = F.relu(norm(F.conv2d(h, sd[p + "conv1.weight"]), p + "bn1"))
                o = F.relu(norm(F.conv2d(o, sd[p + "conv2.weight"], stride=stride, padding=1),
                                p + "bn2"))
                o = norm(F.conv2d(o, sd[p + "conv3.weight"]), p + "bn3")
            else:
                o = F.relu(norm(F.conv2d(h, sd[p + "conv1.weight"], stride=stride, padding=1),
                                p + "bn1"))
                o = norm(F.conv2d(o, sd[p + "conv2.weight"], padding=1), p + "bn2")
            shortcut = h
            if p + "downsample.0.weight" in sd:
                shortcut = norm(F.conv2d(h, sd[p + "downsample.0.weight"], stride=stride),
                                p + "downsample.1")
            h = F.relu(o + shortcut)
    h = h.mean(dim=(2, 3))
    return F.linear(h, sd["fc.weight"], sd["fc.bias"]) if "fc.weight" in sd else h


def ref_vit_b16(sd, frames, *, mvp):
    """ViT-B/16 with a CLS token (12 blocks, 12 heads, LayerNorm eps 1e-6, exact GELU).

    ``mvp=True``: ir413/mvp mvp/backbones/vit.py ``extract_feat`` + ``forward_norm``: CLS
    concatenated, then ``pos_embed`` added, blocks, CLS taken, then ``norm``.
    ``mvp=False``: eai-vc vc_models/models/vit/vit.py and data4robotics models/vit.py
    ``forward_features``: ``pos_embed[:, 1:]`` added to the patches, ``cls_token +
    pos_embed[:, :1]`` prepended, blocks, ``norm``, CLS (``handle_outcome``, use_cls_token).
    """
    x = _imagenet(frames)
    b = x.shape[0]
    patches = F.conv2d(x, sd["patch_embed.proj.weight"], sd["patch_embed.proj.bias"],
                       stride=16).flatten(2).transpose(1, 2)
    pos, cls = sd["pos_embed"], sd["cls_token"]
    if mvp:
        h = torch.cat([cls.expand(b, -1, -1), patches], dim=1) + pos
    else:
        h = torch.cat([(cls + pos[:, :1]).expand(b, -1, -1), patches + pos[:, 1:]], dim=1)
    n, d, heads = h.shape[1], 768, 12

    def ln(t, name):
        return F.layer_norm(t, (d,), sd[name + ".weight"], sd[name + ".bias"], 1e-6)

    for i in range(12):
        p = f"blocks.{i}."
        y = ln(h, p + "norm1")
        qkv = F.linear(y, sd[p + "attn.qkv.weight"], sd[p + "attn.qkv.bias"])
        q, k, v = qkv.reshape(b, n, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        att = ((q @ k.transpose(-2, -1)) * (d // heads) ** -0.5).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, n, d)
        h = h + F.linear(y, sd[p + "attn.proj.weight"], sd[p + "attn.proj.bias"])
        y = F.gelu(F.linear(ln(h, p + "norm2"), sd[p + "mlp.fc1.weight"],
                            sd[p + "mlp.fc1.bias"]))
        h = h + F.linear(y, sd[p + "mlp.fc2.weight"], sd[p + "mlp.fc2.bias"])
    return ln(h[:, 0], "norm") if mvp else ln(h, "norm")[:, 0]


FORWARDS = {
    "r3m-resnet18": lambda sd, f: ref_resnet(sd, f, depth=18),
    "r3m-resnet34": lambda sd, f: ref_resnet(sd, f, depth=34),
    "r3m-resnet50": lambda sd, f: ref_resnet(sd, f, depth=50),
    "vip": lambda sd, f: ref_resnet(sd, f, depth=50),
    "hrp-resnet18": lambda sd, f: ref_resnet(sd, f, depth=18, group_norm=True),
    "mvp": lambda sd, f: ref_vit_b16(sd, f, mvp=True),
    "vc1-b": lambda sd, f: ref_vit_b16(sd, f, mvp=False),
    "hrp-vit": lambda sd, f: ref_vit_b16(sd, f, mvp=False),
}


def test_dinov2_position_embedding_is_resized_as_dinov2_not_as_timm():
    """s2r's load-time resize equals DINOv2's run-time ``interpolate_pos_encoding`` written
    out above (:func:`dinov2_hub`) and differs from timm's antialiased resample, on a smooth
    37 x 37 field (what a trained position embedding looks like)."""
    from timm.layers import resample_abs_pos_embed

    from s2r.encoders.backends.timm import dinov2_pos_embed

    gen = torch.Generator().manual_seed(0)
    yy, xx = torch.meshgrid(torch.linspace(0, 1, 37), torch.linspace(0, 1, 37), indexing="ij")
    freq = torch.rand(16, 2, generator=gen) * 3
    field = torch.sin(2 * torch.pi * (freq[:, :1, None] * yy + freq[:, 1:, None] * xx))
    pos = torch.cat([torch.randn(1, 1, 16, generator=gen),
                     field.permute(1, 2, 0).reshape(1, 37 * 37, 16)], dim=1)
    ours = dinov2_pos_embed(pos, (16, 16))
    grid = pos[:, 1:].reshape(1, 37, 37, 16).permute(0, 3, 1, 2)
    upstream = F.interpolate(grid, mode="bicubic", antialias=False,
                             scale_factor=(16.1 / 37, 16.1 / 37))
    torch.testing.assert_close(ours[:, 1:], upstream.permute(0, 2, 3, 1).reshape(1, 256, 16))
    torch.testing.assert_close(ours[:, :1], pos[:, :1])
    timm_way = resample_abs_pos_embed(pos, (16, 16), num_prefix_tokens=1)
    rel = float((timm_way[:, 1:] - ours[:, 1:]).norm() / ours[:, 1:].norm())
    assert rel > 0.02, rel


def test_a_torchvision_file_of_a_timm_trained_backbone_is_refused_with_its_keys(_weights):
    """efficientnet-b0 is timm's own ``ra_in1k`` weights: torchvision's efficientnet_b0 is
    another model (other keys); it is refused, naming the keys, not loaded by guesswork."""
    from s2r.errors import EncoderError

    raw = synthetic(_tv("efficientnet_b0"), seed=7)
    _save(raw, _weights / "efficientnet-b0.pth")
    with pytest.raises(EncoderError, match="does not match the architecture: missing keys"):
        build_encoder("efficientnet-b0", device="cpu", settings=current())
