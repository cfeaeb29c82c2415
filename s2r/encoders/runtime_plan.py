"""Which runtime each encoder's embedding pass will use, known without building or exporting
anything: what ``python -m s2r encoders`` and the dashboard's home page show.

The answer follows the rules of :mod:`s2r.encoders.runtime` (and
:func:`s2r.embed.resolve.runtime_of`, which makes the embeddings key): ONNX Runtime on the CPU
in float32 when the settings ask for ``onnx`` or ``auto``, torch otherwise; an encoder whose
pass fell back to torch before (a fallback record in the graph cache) is said to run torch,
with the reason recorded then.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Optional

__all__ = ["NO_MODEL", "planned_runtime", "planned_runtimes_line"]

#: The runtime of an entry without a model to run (the ``state`` reference).
NO_MODEL = "-"


def _device_type(device) -> str:
    if device is None:
        from s2r.encoders.build import pick_device

        device = pick_device()
    return str(device).split(":")[0]


def planned_runtime(spec, settings, device=None, precision: str = "auto") -> tuple:
    """``(runtime, reason)``: what will run ``spec``'s embedding pass and why.

    Parameters
    ----------
    spec : EncoderSpec
    settings : s2r.settings.Settings
        Its ``runtime`` (``S2R_RUNTIME`` / ``--runtime``) and ``cache_dir`` (the graph cache).
    device : str or torch.device, optional
        Default: where encoders are built (CUDA when available).
    precision : {"auto", "int8"}
        The embedding precision asked for.

    Returns
    -------
    (str, str)
        ``"onnx"``, ``"torch"`` (raw pixels among others) or :data:`NO_MODEL` (the ``state``
        reference), and a short
        reason (``"S2R_RUNTIME=torch"``, ``"CUDA runs torch (fp16)"``, ``"int8"``, the
        recorded fallback, ...).
    """
    from s2r.encoders.runtime import check_runtime, has_graph, recorded_fallback

    if not spec.has_image_model:
        return NO_MODEL, "no model: the dataset's robot state"
    if not has_graph(spec):
        return "torch", "raw pixels: a resize and a flatten, no model for a graph"
    asked = check_runtime(getattr(settings, "runtime", None))
    if asked == "torch":
        return "torch", "S2R_RUNTIME=torch"
    if _device_type(device) != "cpu":
        return "torch", "CUDA runs torch (fp16)"
    if precision != "auto":
        from s2r.encoders.quantize import effective_precision

        if effective_precision(spec, "cpu", precision) == "int8":
            return "torch", "int8"
    if importlib.util.find_spec("onnxruntime") is None:
        return "torch", "onnxruntime is not installed"
    from s2r.encoders.weights import weights_fingerprint

    why = recorded_fallback(Path(settings.cache_dir) / "graphs", spec,
                            weights_fingerprint(spec, settings=settings))
    if why is not None:
        return "torch", f"fell back before: {why}"
    return "onnx", "ONNX Runtime on the CPU"


def planned_runtimes_line(plans: dict) -> Optional[str]:
    """One sentence over ``{encoder id: (runtime, reason)}``: ``"Embeddings run in ONNX
    Runtime on the CPU (torch for: a, b)."``, ``"Embeddings run in torch."``, ... (None for
    no image encoder)."""
    runs = {eid: plan for eid, plan in plans.items() if plan[0] != NO_MODEL}
    torch_ids = [eid for eid, (runtime, _) in runs.items() if runtime == "torch"]
    if not runs:
        return None
    if len(torch_ids) == len(runs):
        reasons = sorted({reason for _, reason in runs.values()})
        return f"Embeddings run in torch ({'; '.join(reasons)})."
    tail = f" (torch for: {', '.join(torch_ids)})" if torch_ids else ""
    return f"Embeddings run in ONNX Runtime on the CPU{tail}."
