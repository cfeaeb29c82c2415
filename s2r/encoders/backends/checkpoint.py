"""The ``checkpoint`` backend: a released (or the user's) checkpoint file loaded into a
torchvision-style ResNet or a timm architecture through a key mapping
(:mod:`s2r.encoders.checkpoints`).

Inline reference ``ckpt:ARCH:PATH``; config entry ``checkpoint = "PATH"`` with ``arch`` and
optionally ``mapping`` and ``key_paths`` (relative paths are relative to the config file).
s2r never downloads these files: a missing one says where to get it (built-in entries) or
that the path is wrong (user entries).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from s2r.encoders import factory
from s2r.encoders.backends.base import FileBackend
from s2r.encoders.backends.timm import timm_create
from s2r.encoders.checkpoints import (MAPPINGS, checkpoint_state_dict, get_mapping,
                                     locate_state_dict)
from s2r.encoders.fields import check_fields, choices, is_name, is_text_list, one_of
from s2r.encoders.spec import CheckpointSpec, EncoderSpec
from s2r.encoders.suggest import did_you_mean
from s2r.errors import EncoderError

# Architectures that released checkpoints load into (CheckpointSpec.arch); any other name is
# looked up in timm.
CHECKPOINT_ARCHS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet18-gn16",
                    "resnet50-fc1024", "vit_base_patch16_224")


def build_architecture(arch: str):
    """An untrained embedding model for a checkpoint architecture name (or a timm name).

    ``resnetNN``: torchvision ResNet with ``fc = Identity`` (pooled features);
    ``resnet18-gn16``: the same with ``GroupNorm(16, C)`` (data4robotics/HRP);
    ``resnet50-fc1024``: ResNet50 with ``fc = Linear(2048, 1024)`` (VIP);
    anything else: ``timm.create_model(arch, num_classes=0)``.
    """
    import torch.nn as nn
    import torchvision

    if arch in ("resnet18", "resnet34", "resnet50", "resnet101"):
        model = getattr(torchvision.models, arch)(weights=None)
        model.fc = nn.Identity()
        return model
    if arch == "resnet18-gn16":
        model = torchvision.models.resnet18(weights=None,
                                            norm_layer=lambda c: nn.GroupNorm(16, c))
        model.fc = nn.Identity()
        return model
    if arch == "resnet50-fc1024":
        model = torchvision.models.resnet50(weights=None)
        model.fc = nn.Linear(2048, 1024)
        return model
    return timm_create(arch, {})


def spec_from_checkpoint(arch: str, path, /, *, id: Optional[str] = None, mapping: str = "auto",
                         key_paths=(), **fields) -> EncoderSpec:
    """An :class:`EncoderSpec` for checkpoint ``path`` loaded into ``arch`` (see
    :func:`build_architecture`) with key ``mapping`` (default ``auto``: common containers
    and prefixes are tried, then a strict load)."""
    import timm

    check_fields({**fields, "key_paths": key_paths}, where=f"ckpt:{arch}:{path}")
    if arch not in CHECKPOINT_ARCHS and not timm.is_model(arch):
        raise EncoderError(f"unknown architecture {arch!r} for a checkpoint; use one of "
                           f"{', '.join(CHECKPOINT_ARCHS)} or a timm model name. "
                           f"{did_you_mean(arch, list(CHECKPOINT_ARCHS) + timm.list_models())}")
    get_mapping(mapping)
    input_size = tuple(fields.get("input_size") or (224, 224))
    model, _ = factory.meta_build(lambda: build_architecture(arch))
    if arch.startswith("resnet"):
        family, architecture, cam = "cnn", "CNN", "layer4.-1"
    else:
        family, architecture, cam = factory.timm_layout(model, arch)
    path = str(Path(path).expanduser().absolute())
    base = dict(factory.user_defaults(id or f"ckpt:{arch}:{path}"), architecture=architecture,
                family=family, backend="checkpoint", identifier=arch,
                checkpoint=CheckpointSpec(file=path, url="",  # a local file: no download
                                          key_paths=tuple(key_paths), mapping=mapping,
                                          arch=arch),
                params_m=factory.params_m(model), dim=factory.output_dim(
                    model, input_size, getattr(model, "num_features", None),
                    given=fields.get("dim"), default_size=(224, 224)),
                input_size=input_size, cam_layer=cam, int8=arch.startswith("resnet"),
                notes=f"{arch} loaded from {path} (user encoder)")
    return factory.make_spec(base, fields, where=f"checkpoint {path}")


class CheckpointBackend(FileBackend):
    name = "checkpoint"
    ref_prefixes = ("ckpt", "checkpoint")
    ref_syntax = ref_hint = "'ckpt:ARCH:PATH'"
    config_key = "checkpoint"
    config_fields = ("arch", "mapping", "key_paths")
    field_rules = {
        "checkpoint": (is_name, 'a file path, e.g. "ckpts/r50.pth"'),
        "arch": (is_name, 'an architecture name, e.g. "resnet50" or a timm model name'),
        "mapping": (one_of(tuple(MAPPINGS)), choices(MAPPINGS)),
        "key_paths": (is_text_list, 'a list of strings, e.g. ["state_dict"]'),
    }

    def check_spec(self, spec) -> None:
        if spec.checkpoint is None:
            raise EncoderError(f"encoder {spec.id!r}: backend 'checkpoint' needs a checkpoint")

    def random_library(self, spec) -> str:
        return "torchvision" if spec.checkpoint.arch.startswith("resnet") else "timm"

    def make(self, spec):
        return build_architecture(spec.checkpoint.arch)

    def adapt_state_dict(self, raw, model, spec, source: str) -> dict:
        ck = spec.checkpoint
        return checkpoint_state_dict(raw, model, mapping=ck.mapping, key_paths=ck.key_paths,
                                     source=source)

    def tap_sites(self, spec, model) -> tuple:
        """torchvision ResNets: the stem's ReLU and ``layer1``-``layer4`` (timm's ResNet taps
        ``act1``, ``layer1``-``layer4`` under torchvision's names), averaged; timm
        architectures: timm's taps."""
        from s2r.encoders.backends.timm import timm_tap_sites
        from s2r.encoders.taps import TapSite

        if spec.checkpoint.arch.startswith("resnet"):
            return tuple(TapSite(name, name, "avg")
                         for name in ("relu", "layer1", "layer2", "layer3", "layer4"))
        return timm_tap_sites(spec, model)

    def file_format(self, raw, model, spec, source: str) -> str:
        ck = spec.checkpoint
        where, _ = locate_state_dict(raw, tuple(ck.key_paths) or get_mapping(ck.mapping).key_paths,
                                     source=source)
        return (f"{ck.mapping} release layout, state dict at "
                f"{repr(where) if where else 'the top level'}")

    def parse_ref(self, rest: str, text: str):
        if rest.count(":") < 1:
            return None
        arch, path = rest.split(":", 1)
        return spec_from_checkpoint(arch, path, id=text)

    def check_entry(self, entry: dict, where: str) -> None:
        if "arch" not in entry:
            raise EncoderError(f"{where}: a checkpoint entry needs 'arch' (e.g. \"resnet50\")")

    def spec_from_entry(self, value, fields: dict, *, id: str, base_dir):
        path = Path(value).expanduser()
        path = path if path.is_absolute() else Path(base_dir) / path
        return spec_from_checkpoint(fields.pop("arch"), path, id=id,
                                    mapping=fields.pop("mapping", "auto"),
                                    key_paths=tuple(fields.pop("key_paths", ())), **fields)


BACKEND = CheckpointBackend()
