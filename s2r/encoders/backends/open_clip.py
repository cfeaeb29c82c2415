"""The ``open_clip`` backend: the image tower of any open_clip model, weights from the hub.

Inline reference ``open_clip:MODEL:PRETRAINED``; config entry
``open_clip = "MODEL:PRETRAINED"``. The weights file is the whole CLIP model's (``visual.*``
keys) or a visual-only state_dict.
"""

from __future__ import annotations

import os
from typing import Optional

from s2r.encoders import factory
from s2r.encoders.backends.base import FileBackend
from s2r.encoders.checkpoints import extract_state_dict, strip_prefix
from s2r.encoders.fields import check_fields
from s2r.encoders.spec import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, EncoderSpec
from s2r.encoders.suggest import did_you_mean
from s2r.errors import EncoderError

HUB_FILES = ("open_clip_pytorch_model.bin", "open_clip_model.safetensors")


def close_open_clip_names(name: str) -> str:
    """'Did you mean: ...?' over open_clip's model names."""
    import open_clip

    return did_you_mean(name, open_clip.list_models())


def open_clip_visual(spec: EncoderSpec):
    """The untrained image tower of open_clip model ``spec.identifier``."""
    import open_clip

    cfg = open_clip.get_model_config(spec.identifier)
    if cfg is None:
        raise EncoderError(f"open_clip has no model {spec.identifier!r}. "
                           f"{close_open_clip_names(spec.identifier)}")
    try:
        from open_clip.model import _build_vision_tower

        return _build_vision_tower(cfg["embed_dim"], cfg["vision_cfg"],
                                   quick_gelu=cfg.get("quick_gelu", False))
    except ImportError:  # pragma: no cover - private helper moved: build the whole model
        return open_clip.create_model(spec.identifier, pretrained=None).visual


def open_clip_state_dict(raw, visual, source: str) -> dict:
    """The image tower's state_dict from an open_clip / OpenAI CLIP file (``visual.*`` keys;
    a visual-only state_dict is accepted too)."""
    state_dict = extract_state_dict(raw, ("", "state_dict", "model"), source=source)
    state_dict = strip_prefix(state_dict, "module.")
    if any(k.startswith("visual.") for k in state_dict):
        state_dict = strip_prefix(state_dict, "visual.", keep_others=False)
    return state_dict


def _is_model_tag(value) -> bool:
    model, sep, tag = value.partition(":") if isinstance(value, str) else ("", "", "")
    return bool(sep and model.strip() and tag.strip())


def spec_from_open_clip(model_name: str, pretrained: str, /, *, id: Optional[str] = None,
                        **fields) -> EncoderSpec:
    """An :class:`EncoderSpec` for the image tower of open_clip ``model_name`` with
    ``pretrained`` weights (EncoderError with close names / valid tags otherwise)."""
    import open_clip

    check_fields(fields, where=f"open_clip:{model_name}:{pretrained}")
    if model_name not in open_clip.list_models():
        raise EncoderError(f"open_clip has no model {model_name!r}. "
                           f"{close_open_clip_names(model_name)}")
    tags = open_clip.list_pretrained_tags_by_model(model_name)
    if pretrained not in tags:
        raise EncoderError(f"open_clip model {model_name!r} has no pretrained tag "
                           f"{pretrained!r}; its tags: {', '.join(tags) or 'none'}")
    pcfg = open_clip.get_pretrained_cfg(model_name, pretrained) or {}
    hub = pcfg.get("hf_hub") or ""
    repo, filename = os.path.split(hub.rstrip("/")) if hub.rstrip("/").count("/") > 1 else (
        hub.rstrip("/"), "")
    files = (filename,) if filename else HUB_FILES
    cfg = open_clip.get_model_config(model_name)
    image_size = cfg["vision_cfg"].get("image_size", 224)
    image_size = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
    from open_clip.model import _build_vision_tower

    visual, _ = factory.meta_build(lambda: _build_vision_tower(
        cfg["embed_dim"], cfg["vision_cfg"], quick_gelu=cfg.get("quick_gelu", False)))
    if hasattr(visual, "transformer") and hasattr(visual, "class_embedding"):
        family, architecture, cam = "clip", "Transformer", "transformer.resblocks.-1.ln_1"
    elif hasattr(visual, "layer4"):
        family, architecture, cam = "cnn", "CNN", "layer4.-1"
    else:
        family, architecture, cam = "clip", "Transformer", None
    notes = f"open_clip {model_name} pretrained={pretrained} image tower (user encoder)"
    if pretrained == "openai" and "quickgelu" not in model_name.lower():
        notes += "; OpenAI weights expect QuickGELU: prefer the '-quickgelu' model name"
    dim = int(cfg["embed_dim"])
    if "input_size" in fields or "dim" in fields:  # the user's size must run; dim must match
        dim = factory.output_dim(visual, tuple(fields.get("input_size") or image_size), dim,
                                 given=fields.get("dim"), default_size=image_size)
    base = dict(factory.user_defaults(id or f"open_clip:{model_name}:{pretrained}"),
                architecture=architecture, family=family, backend="open_clip",
                identifier=model_name, tag=pretrained, params_m=factory.params_m(visual),
                dim=dim, mean=tuple(pcfg.get("mean") or OPENAI_CLIP_MEAN),
                std=tuple(pcfg.get("std") or OPENAI_CLIP_STD), input_size=image_size,
                cam_layer=cam, hub_repo=repo or None, hub_files=files,
                license=pcfg.get("license", ""), notes=notes)
    return factory.make_spec(base, fields, where=f"open_clip:{model_name}:{pretrained}")


class OpenClipBackend(FileBackend):
    name = "open_clip"
    download = True
    ref_prefixes = ("open_clip", "openclip")
    ref_syntax, ref_hint = "'open_clip:MODEL:PRETRAINED'", "'open_clip:MODEL:TAG'"
    config_key = "open_clip"
    field_rules = {"open_clip": (_is_model_tag,
                                 '"MODEL:PRETRAINED", e.g. "ViT-B-32:laion2b_s34b_b79k"')}

    def pretrained_name(self, spec) -> str:
        return f"{spec.identifier}:{spec.tag}" if spec.tag else spec.identifier

    def random_library(self, spec) -> str:
        return "open_clip"

    def make(self, spec):
        return open_clip_visual(spec)

    def adapt_state_dict(self, raw, model, spec, source: str) -> dict:
        return open_clip_state_dict(raw, model, source)

    def file_format(self, raw, model, spec, source: str) -> str:
        keys = extract_state_dict(raw, ("", "state_dict", "model"), source=source)
        return ("open_clip (whole CLIP model; image tower 'visual.*')"
                if any(k.startswith("visual.") for k in keys) else "open_clip image tower")

    def tap_sites(self, spec, model) -> tuple:
        """A ViT tower's residual blocks (``transformer.resblocks.i``) through the tower's own
        pooling and projection; a ModifiedResNet tower's ``layer1``-``layer4``, averaged."""
        from s2r.encoders.taps import TapSite

        blocks = getattr(getattr(model, "transformer", None), "resblocks", None)
        if blocks is not None and hasattr(model, "_pool"):
            return tuple(TapSite(f"transformer.resblocks.{i}", f"transformer.resblocks.{i}",
                                 "clip-head") for i in range(len(blocks)))
        if hasattr(model, "layer4"):
            return tuple(TapSite(n, n, "avg") for n in ("layer1", "layer2", "layer3", "layer4"))
        return ()

    def parse_ref(self, rest: str, text: str):
        if rest.count(":") < 1:
            return None
        model, tag = rest.split(":", 1)
        return spec_from_open_clip(model, tag, id=text)

    def spec_from_entry(self, value, fields: dict, *, id: str, base_dir):
        model, tag = value.split(":", 1)
        return spec_from_open_clip(model.strip(), tag.strip(), id=id, **fields)


BACKEND = OpenClipBackend()
