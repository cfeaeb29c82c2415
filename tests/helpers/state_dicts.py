"""Random state_dicts with a model's exact key names and shapes (checkpoint tests)."""

from __future__ import annotations

import torch


def synthetic(make, seed=0) -> dict:
    """A state_dict with ``make()``'s exact key names and shapes, random values (the model is
    built on the meta device, so this costs only the random numbers)."""
    with torch.device("meta"):
        model = make()
    # Random values from one 1M-number draw, offset per tensor (a full randn of ViT-B's 86M
    # numbers costs seconds); every tensor still differs from every other.
    base = torch.randn(1 << 20, generator=torch.Generator().manual_seed(seed)) * 0.05
    out = {}
    for i, (key, value) in enumerate(model.state_dict().items()):
        if value.dtype.is_floating_point:
            n = value.numel()
            flat = base[:n] if n <= base.numel() else base.repeat(-(-n // base.numel()))[:n]
            t = (flat + (i + 1) * 1e-3).reshape(value.shape)
            out[key] = t.abs() + 0.5 if key.endswith("running_var") else t
        else:
            out[key] = torch.zeros(value.shape, dtype=value.dtype)
    return out
