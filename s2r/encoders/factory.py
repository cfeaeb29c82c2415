"""What the user-encoder spec factories share: introspection of a model built on PyTorch's
meta device (no memory, no weights) and the merge of the user's fields into a spec.

``dim`` and ``params_m`` are computed from the model; the Grad-CAM layer and family are
inferred (the user may override them with ``cam_layer``/``family``).
"""

from __future__ import annotations

from typing import Optional

from s2r.encoders.fields import check_meta_fields
from s2r.encoders.spec import EncoderSpec
from s2r.errors import EncoderError


def meta_build(fn):
    """``(fn(), True)`` built on the meta device, or ``(fn(), False)`` built on CPU when the
    model cannot be built on meta."""
    import torch

    try:
        with torch.device("meta"):
            return fn(), True
    except Exception:
        return fn(), False


def _forward_dim(model, input_size):
    """Width of ``model``'s flattened output at ``input_size``, or the exception it raised."""
    import torch

    device = next(model.parameters()).device
    try:
        with torch.no_grad():
            out = model(torch.zeros(1, 3, *input_size, device=device))
        return int(out.flatten(1).shape[1])
    except Exception as exc:
        return exc


def output_dim(model, input_size, fallback: Optional[int], *, given: Optional[int] = None,
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


def params_m(model) -> float:
    """Parameters of ``model`` in millions, rounded to 0.01."""
    return round(sum(p.numel() for p in model.parameters()) / 1e6, 2)


def timm_layout(model, arch: str) -> tuple:
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


def user_defaults(id: str) -> dict:
    """Flat spec fields every user encoder starts from."""
    return dict(id=id, table_number=None, training_type="Unknown",
                pretraining_data="Unknown", pretraining_group="general", source="user")


def make_spec(base: dict, fields: dict, *, where: str) -> EncoderSpec:
    """The spec of the flat fields ``base`` (what the factory found) overridden by the user's
    ``fields`` (metadata only; anything else is an EncoderError naming ``where``)."""
    merged = {**base, **check_meta_fields(fields, where=where)}
    for key in ("mean", "std", "input_size"):
        if key in merged:
            merged[key] = tuple(merged[key])
    merged.setdefault("name", merged["id"])
    try:
        return EncoderSpec(**merged)
    except TypeError as exc:
        raise EncoderError(f"{where}: {exc}") from None
