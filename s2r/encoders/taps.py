"""The layers of an encoder ("taps"): named points of its trunk, each pooled to a vector the way
the encoder's own head pools its final embedding, all embedded in one forward pass.

A backend names its taps (:meth:`s2r.encoders.backend.Backend.tap_sites`): timm models the
modules of their ``feature_info`` (what timm's own ``features_only`` and
``forward_intermediates`` tap: ResNet's ``act1``, ``layer1``-``layer4``; EfficientNet's and
MobileNetV3's stage ends ``blocks.0``, ``blocks.1``, ``blocks.2``, ``blocks.4``,
``blocks.6``; every ViT block); open_clip's image tower its ``transformer.resblocks.i``;
the torchvision ResNets of released checkpoints their stem and ``layer1``-``layer4``; the
``simcnn`` controls their four convolution blocks; ``pixels`` and ``state`` have one layer,
their embedding. The planner (:func:`plan_layers`) adds the **final** tap, the encoder's
embedding itself (exactly what :meth:`~s2r.encoders.build.Encoder.embed` returns), and drops a
tap whose pooled output *is* the embedding (ResNet's ``layer4``, a ViT's last block: the final
tap then takes its name). Every other final tap is named ``head`` (EfficientNet's
``conv_head``/``bn2``, MobileNetV3's pooled ``conv_head``, VGG's ``pre_logits``).

Pooling (:data:`POOLS`), as the encoder's head makes its embedding:

``avg``
    feature maps ``(B, C, h, w)``: the global average (timm's ``SelectAdaptivePool2d('avg')``,
    torchvision's ``AdaptiveAvgPool2d(1)``);
``nhwc``
    Swin's ``(B, h, w, C)`` stage outputs: the average over ``h, w`` (timm's
    ``ClassifierHead(input_fmt='NHWC')``); the stages differ in width, so the final norm is
    the final tap's alone;
``timm-head``
    a timm ViT block's tokens ``(B, N, C)``: the model's final ``norm``, then its own
    ``forward_head(..., pre_logits=True)`` (CLS token or token mean per ``global_pool``,
    ``num_prefix_tokens`` dropped from a mean, ``fc_norm``): timm's
    ``VisionTransformer.forward_intermediates(norm=True)`` followed by ``forward_head``
    (timm 1.0, ``timm/models/vision_transformer.py``), as DINOv2 reads its intermediate layers
    (``get_intermediate_layers(norm=True)``, facebookresearch/dinov2
    ``dinov2/models/vision_transformer.py``);
``clip-head``
    an open_clip resblock's tokens: the tower's own ``_pool`` (``ln_post`` and the CLS token,
    or the mean, per ``pool_type``) and ``proj`` (open_clip 3.x
    ``open_clip/transformer.py``, ``VisionTransformer.forward`` /
    ``forward_intermediates(normalize_intermediates=True)``);
``keypoints``
    a ``simcnn`` block's map: the spatial soft-argmax of its head
    (:class:`s2r.encoders.simcnn.SpatialSoftmax`) on that map's own grid.

Relative depth: the share of the encoder's weighted layers (modules holding a weight of two or
more dimensions: convolutions, linear and attention projections, embeddings) that have run
when the tap's output is made; the final tap is 1.

A plan depends on the architecture only, so :func:`layer_plan` makes it once per architecture
from a seeded random-init copy on the CPU (one forward pass of two frames) and keeps it for
the process; :mod:`s2r.embed.layers` also keeps it in the disk cache.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import SimpleNamespace
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn as nn

from s2r.encoders.backend import get_backend
from s2r.encoders.build import as_uint8_batch, build_model
from s2r.encoders.pools import POOLS, TapSite, module_output, resolve_module
from s2r.encoders.runtime import torch_threads
from s2r.errors import EncoderError
from s2r.inputs import quoted

__all__ = ["TAPS_VERSION", "FINAL_NAME", "LAST", "Tap", "TapSite", "POOLS", "plan_layers",
           "architecture_signature", "layer_plan", "select_layers", "LayerEmbedder",
           "LayerView", "layer_view"]

#: Bump when which taps a backend names, how they are pooled or how depth is counted changes
#: (part of every intermediate layer's cache key and of the plan's).
TAPS_VERSION = 1
#: Name of a final tap that is not a named module's pooled output.
FINAL_NAME = "head"
#: What ``--layers`` and :func:`select_layers` accept for "each encoder's final layer".
LAST = "last"


@dataclass(frozen=True)
class Tap:
    """One layer of an encoder's plan.

    Attributes
    ----------
    name : str
        Unique within the encoder (``blocks.4``, ``layer3``, ``head``).
    index : int
        0 for the shallowest; the final tap is the last.
    depth : float
        Relative depth in [0, 1] (see the module docstring); 1 for the final tap.
    final : bool
        The encoder's own embedding (its cache key is the plain embeddings key).
    dim : int or None
        Width of the pooled vector (None: the ``state`` reference, the dataset's).
    module : str or None
        Dotted path of the hooked module (None for the final tap: the model's output).
    pool : str or None
        Key of :data:`POOLS` (None for the final tap).
    """

    name: str
    index: int
    depth: float
    final: bool
    dim: Optional[int]
    module: Optional[str] = None
    pool: Optional[str] = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Tap":
        return cls(name=str(data["name"]), index=int(data["index"]),
                   depth=float(data["depth"]), final=bool(data["final"]),
                   dim=None if data.get("dim") is None else int(data["dim"]),
                   module=data.get("module"), pool=data.get("pool"))


def _weighted(module: nn.Module) -> bool:
    return any(p.ndim >= 2 for p in module.parameters(recurse=False))


# ----------------------------------------------------------------------------- planning
def plan_layers(spec, model: nn.Module, *, seed: int = 0) -> tuple:
    """The taps of ``model`` (the bare embedding module of ``spec``, CPU, eval mode).

    One forward pass of two seeded random inputs at ``spec.input_size`` records each site's
    pooled width, the weighted layers run before it, and whether its pooled output equals the
    model's output (then the final tap takes its name and module).

    Returns
    -------
    tuple of Tap
        Shallowest first; the last is the final tap.
    """
    sites = tuple(get_backend(spec.backend).tap_sites(spec, model))
    names = [s.name for s in sites]
    if len(set(names)) != len(names) or FINAL_NAME in names or LAST in names:
        raise EncoderError(f"{spec.id}: its backend names taps {names}: names must be unique "
                           f"and not {FINAL_NAME!r} or {LAST!r}")
    count = [0]
    seen: dict = {}
    handles = []

    def counter(module, inputs, output):
        count[0] += 1

    def capture(site):
        def hook(module, inputs, output):
            seen[site.name] = (POOLS[site.pool](model, module_output(output)).detach().double(),
                               count[0])
        return hook

    try:
        for module in model.modules():
            if _weighted(module):
                handles.append(module.register_forward_hook(counter))
        for site in sites:
            if site.pool not in POOLS:
                raise EncoderError(f"{spec.id}: tap {site.name!r} pools by {site.pool!r}; "
                                   f"known: {', '.join(POOLS)}")
            handles.append(resolve_module(model, site.module).register_forward_hook(
                capture(site)))
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(2, 3, *(int(v) for v in spec.input_size), generator=gen)
        with torch.inference_mode():
            final = module_output(model(x)).flatten(1).double()
    finally:
        for h in handles:
            h.remove()
    missing = [s.name for s in sites if s.name not in seen]
    if missing:
        raise EncoderError(f"{spec.id}: taps {missing} never ran in a forward pass")
    total = max(count[0], 1)
    taps, final_name, final_module = [], FINAL_NAME, None
    for i, site in enumerate(sites):
        pooled, at = seen[site.name]
        last = i == len(sites) - 1
        if last and pooled.shape == final.shape and torch.allclose(
                pooled, final, rtol=0.0, atol=1e-4 * float(final.abs().max() or 1.0)):
            final_name, final_module = site.name, site.module
            continue
        taps.append(Tap(site.name, len(taps), min(at / total, 1.0), False,
                        int(pooled.shape[1]), site.module, site.pool))
    if not sites:
        final_name = get_backend(spec.backend).final_tap
    taps.append(Tap(final_name, len(taps), 1.0, True,
                    int(final.shape[1]), final_module, None))
    return tuple(taps)


def architecture_signature(spec) -> tuple:
    """What a plan depends on: the architecture, the layer it is seen at (a layer encoder's
    plan is one layer, its embedding), its input and output size (and :data:`TAPS_VERSION`).
    The layer is named only when set, so every other encoder's signature is what it was."""
    ck = spec.checkpoint
    seen_at = () if spec.layer is None else (("layer", spec.layer),)
    return (spec.backend, spec.identifier, spec.tag, tuple(spec.model_kwargs),
            None if ck is None else ck.arch, tuple(spec.input_size or ()), spec.dim,
            spec.family, *seen_at, TAPS_VERSION)


_PLANS: dict = {}


def layer_plan(spec, settings=None, *, make=None) -> tuple:
    """The taps of the encoder ``spec`` (an :class:`~s2r.encoders.spec.EncoderSpec`), made
    once per architecture and process from a seeded random-init copy (:func:`plan_layers`;
    the ``state`` reference: one tap, ``state``). ``make``: ``make(compute) -> plan``, where
    ``compute() -> plan`` builds it (e.g. a look-up in a disk cache first)."""
    if not spec.has_image_model:
        return (Tap(get_backend(spec.backend).final_tap, 0, 1.0, True, None),)
    sig = architecture_signature(spec)
    if sig not in _PLANS:
        def compute() -> tuple:
            model, _ = build_model(spec, pretrained=False, settings=settings)
            return plan_layers(spec, model.eval().float())

        _PLANS[sig] = tuple(make(compute) if make is not None else compute())
    return _PLANS[sig]


def select_layers(plan: Sequence[Tap], request, *, encoder: str = "encoder") -> tuple:
    """The taps of ``plan`` that ``request`` names, in plan order.

    Parameters
    ----------
    request : "all", "last" or sequence of str
        Names of taps; ``"last"`` among them is the final tap.

    Raises
    ------
    EncoderError
        A name the plan does not hold: one line naming the encoder and all its layers.
    """
    if request == "all":
        return tuple(plan)
    names = [LAST] if request in (None, LAST) else list(request)
    known = {t.name: t for t in plan}
    unknown = [n for n in names if n != LAST and n not in known]
    if unknown:
        shown = ", ".join(quoted(str(n)) for n in unknown[:5]) + (
            f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise EncoderError(f"{encoder} has no layer {shown}; its layers: "
                           f"{', '.join(t.name for t in plan)} (or {LAST!r}, 'all')")
    wanted = {plan[-1].name if n == LAST else n for n in names}
    return tuple(t for t in plan if t.name in wanted)


# ----------------------------------------------------------------------------- embedding
def _run_with_taps(enc, model, taps, x, got: dict):
    """``enc.forward(x, model=model)``, each non-final tap's pooled output put in ``got``."""
    handles = []

    def capture(tap):
        def hook(module, inputs, output):
            got[tap.name] = POOLS[tap.pool](model, module_output(output))
        return hook

    try:
        for tap in taps:
            if not tap.final:
                handles.append(resolve_module(model, tap.module).register_forward_hook(
                    capture(tap)))
        return enc.forward(x, model=model) if enc is not None else module_output(model(x))
    finally:
        for h in handles:
            h.remove()


class TapOutputs(nn.Module):
    """``model`` with its taps as outputs: ``(embedding (B, D), pooled tap 1, ...)`` (what
    ONNX Runtime runs as one graph, :meth:`~s2r.encoders.build.Encoder.graph`)."""

    def __init__(self, model: nn.Module, taps: Sequence[Tap]):
        super().__init__()
        self.model, self.taps = model, tuple(taps)

    def forward(self, x):
        got: dict = {}
        out = _run_with_taps(None, self.model, self.taps, x, got)
        return (out.flatten(1), *(got[t.name] for t in self.taps))


class LayerEmbedder:
    """Embeds frames at several taps of a built encoder in one forward pass.

    ``embed(frames) -> (B, sum of the taps' widths) float32``: the taps' pooled vectors side by
    side in the order of ``taps`` (:attr:`offsets` splits them), so the embedding loop's batching
    and out-of-memory back-off (:mod:`s2r.embed.backoff`) apply unchanged. The final tap's
    columns are exactly :meth:`~s2r.encoders.build.Encoder.embed`'s (the same module on the same
    batch; the hooks only read).
    """

    def __init__(self, encoder, taps: Sequence[Tap]):
        if getattr(encoder, "precision", "auto") == "int8":
            raise EncoderError(f"{encoder.spec.id}: layers are embedded in full precision "
                               "only (the int8 graph has no named layers); use precision auto")
        self.encoder, self.taps = encoder, tuple(taps)
        self.device = encoder.device
        self.offsets = np.cumsum([0, *(int(t.dim) for t in self.taps)])
        # what the embedding loop reads of an encoder: its id, its (total) width, its batch
        self.spec = SimpleNamespace(id=encoder.spec.id, dim=int(self.offsets[-1]),
                                    batch_size=getattr(encoder.spec, "batch_size", None))

    def embed(self, frames) -> np.ndarray:
        enc = self.encoder
        frames = as_uint8_batch(frames)
        got: dict = {}
        with torch.inference_mode(), torch_threads(getattr(enc, "threads", None)):
            x = enc.preprocess(frames)
            model = enc.folded_model(x[:1])
            if getattr(enc, "runs_graphs", False):   # ONNX Runtime: the taps are graph outputs
                inner = [t for t in self.taps if not t.final]
                outputs = "taps:" + ",".join(f"{t.module}/{t.pool}" for t in inner)
                outs = enc.graph(TapOutputs(model, inner), x[:1], outputs=outputs)(x)
                got = {t.name: o for t, o in zip(inner, outs[1:])}
                out = outs[0]
            else:
                out = _run_with_taps(enc, model, self.taps, x, got)
            cols = [out.float() if t.final else got[t.name].float() for t in self.taps]
            return torch.cat(cols, dim=1).cpu().numpy().astype(np.float32, copy=False)

    def split(self, Z: np.ndarray) -> dict:
        """``{tap name: its columns of Z}``."""
        return {t.name: Z[:, a:b] for t, a, b in zip(self.taps, self.offsets[:-1],
                                                       self.offsets[1:])}


class LayerView:
    """An encoder seen at one intermediate tap, for saliency: ``view(x) -> (B, tap width)``
    (differentiable; the tap's pooled output) and ``cam_layer`` = the tap's module, so
    Grad-CAM runs *at that layer* (:func:`s2r.saliency.compute_saliency` takes it as it takes an
    encoder). ``preprocess``, ``spec``, ``device``, ``num_prefix_tokens`` are the encoder's.
    """

    def __init__(self, encoder, tap: Tap):
        self.encoder, self.tap = encoder, tap
        self.spec, self.device, self.dtype = encoder.spec, encoder.device, encoder.dtype
        self.cam_layer = resolve_module(encoder.model, tap.module)
        self.num_prefix_tokens = encoder.num_prefix_tokens
        self._grid = None

    def preprocess(self, frames):
        return self.encoder.preprocess(frames)

    @property
    def grid_size(self) -> tuple:
        """(h, w) of the tap's token or feature grid."""
        if self._grid is None:
            if self.spec.family in ("vit", "clip"):
                self._grid = tuple(self.encoder.grid_size)
            else:
                shape = []
                h = self.cam_layer.register_forward_hook(
                    lambda m, i, o: shape.append(module_output(o).shape))
                try:
                    with torch.inference_mode():
                        self.encoder.forward(torch.zeros(1, 3, *self.encoder.input_size,
                                                         device=self.device))
                finally:
                    h.remove()
                s = shape[-1]
                self._grid = ((int(s[1]), int(s[2])) if self.spec.family == "swin"
                              else (int(s[-2]), int(s[-1])))
        return self._grid

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        got = []
        # registered now, after any Grad-CAM hook on the same module, so it reads the output
        # that hook hands on (the gradient then flows through Grad-CAM's grid)
        h = self.cam_layer.register_forward_hook(lambda m, i, o: got.append(module_output(o)))
        try:
            self.encoder.forward(x)
        finally:
            h.remove()
        return POOLS[self.tap.pool](self.encoder.model, got[-1])

    def __repr__(self) -> str:
        return f"LayerView({self.spec.id!r} at {self.tap.name!r})"


def layer_view(encoder, layer) -> object:
    """``encoder`` seen at ``layer`` (a :class:`Tap` or a name of its plan): the encoder itself
    for the final tap (its registry Grad-CAM layer, today's maps), else a :class:`LayerView`."""
    tap = layer if isinstance(layer, Tap) else select_layers(
        layer_plan(encoder.spec), [layer], encoder=encoder.spec.id)[0]
    return encoder if tap.final else LayerView(encoder, tap)

