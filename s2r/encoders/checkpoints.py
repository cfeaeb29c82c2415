"""Key mappings from released checkpoints onto the architectures s2r builds.

A mapping is data (:class:`KeyMapping`): where the state_dict sits in the file, which keys to
drop (language heads, MAE decoders, classifier) and which prefixes to strip. After remapping,
the state_dict must match the model *exactly* (``load_state_dict(strict=True)``); otherwise
:func:`load_state_dict_strict` raises an EncoderError naming the missing and unexpected keys
and the shape mismatches.

=========== ====================================== =========================================
mapping     release                                file layout
=========== ====================================== =========================================
r3m         R3M ``model.pt``                        ``ckpt["r3m"]``: ``module.convnet.*``
                                                   (torchvision ResNet, no fc) +
                                                   ``module.lang_enc.*``, ``module.lang_rew.*``
vip         VIP ``model.pt``                        ``ckpt["vip"]``: ``module.convnet.*``
                                                   (ResNet50 with fc = Linear(2048, 1024))
mae         MVP, VC-1, HRP-ViT                      ``ckpt["model"]`` (MVP, VC-1) or the top
                                                   level (HRP's bare ``IN_hrp.pth``): timm
                                                   ViT keys + ``decoder_*``, ``mask_token``
hrp         data4robotics ResNet18 (GroupNorm)      ``ckpt["features"]`` or ``ckpt["model"]``:
                                                   ``_model.*``
torchvision MCR, plain ResNet state_dicts           top level (or ``state_dict``/``model``),
                                                   optional ``module.``; ``fc.*`` dropped
auto        user checkpoints                        tries the common containers and prefixes
=========== ====================================== =========================================
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Mapping, Optional

from s2r.encoders.safe_load import read_checkpoint
from s2r.errors import EncoderError

_CONTAINERS = ("state_dict", "model", "features", "model_state_dict", "")
_PREFIXES = ("module.convnet.", "module.", "_model.", "model.", "convnet.", "encoder.",
             "backbone.")


@dataclass(frozen=True)
class KeyMapping:
    """How a release's state_dict maps onto our model's keys.

    Attributes
    ----------
    name : str
        Mapping id (``CheckpointSpec.mapping``).
    key_paths : tuple of str
        Default containers inside the file, tried in order (``""`` = top level); a
        ``CheckpointSpec.key_paths`` other than ``("",)`` overrides them.
    drop : tuple of str
        fnmatch patterns of keys to discard (matched before prefix stripping).
    strip_prefixes : tuple of str
        Prefixes removed from the remaining keys (first match per key).
    """

    name: str
    key_paths: tuple = ("",)
    drop: tuple = ()
    strip_prefixes: tuple = ()


MAPPINGS = {
    "r3m": KeyMapping("r3m", ("r3m", ""), drop=("*lang_enc*", "*lang_rew*"),
                      strip_prefixes=("module.convnet.",)),
    "vip": KeyMapping("vip", ("vip", ""), strip_prefixes=("module.convnet.",)),
    "mae": KeyMapping("mae", ("model", "features", ""), drop=("decoder*", "mask_token"),
                      strip_prefixes=("module.",)),
    "hrp": KeyMapping("hrp", ("features", "model"), strip_prefixes=("_model.",)),
    "torchvision": KeyMapping("torchvision", ("state_dict", "model", ""), drop=("fc.*",),
                              strip_prefixes=("module.",)),
    "auto": KeyMapping("auto", _CONTAINERS, drop=("*lang_enc*", "*lang_rew*", "decoder*",
                                                  "mask_token")),
}


def get_mapping(name: str) -> KeyMapping:
    """The mapping called ``name`` (EncoderError listing the known ones otherwise)."""
    try:
        return MAPPINGS[name]
    except KeyError:
        raise EncoderError(f"unknown checkpoint mapping {name!r}; known: "
                           f"{', '.join(MAPPINGS)}") from None


def _is_state_dict(obj) -> bool:
    import torch

    return (isinstance(obj, Mapping) and len(obj) > 0
            and all(isinstance(k, str) for k in obj)
            and any(isinstance(v, torch.Tensor) for v in obj.values()))


def extract_state_dict(obj, key_paths, *, source: str = "checkpoint") -> dict:
    """The state_dict inside ``obj`` at the first of ``key_paths`` that holds one.

    Parameters
    ----------
    obj : object
        What :func:`s2r.encoders.safe_load.read_checkpoint` returned.
    key_paths : sequence of str
        ``""`` = ``obj`` itself; ``"a.b"`` = ``obj["a"]["b"]``.
    source : str
        File name for messages.

    Returns
    -------
    dict of str -> Tensor
        Non-tensor entries (e.g. ``num_batches_tracked`` saved as int) are kept only if
        tensors; other values are dropped.
    """
    return locate_state_dict(obj, key_paths, source=source)[1]


def locate_state_dict(obj, key_paths, *, source: str = "checkpoint") -> tuple:
    """``(path, state_dict)``: :func:`extract_state_dict` and the first of ``key_paths``
    that held it (``""`` = the top level)."""
    import torch

    for path in key_paths:
        node = obj
        for part in [p for p in path.split(".") if p]:
            node = node.get(part) if isinstance(node, Mapping) else None
        if _is_state_dict(node):
            return path, {k: v for k, v in node.items() if isinstance(v, torch.Tensor)}
    top = list(obj)[:10] if isinstance(obj, Mapping) else type(obj).__name__
    wanted = ", ".join(repr(p) if p else "top level" for p in key_paths)
    raise EncoderError(f"{source}: no state_dict (a dict of tensors) at {wanted}; the file "
                       f"holds {top!r}")


def strip_prefix(state_dict: dict, prefix: str, *, keep_others: bool = True) -> dict:
    """Remove ``prefix`` from the keys that have it; drop the others unless ``keep_others``."""
    return {(k[len(prefix):] if k.startswith(prefix) else k): v for k, v in state_dict.items()
            if keep_others or k.startswith(prefix)}


def remap_keys(state_dict: dict, mapping: KeyMapping) -> dict:
    """Drop the mapping's keys and strip its prefixes (pure; returns a new dict)."""
    out = {}
    for key, value in state_dict.items():
        if any(fnmatch.fnmatchcase(key, pat) for pat in mapping.drop):
            continue
        for prefix in mapping.strip_prefixes:
            if key.startswith(prefix):
                key = key[len(prefix):]
                break
        out[key] = value
    return out


def auto_remap(state_dict: dict, model_keys) -> dict:
    """Strip the one common prefix (from a known list, or the longest shared dotted prefix)
    that makes most keys match ``model_keys``; drop extra classifier keys the model lacks."""
    model_keys = set(model_keys)
    best, best_hits = state_dict, len(model_keys & set(state_dict))
    candidates = list(_PREFIXES)
    first = next(iter(state_dict), "")
    parts = first.split(".")
    candidates += [".".join(parts[:i]) + "." for i in range(1, len(parts))]
    for prefix in candidates:
        stripped = strip_prefix(state_dict, prefix)
        hits = len(model_keys & set(stripped))
        if hits > best_hits:
            best, best_hits = stripped, hits
    return {k: v for k, v in best.items()
            if k in model_keys or not any(k.startswith(h) for h in ("fc.", "head.",
                                                                      "classifier."))}


def _summary(items, n: int = 8) -> str:
    items = list(items)
    shown = ", ".join(items[:n])
    return f"{len(items)} ({shown}{', ...' if len(items) > n else ''})"


def load_state_dict_strict(model, state_dict: dict, *, source: str = "checkpoint",
                           assign: bool = False) -> None:
    """``model.load_state_dict(state_dict, strict=True)`` with a readable error.

    Parameters
    ----------
    assign : bool
        Passed to ``load_state_dict`` (used to fill a model built on the meta device).

    Raises
    ------
    EncoderError
        Listing the first missing keys, unexpected keys and shape mismatches (with counts).
    """
    own = model.state_dict()
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    shapes = [f"{k}: file {tuple(state_dict[k].shape)} vs model {tuple(own[k].shape)}"
              for k in own if k in state_dict and tuple(state_dict[k].shape) != tuple(own[k].shape)]
    # BatchNorm's num_batches_tracked is optional in old checkpoints; torch fills it in.
    missing_real = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing_real or unexpected or shapes:
        parts = []
        if missing_real:
            parts.append(f"missing keys {_summary(missing_real)}")
        if unexpected:
            parts.append(f"unexpected keys {_summary(unexpected)}")
        if shapes:
            parts.append(f"shape mismatches {_summary(shapes, 4)}")
        raise EncoderError(f"{source} does not match the architecture: " + "; ".join(parts))
    model.load_state_dict(state_dict, strict=not missing, assign=assign)


def checkpoint_state_dict(raw, model, *, mapping: str, key_paths=(),
                          source: str = "checkpoint") -> dict:
    """The state_dict for ``model`` inside a checkpoint's contents ``raw``, remapped.

    Parameters
    ----------
    raw : object
        What :func:`s2r.encoders.safe_load.read_checkpoint` returned.
    model : torch.nn.Module
        The target architecture (its ``state_dict()`` keys are the target naming; used by
        the ``auto`` mapping).
    mapping : str
        A name in :data:`MAPPINGS`.
    key_paths : tuple of str
        Containers inside the file; empty means the mapping's defaults.
    """
    spec = get_mapping(mapping)
    state_dict = extract_state_dict(raw, tuple(key_paths) or spec.key_paths, source=source)
    state_dict = remap_keys(state_dict, spec)
    if spec.name == "auto":
        state_dict = auto_remap(state_dict, model.state_dict().keys())
    return state_dict


def load_checkpoint_into(model, path, *, mapping: str, key_paths=(),
                         source: Optional[str] = None) -> None:
    """Read ``path`` safely, remap its keys with ``mapping`` and load it strictly into
    ``model`` (see :func:`checkpoint_state_dict`)."""
    source = source or str(path)
    state_dict = checkpoint_state_dict(read_checkpoint(path), model, mapping=mapping,
                                       key_paths=key_paths, source=source)
    load_state_dict_strict(model, state_dict, source=source)
