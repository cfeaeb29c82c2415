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
  ``mapping`` and ``key_paths``. The whole file is checked when it is read, before any model
  is built (:data:`FIELD_RULES`: types, ranges, allowed values; ids unique in the file and
  never a built-in id); a ``dim`` or ``input_size`` the model contradicts is an error too.

- :func:`s2r.encoders.register_encoder` with a spec made by :func:`spec_from_timm`,
  :func:`spec_from_open_clip` or :func:`spec_from_checkpoint`.

``dim`` and ``params_m`` are computed by building the model on PyTorch's meta device (no
memory, no weights); the Grad-CAM layer and family are inferred (override with ``cam_layer``).
"""

from __future__ import annotations

import difflib
import json
import math
import os
from pathlib import Path
from typing import Optional

from s2r.encoders.checkpoints import MAPPINGS
from s2r.encoders.registry import (BUILTIN_SPECS, IMAGENET_MEAN, IMAGENET_STD, OPENAI_CLIP_MEAN,
                                   OPENAI_CLIP_STD, PRETRAINING_GROUPS, CheckpointSpec,
                                   EncoderSpec)
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


def _forward_dim(model, input_size):
    """Width of ``model``'s flattened output at ``input_size``, or the exception it raised."""
    import torch

    device = next(model.parameters()).device
    try:
        with torch.no_grad():
            out = model(torch.zeros(1, 3, *input_size, device=device))
        return int(out.flatten(1).shape[1])
    except Exception as exc:  # noqa: BLE001 - the caller decides what a failure means
        return exc


def _output_dim(model, input_size, fallback: Optional[int], *, given: Optional[int] = None,
                default_size=None) -> int:
    """The embedding dimension, measured by one forward pass at ``input_size``.

    Parameters
    ----------
    fallback : int or None
        The model's declared width, used when the forward pass fails.
    given : int, optional
        The user's ``dim``: must equal the measured width; used when none can be measured.
    default_size : (int, int), optional
        The model's own input size: when ``input_size`` (given by the user) fails there but
        this one runs, ``input_size`` is the error.
    """
    measured = _forward_dim(model, input_size)
    if isinstance(measured, Exception):
        if (default_size is not None and tuple(default_size) != tuple(input_size)
                and not isinstance(_forward_dim(model, default_size), Exception)):
            reason = (str(measured).splitlines() or [type(measured).__name__])[0][:160]
            raise EncoderError(f"field 'input_size' must be a size the model accepts (it runs "
                               f"at {list(default_size)}); got {list(input_size)} ({reason})")
        if given is not None:
            return int(given)
        if fallback is None:
            raise EncoderError("could not determine the embedding dimension; give `dim`")
        return int(fallback)
    if given is not None and int(given) != measured:
        raise EncoderError(f"field 'dim' must match the model's output ({measured} numbers per "
                           f"frame; leave it out, it is computed); got {given!r}")
    return measured


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


# ---------------------------------------------------------------------------------------------
# Field rules: what each field of an entry (or keyword of a spec factory) must be
# ---------------------------------------------------------------------------------------------

#: Values of the enum fields a user encoder may take (``Pixels``/``State`` and their families
#: are the built-in baselines', not an image model's).
USER_ARCHITECTURES = ("CNN", "Transformer")
USER_FAMILIES = ("cnn", "vit", "swin", "clip")


def _number(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _text(value) -> bool:
    return isinstance(value, str)


def _name(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _one_of(allowed):
    return lambda value: isinstance(value, str) and value in allowed


def _triple(positive: bool):
    return lambda value: (isinstance(value, (list, tuple)) and len(value) == 3
                          and all(_number(v) and (v > 0 or not positive) for v in value))


def _size(value) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(map(_positive_int, value))


def _model_tag(value) -> bool:
    model, sep, tag = value.partition(":") if isinstance(value, str) else ("", "", "")
    return bool(sep and model.strip() and tag.strip())


def _text_list(value) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _choices(allowed) -> str:
    return "one of " + ", ".join(repr(a) for a in allowed)


#: field -> (check, what it must be). Checked when a config file is read (before any model is
#: built) and by the spec factories.
FIELD_RULES = {
    "id": (_name, 'a non-empty string without ":", e.g. "convnext-t"'),
    "timm": (_name, 'a timm model name, e.g. "convnext_tiny.fb_in1k"'),
    "open_clip": (_model_tag, '"MODEL:PRETRAINED", e.g. "ViT-B-32:laion2b_s34b_b79k"'),
    "checkpoint": (_name, 'a file path, e.g. "ckpts/r50.pth"'),
    "arch": (_name, 'an architecture name, e.g. "resnet50" or a timm model name'),
    "mapping": (_one_of(tuple(MAPPINGS)), _choices(MAPPINGS)),
    "key_paths": (_text_list, 'a list of strings, e.g. ["state_dict"]'),
    "name": (_name, "a non-empty string"),
    "architecture": (_one_of(USER_ARCHITECTURES), _choices(USER_ARCHITECTURES)),
    "family": (_one_of(USER_FAMILIES), _choices(USER_FAMILIES)),
    "training_type": (_text, 'a string, e.g. "Supervised"'),
    "pretraining_data": (_text, 'a string, e.g. "General (ImageNet)"'),
    "pretraining_group": (_one_of(PRETRAINING_GROUPS), _choices(PRETRAINING_GROUPS)),
    "mean": (_triple(False), "3 numbers, e.g. [0.485, 0.456, 0.406]"),
    "std": (_triple(True), "3 numbers > 0, e.g. [0.229, 0.224, 0.225]"),
    "input_size": (_size, "[height, width], two positive integers, e.g. [224, 224]"),
    "cam_layer": (_name, 'a dotted layer path, e.g. "layer4.-1"'),
    "license": (_text, "a string"),
    "notes": (_text, "a string"),
    "dim": (_positive_int, "a positive integer (the embedding width; computed when left out)"),
    "params_m": (lambda v: _number(v) and v >= 0, "a number >= 0 (millions of parameters)"),
    "int8": (lambda v: isinstance(v, bool), "true or false"),
}


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_fields(fields: dict, *, where: str) -> None:
    """Raise EncoderError (one line: ``where``, the field, what it must be, what it got) for
    the first field of ``fields`` that breaks :data:`FIELD_RULES`; other names pass."""
    for key, value in fields.items():
        rule = FIELD_RULES.get(key)
        if rule is not None and not rule[0](value):
            raise EncoderError(f"{where}: field {key!r} must be {rule[1]}; got {_show(value)}")


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
    model, _ = _meta_build(lambda: timm.create_model(full, pretrained=False, num_classes=0,
                                                     **kwargs))
    family, architecture, cam = _timm_layout(model, arch)
    base = dict(_user_defaults(id or f"timm:{name}"), architecture=architecture,
                family=family, backend="timm", identifier=arch, tag=tag,
                params_m=_params_m(model),
                dim=_output_dim(model, input_size, getattr(model, "head_hidden_size", None)
                                or getattr(model, "num_features", None),
                                given=fields.get("dim"),
                                default_size=cfg.input_size[-2:] if cfg is not None else None),
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
    dim = int(cfg["embed_dim"])
    if "input_size" in fields or "dim" in fields:  # the user's size must run; dim must match
        dim = _output_dim(visual, tuple(fields.get("input_size") or image_size), dim,
                          given=fields.get("dim"), default_size=image_size)
    base = dict(_user_defaults(id or f"open_clip:{model_name}:{pretrained}"),
                architecture=architecture, family=family, backend="open_clip",
                identifier=model_name, tag=pretrained, params_m=_params_m(visual), dim=dim,
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

    check_fields({**fields, "key_paths": key_paths}, where=f"ckpt:{arch}:{path}")
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
                checkpoint=CheckpointSpec(file=path, url="",  # a local file: no download
                                          key_paths=tuple(key_paths), mapping=mapping,
                                          arch=arch),
                params_m=_params_m(model), dim=_output_dim(
                    model, input_size, getattr(model, "num_features", None),
                    given=fields.get("dim"), default_size=(224, 224)),
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
    ``./s2r_encoders.toml`` / ``.json`` when present (both present is an error: s2r reads
    one); ``None`` when there is none."""
    if path is None and os.environ.get("S2R_ENCODERS"):
        path = os.environ["S2R_ENCODERS"]
    if path is not None:
        path = Path(path).expanduser()
        if not path.is_file():
            raise EncoderError(f"encoder config {path} does not exist (from "
                               f"{'S2R_ENCODERS' if os.environ.get('S2R_ENCODERS') else 'argument'})")
        return path
    found = [Path(name) for name in CONFIG_NAMES if Path(name).is_file()]
    if len(found) > 1:
        raise EncoderError(f"encoder configs {found[0]} and {found[1]} are both here; s2r "
                           "reads one: merge their entries into one file (or set S2R_ENCODERS "
                           "to the one to use)")
    return found[0] if found else None


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
        got = "a list of non-tables" if isinstance(data, list) else type(data).__name__
        raise EncoderError(f"encoder config {path}: expected a list of encoder tables "
                           f"([[encoders]] in TOML, a list under \"encoders\" in JSON), got {got}")
    return data


def check_entry(entry: dict, *, where: str) -> tuple:
    """Check one config entry without building anything.

    Returns
    -------
    (encoder_id, kind, fields, where)
        ``kind`` is ``"timm"``, ``"open_clip"`` or ``"checkpoint"``; ``fields`` the entry
        without ``id``; ``where`` names the entry and its id for later messages.

    Raises
    ------
    EncoderError
        One line naming ``where``, the entry's id and the field: a missing or malformed id,
        not exactly one source, an unknown field, or a field of the wrong type or range
        (:data:`FIELD_RULES`).
    """
    entry = dict(entry)
    if "id" not in entry:
        raise EncoderError(f"{where}: missing 'id' (a short name, e.g. \"convnext-t\")")
    check_fields({"id": entry["id"]}, where=where)
    encoder_id = entry.pop("id").strip()
    if ":" in encoder_id or encoder_id.endswith("@random"):
        raise EncoderError(f"{where}: id {encoder_id!r} may not contain ':' or end in @random")
    where = f"{where} (id {encoder_id!r})"
    sources = [k for k in ("timm", "open_clip", "checkpoint") if k in entry]
    if len(sources) != 1:
        raise EncoderError(f"{where}: give exactly one of 'timm', 'open_clip', 'checkpoint' "
                           f"(got {sources or 'none'})")
    allowed = _META_FIELDS + _SOURCE_FIELDS
    unknown = sorted(set(entry) - set(allowed))
    if unknown:
        hint = _close(unknown[0], allowed, n=3)
        raise EncoderError(f"{where}: unknown field(s) {unknown}; allowed: "
                           f"{', '.join(allowed)}. {hint}")
    if sources[0] != "checkpoint":
        _no(entry, ("arch", "mapping", "key_paths"), where)
    elif "arch" not in entry:
        raise EncoderError(f"{where}: a checkpoint entry needs 'arch' (e.g. \"resnet50\")")
    check_fields(entry, where=where)
    return encoder_id, sources[0], entry, where


def spec_from_entry(entry: dict, *, where: str, base_dir: Path = Path(".")) -> EncoderSpec:
    """One config entry (a dict) -> :class:`EncoderSpec` (checked by :func:`check_entry`)."""
    return _spec_from_checked(check_entry(entry, where=where), base_dir)


def _spec_from_checked(checked: tuple, base_dir: Path) -> EncoderSpec:
    encoder_id, kind, entry, where = checked
    try:
        return _spec_from_fields(dict(entry), kind, encoder_id, where, base_dir)
    except EncoderError as exc:
        if where in str(exc):
            raise
        raise EncoderError(f"{where}: {exc}") from None


def _spec_from_fields(entry: dict, kind: str, encoder_id: str, where: str,
                      base_dir: Path) -> EncoderSpec:
    fields = {**entry, "source": where}
    value = fields.pop(kind)
    if kind == "timm":
        return spec_from_timm(value.strip(), id=encoder_id, **fields)
    if kind == "open_clip":
        model, tag = value.split(":", 1)
        return spec_from_open_clip(model.strip(), tag.strip(), id=encoder_id, **fields)
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base_dir / path
    return spec_from_checkpoint(fields.pop("arch"), path, id=encoder_id,
                                mapping=fields.pop("mapping", "auto"),
                                key_paths=tuple(fields.pop("key_paths", ())), **fields)


def _no(fields: dict, keys, where: str) -> None:
    bad = [k for k in keys if k in fields]
    if bad:
        raise EncoderError(f"{where}: {bad} only apply to checkpoint entries")


def _clash(encoder_id: str, taken: dict) -> str:
    """Why ``encoder_id`` cannot be used (``taken``: id -> source of the entry holding it)."""
    if taken[encoder_id] == "builtin":
        return (f"id {encoder_id!r} is a built-in encoder; built-in ids cannot be redefined: "
                "choose another id")
    return (f"id {encoder_id!r} is already registered with register_encoder (source "
            f"{taken[encoder_id]!r}); choose another id")


def check_encoder_config(path=None, *, taken: Optional[dict] = None) -> list:
    """Read and check the config file in effect (see :func:`config_path`) without building
    any model: every entry's fields (:func:`check_entry`) and its id, which must be unique in
    the file and not in ``taken``.

    Parameters
    ----------
    path : str or Path, optional
        The config file (default: the one in effect).
    taken : dict, optional
        Ids already in use -> their ``source`` (``"builtin"`` for built-in entries); default:
        the built-in ids.

    Returns
    -------
    list of tuple
        :func:`check_entry`'s result per entry, in file order; ``[]`` without a config.
    """
    found = config_path(path)
    if found is None:
        return []
    taken = {i: "builtin" for i in BUILTIN_SPECS} if taken is None else taken
    checked, first = [], {}
    for i, entry in enumerate(_read_config(found)):
        where = f"encoder config {found} entry {i + 1}"
        result = check_entry(entry, where=where)
        encoder_id = result[0]
        if encoder_id in taken:
            raise EncoderError(f"{result[3]}: {_clash(encoder_id, taken)}")
        if encoder_id in first:
            raise EncoderError(f"{result[3]}: id {encoder_id!r} is already used by entry "
                               f"{first[encoder_id]} of the same file; ids must be unique")
        first[encoder_id] = i + 1
        checked.append(result)
    return checked


def load_encoder_config(path=None, *, taken: Optional[dict] = None) -> list:
    """The user encoders of the config file in effect (see :func:`config_path`); ``[]``
    when there is none. The whole file is checked first (:func:`check_encoder_config`), so a
    bad field or id fails before any model is built. Errors name the file, the entry and the
    field."""
    found = config_path(path)
    if found is None:
        return []
    return [_spec_from_checked(checked, found.parent)
            for checked in check_encoder_config(found, taken=taken)]
