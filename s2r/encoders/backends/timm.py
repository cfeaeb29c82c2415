"""The ``timm`` backend: any timm model, weights from the Hugging Face hub.

Inline reference ``timm:NAME[.TAG]`` (the default tag is pinned when omitted); config entry
``timm = "NAME[.TAG]"``. Weights: ``<id>.safetensors`` (or ``.pth``/``.pt``/``.bin``) in the
weights folder, the hub cache, or a download when online; a torchvision file (VGG) or an
original release is converted by the model's own ``checkpoint_filter_fn`` / ``_filter_fn``,
called as timm calls it; DINOv2 position embeddings are resized as DINOv2 does
(:func:`dinov2_pos_embed`).
"""

from __future__ import annotations

import sys
from typing import Optional

from s2r.encoders import factory
from s2r.encoders.backends.base import FileBackend
from s2r.encoders.checkpoints import extract_state_dict, strip_prefix
from s2r.encoders.fields import check_fields, is_name
from s2r.encoders.spec import IMAGENET_MEAN, IMAGENET_STD, EncoderSpec
from s2r.encoders.suggest import did_you_mean
from s2r.errors import EncoderError

HUB_FILES = ("model.safetensors", "pytorch_model.bin")


def close_timm_names(name: str) -> str:
    """'Did you mean: ...?' over timm's model names (architectures, and tags if given)."""
    import timm

    arch = name.split(".", 1)[0]
    return did_you_mean(name if "." in name and timm.is_model(arch) else arch,
                        timm.list_pretrained(f"{arch}.*") if timm.is_model(arch)
                        else timm.list_models())


def timm_create(name: str, kwargs: dict):
    """``timm.create_model(name, num_classes=0, **kwargs)`` without weights (EncoderError
    with close names for an unknown model)."""
    import timm

    if not timm.is_model(name):
        raise EncoderError(f"timm has no model {name!r}. {close_timm_names(name)}")
    try:
        return timm.create_model(name, pretrained=False, num_classes=0, **kwargs)
    except RuntimeError as exc:  # e.g. an unknown pretrained tag
        raise EncoderError(f"timm could not build {name!r}: {exc}") from None


def _timm_filter_fn(model):
    module = sys.modules.get(type(model).__module__)
    return getattr(module, "checkpoint_filter_fn", None) or getattr(module, "_filter_fn", None)


def _call_filter_fn(filter_fn, state_dict: dict, model) -> dict:
    """``filter_fn(state_dict, model)``, else ``filter_fn(state_dict)``: timm's own calling
    convention (timm/models/_builder.py, ``load_pretrained``: "for backwards compat with filter
    fn that take one arg"); VGG's ``_filter_fn`` takes one argument."""
    try:
        return filter_fn(state_dict, model)
    except TypeError:
        return filter_fn(state_dict)


def dinov2_pos_embed(pos_embed, grid, *, offset: float = 0.1):
    """DINOv2's position embedding for a ``grid`` of patches, resized as DINOv2 does it.

    Follows ``DinoVisionTransformer.interpolate_pos_encoding``
    (facebookresearch/dinov2, dinov2/models/vision_transformer.py): bicubic, *no*
    antialiasing, and the historical ``interpolate_offset=0.1`` passed as a scale factor
    ``(g + 0.1) / M`` (so the sampling grid differs from ``size=(g, g)``). timm's load-time
    ``resample_abs_pos_embed`` uses antialiased bicubic at ``size=(g, g)`` instead. Since s2r
    always feeds the encoder its fixed input size, resizing once at load time equals
    DINOv2's run-time resize for every frame.

    Parameters
    ----------
    pos_embed : Tensor of shape (1, P + M*M, C)
        The released embedding (``P`` prefix tokens, an M x M patch grid; M = 37 for the
        518-pixel DINOv2 release).
    grid : (int, int)
        Target patch grid (height, width), e.g. (16, 16) at 224 pixels.

    Returns
    -------
    Tensor of shape (1, P + gh*gw, C), the dtype of ``pos_embed``.
    """
    import math

    import torch
    import torch.nn.functional as F

    n = pos_embed.shape[1]
    m = math.isqrt(n)
    prefix = n - m * m if m * m != n else 0
    m = math.isqrt(n - prefix)
    gh, gw = (int(g) for g in grid)
    dim = pos_embed.shape[-1]
    patches = pos_embed[:, prefix:].float().reshape(1, m, m, dim).permute(0, 3, 1, 2)
    out = F.interpolate(patches, mode="bicubic", antialias=False,
                        scale_factor=((gh + offset) / m, (gw + offset) / m))
    if tuple(out.shape[-2:]) != (gh, gw):
        raise EncoderError(f"DINOv2 position embedding: {m}x{m} resized to "
                           f"{tuple(out.shape[-2:])}, expected {(gh, gw)}")
    out = out.permute(0, 2, 3, 1).reshape(1, gh * gw, dim)
    return torch.cat((pos_embed[:, :prefix].float(), out), dim=1).to(pos_embed.dtype)


def _upstream_resizes(state_dict: dict, model) -> dict:
    """Position embeddings resized the way the weights' authors do it, before timm's filter
    (which would otherwise resample them its own way): DINOv2 models only."""
    pos = state_dict.get("pos_embed")
    own = getattr(model, "pos_embed", None)
    if ("dinov2" not in type(model).__module__ + str(model.pretrained_cfg.get("architecture"))
            or pos is None or own is None or tuple(pos.shape) == tuple(own.shape)):
        return state_dict
    return {**state_dict, "pos_embed": dinov2_pos_embed(pos, model.patch_embed.grid_size)}


def timm_file_format(raw, model, source: str) -> tuple:
    """``(state_dict, format)``: a timm-format state_dict for ``model`` from a file's contents
    and the format the file was in.

    Formats: ``"timm"`` (timm's own keys: the hub's ``model.safetensors``; torchvision's
    ResNets use the same keys), or, when the model's own ``checkpoint_filter_fn`` /
    ``_filter_fn`` renamed keys, ``"torchvision"`` (VGG: ``classifier.0/3/6``) or
    ``"original release"`` (e.g. a ViT release converted by timm). The classifier the
    embedding model lacks is dropped.
    """
    state_dict = extract_state_dict(raw, ("", "state_dict", "model", "state_dict_ema"),
                                    source=source)
    state_dict = _upstream_resizes(strip_prefix(state_dict, "module."), model)
    kind = "timm"
    filter_fn = _timm_filter_fn(model)
    if filter_fn is not None:
        try:
            filtered = _call_filter_fn(filter_fn, state_dict, model)
        except Exception:
            filtered = state_dict
        if set(filtered) != set(state_dict):
            kind = ("torchvision" if type(model).__module__.endswith(".vgg")
                    else "original release")
        state_dict = filtered
    own = model.state_dict()
    heads = model.pretrained_cfg.get("classifier") or ()
    heads = (heads,) if isinstance(heads, str) else tuple(heads)
    return {k: v for k, v in state_dict.items()
            if k in own or not any(k.startswith(h + ".") for h in heads)}, kind


def timm_state_dict(raw, model, source: str) -> dict:
    """A timm-format state_dict for ``model`` from a file's contents (see
    :func:`timm_file_format`)."""
    return timm_file_format(raw, model, source)[0]


def spec_from_timm(name: str, /, *, id: Optional[str] = None, **fields) -> EncoderSpec:
    """An :class:`EncoderSpec` for the timm model ``name`` (``arch`` or ``arch.tag``).

    The pretrained tag is pinned (timm's default tag when omitted); mean/std/input size come
    from timm's pretrained config. Unknown names raise EncoderError with close names.
    """
    import timm

    check_fields(fields, where=f"timm:{name}")
    arch, _, tag = name.partition(".")
    if not timm.is_model(arch):
        raise EncoderError(f"timm has no model {arch!r}. {close_timm_names(arch)}")
    tags = [n.split(".", 1)[1] for n in timm.list_pretrained(f"{arch}.*")]
    if tag and tag not in tags:
        raise EncoderError(f"timm model {arch!r} has no pretrained tag {tag!r}; its tags: "
                           f"{', '.join(tags) or 'none'}. {close_timm_names(name)}")
    if not tag and tags:  # timm's default tag for the bare name, pinned
        tag = getattr(timm.models.get_pretrained_cfg(arch), "tag", None) or tags[0]
    full = f"{arch}.{tag}" if tag else arch
    cfg = timm.models.get_pretrained_cfg(full) if tag else None
    input_size = tuple(fields.get("input_size") or
                       (cfg.input_size[-2:] if cfg is not None else (224, 224)))
    kwargs = dict(fields.pop("model_kwargs", ()))
    model, _ = factory.meta_build(lambda: timm.create_model(full, pretrained=False,
                                                            num_classes=0, **kwargs))
    family, architecture, cam = factory.timm_layout(model, arch)
    base = dict(factory.user_defaults(id or f"timm:{name}"), architecture=architecture,
                family=family, backend="timm", identifier=arch, tag=tag,
                params_m=factory.params_m(model),
                dim=factory.output_dim(
                    model, input_size, getattr(model, "head_hidden_size", None)
                    or getattr(model, "num_features", None), given=fields.get("dim"),
                    default_size=cfg.input_size[-2:] if cfg is not None else None),
                mean=tuple(cfg.mean) if cfg is not None else IMAGENET_MEAN,
                std=tuple(cfg.std) if cfg is not None else IMAGENET_STD,
                input_size=input_size, cam_layer=cam, model_kwargs=tuple(kwargs.items()),
                hub_repo=(cfg.hf_hub_id or None) if cfg is not None else None,
                hub_files=HUB_FILES,
                license=(cfg.license or "") if cfg is not None else "",
                notes=f"timm {full} (user encoder)")
    return factory.make_spec(base, fields, where=f"timm:{name}")


def timm_tap_sites(spec, model) -> tuple:
    """The taps of a timm model: the modules of its ``feature_info`` (what timm's
    ``features_only`` and ``forward_intermediates`` tap; timm/models/_features.py), pooled by
    the family's head: ViT tokens through the model's own ``norm`` and ``forward_head``, Swin's
    NHWC stages and feature maps by their average (:data:`s2r.encoders.taps.POOLS`)."""
    from s2r.encoders.taps import TapSite

    info = getattr(model, "feature_info", None)
    if not isinstance(info, (list, tuple)):
        return ()
    pool = {"vit": "timm-head", "swin": "nhwc"}.get(spec.family, "avg")
    if pool == "timm-head" and not hasattr(model, "forward_head"):
        return ()
    return tuple(TapSite(str(f["module"]), str(f["module"]), pool) for f in info
                 if isinstance(f, dict) and f.get("module"))


class TimmBackend(FileBackend):
    name = "timm"
    download = True
    ref_prefixes = ("timm",)
    ref_syntax, ref_hint = "'timm:NAME[.TAG]'", "'timm:NAME'"
    config_key = "timm"
    field_rules = {"timm": (is_name, 'a timm model name, e.g. "convnext_tiny.fb_in1k"')}

    def pretrained_name(self, spec) -> str:
        return f"{spec.identifier}.{spec.tag}" if spec.tag else spec.identifier

    def random_library(self, spec) -> str:
        return "timm"

    def make(self, spec):
        return timm_create(spec.pretrained_name, dict(spec.model_kwargs))

    def adapt_state_dict(self, raw, model, spec, source: str) -> dict:
        return timm_state_dict(raw, model, source)

    def file_format(self, raw, model, spec, source: str) -> str:
        return timm_file_format(raw, model, source)[1]

    def tap_sites(self, spec, model) -> tuple:
        return timm_tap_sites(spec, model)

    def parse_ref(self, rest: str, text: str):
        return spec_from_timm(rest, id=text) if rest else None

    def spec_from_entry(self, value, fields: dict, *, id: str, base_dir):
        return spec_from_timm(value.strip(), id=id, **fields)


BACKEND = TimmBackend()
