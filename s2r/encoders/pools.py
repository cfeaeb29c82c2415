"""How a layer of an encoder's trunk becomes a vector: the pooling of each kind of layer output
(:data:`POOLS`, described in :mod:`s2r.encoders.taps`), the tap sites backends declare, and
:class:`LayerTap`, an encoder's trunk seen at one tap (the model of an ``ID@LAYER`` encoder,
:mod:`s2r.encoders.registry`).

Below the builder (:mod:`s2r.encoders.build` wraps a layer encoder's model here) and the layer
taps (:mod:`s2r.encoders.taps` pools every tap with the same functions), so an ``ID@LAYER``
encoder's embedding is, by construction, that layer's tap.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import torch.nn as nn

from s2r.encoders.backend import get_backend
from s2r.errors import EncoderError
from s2r.inputs import is_integer_text

__all__ = ["POOLS", "TRUNK", "LayerTap", "TapSite", "layer_site", "module_output",
           "resolve_module"]

#: Attribute of :class:`LayerTap` holding the encoder's trunk (the prefix of a layer
#: encoder's ``cam_layer``).
TRUNK = "trunk"


@dataclass(frozen=True)
class TapSite:
    """A tap a backend declares: ``name`` (what users type), ``module`` (dotted path inside the
    encoder's ``model``, :func:`~s2r.encoders.build.resolve_module`) and ``pool`` (a key of
    :data:`POOLS`)."""

    name: str
    module: str
    pool: str


def _avg(model, x):
    return x.float().mean(dim=(2, 3))


def _nhwc(model, x):
    return x.float().mean(dim=(1, 2))


def _timm_head(model, x):
    return model.forward_head(model.norm(x), pre_logits=True).float()


def _clip_head(model, x):
    pooled, _ = model._pool(x)
    if getattr(model, "proj", None) is not None:
        pooled = pooled @ model.proj
    return pooled.float()


@functools.lru_cache(maxsize=16)
def _soft_argmax(h: int, w: int):
    from s2r.encoders.simcnn import SpatialSoftmax

    return SpatialSoftmax(h, w)


def _keypoints(model, x):
    pool = _soft_argmax(int(x.shape[-2]), int(x.shape[-1])).to(x.device)
    return pool(x.float())


#: pool key -> ``pool(model, output) -> (B, D)`` (``model``: the module being run).
POOLS: dict = {"avg": _avg, "nhwc": _nhwc, "timm-head": _timm_head, "clip-head": _clip_head,
               "keypoints": _keypoints}


def module_output(out):
    """A module's output tensor (the first of a tuple)."""
    return out[0] if isinstance(out, (tuple, list)) else out


def resolve_module(root, path: str):
    """The submodule of ``root`` at dotted ``path``; integer parts index (``-1`` = last).

    >>> resolve_module(model, "layer4.-1")        # doctest: +SKIP
    """
    module = root
    for part in path.split("."):
        try:
            if is_integer_text(part):
                module = list(module.children())[int(part)] if not hasattr(
                    module, "__getitem__") else module[int(part)]
            else:
                module = getattr(module, part)
        except (AttributeError, IndexError, TypeError):
            children = [name for name, _ in module.named_children()]
            raise EncoderError(f"layer path {path!r}: no submodule {part!r} in "
                               f"{type(module).__name__} (children: {children[:12]})") from None
    return module


def layer_site(spec, model: nn.Module) -> TapSite:
    """The tap site named ``spec.layer`` among those ``spec``'s backend declares for ``model``
    (the bare embedding module); EncoderError naming the encoder and its layers otherwise."""
    sites = tuple(get_backend(spec.backend).tap_sites(spec, model))
    for site in sites:
        if site.name == spec.layer:
            return site
    names = ", ".join(s.name for s in sites) or "none but its embedding"
    raise EncoderError(f"encoder {spec.id!r}: its architecture has no layer {spec.layer!r}; "
                       f"its layers: {names}")


class _Reached(Exception):
    """Raised by :class:`LayerTap`'s hook once the tapped layer has run (the rest is unused)."""


class LayerTap(nn.Module):
    """``trunk`` seen at one tap: ``forward(x) -> (B, D)``, the output of ``site.module``
    pooled by ``POOLS[site.pool]``, exactly what the layer taps compute for that layer
    (:class:`s2r.encoders.taps.LayerEmbedder`: the same hook on the same module, the same
    pooling).

    In eager mode the pass stops once the layer has run (the layers after it never run);
    while traced (the ONNX export, :mod:`s2r.encoders.runtime`) it runs whole, since a trace
    cut short by an exception records a wrong graph, and the exporter drops the unused layers.
    The hook is registered on each call, after any hook already there (Grad-CAM's), so it
    reads the output that hook hands on.
    """

    def __init__(self, trunk: nn.Module, site: TapSite):
        super().__init__()
        self.trunk, self.site = trunk, site

    def forward(self, x):
        got = []
        stop = not torch.jit.is_tracing()

        def hook(module, inputs, output):
            got.append(module_output(output))
            if stop:
                raise _Reached

        handle = resolve_module(self.trunk, self.site.module).register_forward_hook(hook)
        try:
            self.trunk(x)
        except _Reached:
            pass
        finally:
            handle.remove()
        return POOLS[self.site.pool](self.trunk, got[-1])
