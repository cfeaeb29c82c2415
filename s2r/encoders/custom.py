"""User encoders: any timm or open_clip model, or an architecture + checkpoint file.

Three ways to name one, all usable wherever an encoder id is accepted (``build_encoder``,
``embed_frameset``, ``--encoder`` on the command line):

- inline references::

      timm:convnext_tiny.fb_in1k          timm NAME[.TAG] (default tag pinned when omitted)
      open_clip:ViT-B-32:laion2b_s34b_b79k open_clip MODEL:PRETRAINED
      ckpt:resnet50:/path/to/weights.pth   ARCH:PATH (ARCH: resnet18/34/50/101,
                                           resnet18-gn16, resnet50-fc1024 or a timm name)

- a config file, ``$S2R_ENCODERS`` or ``./s2r_encoders.toml`` (or ``.json``)::

      [[encoders]]
      id = "convnext-t"
      timm = "convnext_tiny.fb_in1k"        # or open_clip = "ViT-B-32:laion2b_s34b_b79k"
      name = "ConvNeXt-T"                   # or checkpoint = "ckpts/my_r50.pth" + arch = "resnet50"
      pretraining_data = "General (ImageNet)"
      training_type = "Supervised"

  JSON: ``{"encoders": [{...}, ...]}``. Relative checkpoint paths are relative to the file.
  Optional fields: every :class:`~s2r.encoders.registry.EncoderSpec` metadata field (name,
  architecture, training_type, pretraining_data, pretraining_group, mean, std, input_size,
  cam_layer, license, notes, ``int8`` to offer CPU int8 embedding) and, for checkpoints,
  ``mapping`` and ``key_paths``.

- :func:`s2r.encoders.register_encoder` with a spec made by :func:`spec_from_timm`,
  :func:`spec_from_open_clip` or :func:`spec_from_checkpoint`.

``dim`` and ``params_m`` are computed by building the model on PyTorch's meta device (no
memory, no weights); the Grad-CAM layer and family are inferred (override with ``cam_layer``).
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Optional

from s2r.encoders.registry import (IMAGENET_MEAN, IMAGENET_STD, OPENAI_CLIP_MEAN,
                                   OPENAI_CLIP_STD, EncoderSpec, CheckpointSpec)
from s2r.errors import EncoderError

CONFIG_NAMES = ("s2r_encoders.toml", "s2r_encoders.json")
_META_FIELDS = ("name", "architecture", "family", "training_type", "pretraining_data",
                "pretraining_group", "mean", "std", "input_size", "cam_layer", "license",
                "notes", "dim", "params_m", "int8")
_SOURCE_FIELDS = ("timm", "open_clip", "checkpoint", "arch", "mapping", "key_paths", "id")


def _close(name: str, candidates, n: int = 5) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.5)
    return f"Did you mean: {', '.join(close)}?" if close else "No close names."


def close_timm_names(name: str) -> str:
    """'Did you mean: ...?' over timm's model names (architectures, and tags if given)."""
    import timm

    arch = name.split(".", 1)[0]
    return _close(name if "." in name and timm.is_model(arch) else arch,
                  timm.list_pretrained(f"{arch}.*") if timm.is_model(arch)
                  else timm.list_models())


def close_open_clip_names(name: str) -> str:
    """'Did you mean: ...?' over open_clip's model names."""
    import open_clip

    return _close(name, open_clip.list_models())


# ---------------------------------------------------------------------------------------------
# Introspection on the meta device
# ---------------------------------------------------------------------------------------------

def _meta_build(fn):
    import torch

    try:
        with torch.device("meta"):
            return fn(), True
    except Exception:  # noqa: BLE001 - some models cannot be built on meta: build on CPU
        return fn(), False


def _output_dim(model, input_size, fallback: Optional[int]) -> int:
    import torch

    device = next(model.parameters()).device
    try:
        with torch.no_grad():
            out = model(torch.zeros(1, 3, *input_size, device=device))
        return int(out.flatten(1).shape[1])
    except Exception:  # noqa: BLE001 - fall back to the model's declared width
        if fallback is None:
            raise EncoderError("could not determine the embedding dimension; give `dim`") \
                from None
        return int(fallback)


def _params_m(model) -> float:
    return round(sum(p.numel() for p in model.parameters()) / 1e6, 2)


def _timm_layout(model, arch: str) -> tuple:
    """(family, architecture, cam_layer) inferred from a timm model."""
    if "swin" in arch and hasattr(model, "layers"):
        return "swin", "Transformer", "layers.-1.blocks.-1.norm1"
    if hasattr(model, "blocks") and hasattr(model, "patch_embed") and hasattr(
            model, "num_prefix_tokens"):
        return "vit", "Transformer", "blocks.-1.norm1"
    info = getattr(model, "feature_info", None)
    cam = None
    if info:
        last = info[-1]
        cam = last["module"] if isinstance(last, dict) else None
    return "cnn", "CNN", cam


def _meta_fields(fields: dict, *, where: str) -> dict:
    unknown = set(fields) - set(_META_FIELDS) - {"table_number", "tag", "source", "seed",
                                                 "model_kwargs"}
    if unknown:
        raise EncoderError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: "
                           f"{', '.join(_META_FIELDS + _SOURCE_FIELDS)}")
    return fields


def _spec(base: dict, fields: dict, *, where: str) -> EncoderSpec:
    merged = {**base, **_meta_fields(fields, where=where)}
    for key in ("mean", "std", "input_size"):
        if key in merged:
            merged[key] = tuple(merged[key])
    merged.setdefault("name", merged["id"])
    try:
        return EncoderSpec(**merged)
    except TypeError as exc:
        raise EncoderError(f"{where}: {exc}") from None


def _user_defaults(id: str) -> dict:
    return dict(id=id, table_number=None, training_type="Unknown",
                pretraining_data="Unknown", pretraining_group="general", source="user")


# ---------------------------------------------------------------------------------------------
# Spec factories
# ---------------------------------------------------------------------------------------------

def spec_from_timm(name: str, /, *, id: Optional[str] = None, **fields) -> EncoderSpec:
    """An :class:`EncoderSpec` for the timm model ``name`` (``arch`` or ``arch.tag``).

    The pretrained tag is pinned (timm's default tag when omitted); mean/std/input size come
    from timm's pretrained config. Unknown names raise EncoderError with close names.
    """
    import timm

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
    model, _ = _meta_build(lambda: timm.create_model(full, pretrained=False, num_classes=0,
                                                     **kwargs))
    family, architecture, cam = _timm_layout(model, arch)
    base = dict(_user_defaults(id or f"timm:{name}"), architecture=architecture,
                family=family, backend="timm", identifier=arch, tag=tag,
                params_m=_params_m(model),
                dim=_output_dim(model, input_size, getattr(model, "head_hidden_size", None)
                                or getattr(model, "num_features", None)),
                mean=tuple(cfg.mean) if cfg is not None else IMAGENET_MEAN,
                std=tuple(cfg.std) if cfg is not None else IMAGENET_STD,
                input_size=input_size, cam_layer=cam, model_kwargs=tuple(kwargs.items()),
                hub_repo=(cfg.hf_hub_id or None) if cfg is not None else None,
                hub_files=("model.safetensors", "pytorch_model.bin"),
                license=(cfg.license or "") if cfg is not None else "",
                notes=f"timm {full} (user encoder)")
    return _spec(base, fields, where=f"timm:{name}")


def spec_from_open_clip(model_name: str, pretrained: str, /, *, id: Optional[str] = None,
                        **fields) -> EncoderSpec:
    """An :class:`EncoderSpec` for the image tower of open_clip ``model_name`` with
    ``pretrained`` weights (EncoderError with close names / valid tags otherwise)."""
    import open_clip

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
    files = (filename,) if filename else ("open_clip_pytorch_model.bin",
                                          "open_clip_model.safetensors")
    cfg = open_clip.get_model_config(model_name)
    image_size = cfg["vision_cfg"].get("image_size", 224)
    image_size = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
    from open_clip.model import _build_vision_tower

    visual, _ = _meta_build(lambda: _build_vision_tower(
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
    base = dict(_user_defaults(id or f"open_clip:{model_name}:{pretrained}"),
                architecture=architecture, family=family, backend="open_clip",
                identifier=model_name, tag=pretrained, params_m=_params_m(visual),
                dim=int(cfg["embed_dim"]),
                mean=tuple(pcfg.get("mean") or OPENAI_CLIP_MEAN),
                std=tuple(pcfg.get("std") or OPENAI_CLIP_STD), input_size=image_size,
                cam_layer=cam, hub_repo=repo or None, hub_files=files,
                license=pcfg.get("license", ""), notes=notes)
    return _spec(base, fields, where=f"open_clip:{model_name}:{pretrained}")


def spec_from_checkpoint(arch: str, path, /, *, id: Optional[str] = None, mapping: str = "auto",
                         key_paths=(), **fields) -> EncoderSpec:
    """An :class:`EncoderSpec` for checkpoint ``path`` loaded into ``arch`` (see
    :func:`s2r.encoders.build.build_architecture`) with key ``mapping`` (default ``auto``:
    common containers and prefixes are tried, then a strict load)."""
    import timm

    from s2r.encoders.build import CHECKPOINT_ARCHS, build_architecture
    from s2r.encoders.checkpoints import get_mapping

    if arch not in CHECKPOINT_ARCHS and not timm.is_model(arch):
        raise EncoderError(f"unknown architecture {arch!r} for a checkpoint; use one of "
                           f"{', '.join(CHECKPOINT_ARCHS)} or a timm model name. "
                           f"{_close(arch, list(CHECKPOINT_ARCHS) + timm.list_models())}")
    get_mapping(mapping)
    input_size = tuple(fields.get("input_size") or (224, 224))
    model, _ = _meta_build(lambda: build_architecture(arch))
    if arch.startswith("resnet"):
        family, architecture, cam = "cnn", "CNN", "layer4.-1"
    else:
        family, architecture, cam = _timm_layout(model, arch)
    path = str(Path(path).expanduser().absolute())
    base = dict(_user_defaults(id or f"ckpt:{arch}:{path}"), architecture=architecture,
                family=family, backend="checkpoint", identifier=arch,
                checkpoint=CheckpointSpec(file=path, url=f"file://{path}",
                                          key_paths=tuple(key_paths), mapping=mapping,
                                          arch=arch),
                params_m=_params_m(model), dim=_output_dim(model, input_size, getattr(
                    model, "num_features", None)),
                input_size=input_size, cam_layer=cam, int8=arch.startswith("resnet"),
                notes=f"{arch} loaded from {path} (user encoder)")
    return _spec(base, fields, where=f"checkpoint {path}")


def parse_encoder_ref(text: str) -> EncoderSpec:
    """Spec of an inline reference ``timm:NAME``, ``open_clip:MODEL:TAG`` or
    ``ckpt:ARCH:PATH`` (EncoderError with the expected forms otherwise)."""
    kind, _, rest = text.partition(":")
    kind = kind.lower().replace("-", "_")
    if kind == "timm" and rest:
        return spec_from_timm(rest, id=text)
    if kind in ("open_clip", "openclip") and rest.count(":") >= 1:
        model, tag = rest.split(":", 1)
        return spec_from_open_clip(model, tag, id=text)
    if kind in ("ckpt", "checkpoint") and rest.count(":") >= 1:
        arch, path = rest.split(":", 1)
        return spec_from_checkpoint(arch, path, id=text)
    raise EncoderError(f"cannot read encoder reference {text!r}: expected 'timm:NAME[.TAG]', "
                       "'open_clip:MODEL:PRETRAINED' or 'ckpt:ARCH:PATH' (or a registry id)")


# ---------------------------------------------------------------------------------------------
# Config files
# ---------------------------------------------------------------------------------------------

def config_path(path=None) -> Optional[Path]:
    """The encoder config file in effect: ``path``, ``$S2R_ENCODERS``, or
    ``./s2r_encoders.toml`` / ``.json`` when present; ``None`` when there is none."""
    if path is None and os.environ.get("S2R_ENCODERS"):
        path = os.environ["S2R_ENCODERS"]
    if path is not None:
        path = Path(path).expanduser()
        if not path.is_file():
            raise EncoderError(f"encoder config {path} does not exist (from "
                               f"{'S2R_ENCODERS' if os.environ.get('S2R_ENCODERS') else 'argument'})")
        return path
    for name in CONFIG_NAMES:
        if Path(name).is_file():
            return Path(name)
    return None


def _read_config(path: Path) -> list:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import tomllib

            data = tomllib.loads(text)
    except ValueError as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        raise EncoderError(f"encoder config {path}: cannot parse ({exc})") from None
    if isinstance(data, dict):
        unknown = set(data) - {"encoders", "encoder"}
        if unknown:
            raise EncoderError(f"encoder config {path}: unknown top-level key(s) "
                               f"{sorted(unknown)}; expected [[encoders]] entries")
        data = data.get("encoders", data.get("encoder", []))
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise EncoderError(f"encoder config {path}: expected a list of encoder tables")
    return data


def spec_from_entry(entry: dict, *, where: str, base_dir: Path = Path(".")) -> EncoderSpec:
    """One config entry (a dict) -> :class:`EncoderSpec`."""
    entry = dict(entry)
    sources = [k for k in ("timm", "open_clip", "checkpoint") if k in entry]
    if len(sources) != 1:
        raise EncoderError(f"{where}: give exactly one of 'timm', 'open_clip', 'checkpoint' "
                           f"(got {sources or 'none'})")
    if "id" not in entry or not isinstance(entry["id"], str) or not entry["id"].strip():
        raise EncoderError(f"{where}: missing 'id' (a short name, e.g. \"convnext-t\")")
    encoder_id = entry.pop("id").strip()
    if ":" in encoder_id or encoder_id.endswith("@random"):
        raise EncoderError(f"{where}: id {encoder_id!r} may not contain ':' or end in @random")
    where = f"{where} (id {encoder_id!r})"
    unknown = sorted(set(entry) - set(_META_FIELDS) - set(_SOURCE_FIELDS))
    if unknown:
        raise EncoderError(f"{where}: unknown field(s) {unknown}; allowed: "
                           f"{', '.join(_META_FIELDS + _SOURCE_FIELDS)}")
    try:
        return _spec_from_fields(entry, sources[0], encoder_id, where, base_dir)
    except EncoderError as exc:
        if where in str(exc):
            raise
        raise EncoderError(f"{where}: {exc}") from None


def _spec_from_fields(entry: dict, kind: str, encoder_id: str, where: str,
                      base_dir: Path) -> EncoderSpec:
    fields = {**entry, "source": where}
    value = fields.pop(kind)
    if kind == "timm":
        _no(fields, ("arch", "mapping", "key_paths"), where)
        return spec_from_timm(str(value), id=encoder_id, **fields)
    if kind == "open_clip":
        _no(fields, ("arch", "mapping", "key_paths"), where)
        if ":" not in str(value):
            raise EncoderError(f"{where}: open_clip must be 'MODEL:PRETRAINED', got {value!r}")
        model, tag = str(value).split(":", 1)
        return spec_from_open_clip(model, tag, id=encoder_id, **fields)
    if "arch" not in fields:
        raise EncoderError(f"{where}: a checkpoint entry needs 'arch' (e.g. \"resnet50\")")
    path = Path(str(value)).expanduser()
    path = path if path.is_absolute() else base_dir / path
    return spec_from_checkpoint(fields.pop("arch"), path, id=encoder_id,
                                mapping=fields.pop("mapping", "auto"),
                                key_paths=tuple(fields.pop("key_paths", ())), **fields)


def _no(fields: dict, keys, where: str) -> None:
    bad = [k for k in keys if k in fields]
    if bad:
        raise EncoderError(f"{where}: {bad} only apply to checkpoint entries")


def load_encoder_config(path=None) -> list:
    """The user encoders of the config file in effect (see :func:`config_path`); ``[]``
    when there is none. Errors name the file, the entry and the field."""
    found = config_path(path)
    if found is None:
        return []
    specs = []
    for i, entry in enumerate(_read_config(found)):
        specs.append(spec_from_entry(entry, where=f"encoder config {found} entry {i + 1}",
                                     base_dir=found.parent))
    return specs
