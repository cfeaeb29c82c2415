"""Build an encoder from its registry entry: one :class:`Encoder` protocol over every backend
(timm, open_clip, released checkpoints, the packaged EfficientNet-Lite0, raw pixels; each
builds its bare model in :mod:`s2r.encoders.backends`).

Preprocessing policy (the same for every encoder)
-------------------------------------------------
uint8 frames ``(B, H, W, 3)`` -> ``torchvision.transforms.v2.functional.resize`` of the uint8
batch to the entry's ``input_size`` (bilinear, ``antialias=True``) -> float / 255 -> minus
``mean``, divided by ``std``. Frames are *squashed* (240x320 -> 224x224), never cropped: a
robot policy needs the whole workspace (a centre crop would cut the gripper or the objects at
the edges), and one policy for all encoders keeps the comparison fair (the paper's reference
code used a PIL squash for some encoders and timm's resize + centre crop for others).

Speed
-----
CUDA: fp16 weights and inputs, channels_last. CPU: fp32, channels_last for CNNs (faster for
ResNet18 on CPU, see ``bench/bench_encoder_layout.py``); never bf16 autocast on CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn as nn

from s2r.encoders.backend import get_backend
from s2r.encoders.pools import LayerTap, layer_site, resolve_module
from s2r.encoders.registry import get_spec, random_variant
from s2r.encoders.spec import EncoderSpec
from s2r.encoders.weights import fingerprint_of
from s2r.errors import EncoderError
from s2r.settings import embedding_threads


def pick_device():
    """``torch.device("cuda")`` when a GPU is available, else ``torch.device("cpu")``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model(spec: EncoderSpec, *, pretrained: bool, settings=None):
    """The bare embedding module of ``spec`` on CPU (fp32) and its weights file (built by
    the spec's backend).

    A layer encoder (``ID@LAYER``, ``spec.layer`` set) is the trunk the backend builds seen at
    that layer (:class:`~s2r.encoders.pools.LayerTap`).

    Returns
    -------
    (model, path or None)
        ``model(x)`` maps normalised ``(B, 3, h, w)`` to ``(B, spec.dim)``.
    """
    model, path = get_backend(spec.backend).build(spec, pretrained=pretrained,
                                                  settings=settings)
    if spec.layer is not None:
        model = LayerTap(model, layer_site(spec, model))
    return model, path


# ---------------------------------------------------------------------------------------------
# The Encoder module
# ---------------------------------------------------------------------------------------------

def as_uint8_batch(frames):
    """``frames`` as a uint8 ``(B, H, W, 3)`` tensor (numpy arrays are wrapped, read-only
    ones copied); EncoderError naming the dtype/shape otherwise."""
    if isinstance(frames, np.ndarray):
        if frames.dtype != np.uint8:
            raise EncoderError(f"frames must be uint8 (B, H, W, 3); got dtype {frames.dtype} "
                               f"shape {frames.shape}")
        if not frames.flags.writeable:  # torch wants writable memory; copy read-only input
            frames = frames.copy()
        frames = torch.from_numpy(np.ascontiguousarray(frames))
    elif isinstance(frames, torch.Tensor):
        if frames.dtype != torch.uint8:
            raise EncoderError(f"frames must be uint8 (B, H, W, 3); got dtype {frames.dtype} "
                               f"shape {tuple(frames.shape)}")
    else:
        raise EncoderError(f"frames must be a uint8 numpy array or torch tensor of shape "
                           f"(B, H, W, 3); got {type(frames).__name__}")
    if frames.ndim != 4 or frames.shape[-1] != 3 or min(frames.shape) < 1:
        raise EncoderError(f"frames must have shape (B, H, W, 3) with B, H, W >= 1; got "
                           f"{tuple(frames.shape)}")
    return frames


class Encoder(nn.Module):
    """A frozen encoder in eval mode: uint8 frames -> ``(B, D)`` embeddings.

    Attributes
    ----------
    spec : EncoderSpec
        The registry entry (its ``random_init`` says whether the weights are pretrained).
    model : torch.nn.Module
        The bare embedding module (timm model, open_clip image tower, torchvision ResNet...).
    device : torch.device
    dtype : torch.dtype
        ``float16`` on CUDA, ``float32`` otherwise.
    weights_fingerprint : str
        ``sha256:<16 hex>`` of the weights file, ``random:<seed>/...`` for random init,
        ``pixels:v1`` for raw pixels: part of every embedding cache key.
    weights_path : str or None
        The file the weights came from.
    precision : str
        ``"auto"`` (fp16 on CUDA, fp32 elsewhere) or ``"int8"`` (a CPU model quantized by
        :func:`s2r.encoders.quantize.quantize_int8`: no gradients, no saliency).
    runtime : {"torch", "onnx", "auto"}
        What runs :meth:`embed` on the CPU in float32 (:mod:`s2r.encoders.runtime`): torch
        (the default), or ONNX Runtime where the model exports (``onnx`` = ``auto``).
    graph_dir : path or None
        The graph cache folder of ONNX Runtime (None: graphs are kept in memory only).
    threads : int or None
        The threads of :meth:`embed`, torch's and ONNX Runtime's intra-op threads (None:
        torch's as they are, :func:`torch.get_num_threads`).
    """

    def __init__(self, spec: EncoderSpec, model, *, device, weights_fingerprint: str,
                 weights_path: Optional[str] = None, precision: str = "auto",
                 runtime: str = "torch", graph_dir=None, threads: Optional[int] = None):
        from s2r.encoders.runtime import check_runtime

        super().__init__()
        self.spec = spec
        self.model = model
        self.device = torch.device(device)
        self.precision = precision
        if precision == "int8" and self.device.type != "cpu":
            raise EncoderError(f"{spec.id}: an int8 encoder runs on CPU only, not {device}")
        self.dtype = torch.float16 if self.device.type == "cuda" else torch.float32
        self.weights_fingerprint = weights_fingerprint
        self.weights_path = None if weights_path is None else str(weights_path)
        self.channels_last = spec.family == "cnn" or self.device.type == "cuda"
        self.register_buffer("_mean", torch.tensor(spec.mean).view(1, 3, 1, 1),
                             persistent=False)
        self.register_buffer("_std", torch.tensor(spec.std).view(1, 3, 1, 1), persistent=False)
        self.model.requires_grad_(False)
        self.to(self.device)
        if precision != "int8":  # a quantized graph keeps its own packed layout
            self.model.to(dtype=self.dtype)
            if self.channels_last:
                self.model.to(memory_format=torch.channels_last)
        self.runtime = check_runtime(runtime)
        self.graph_dir, self.threads = graph_dir, threads
        self._grid_size = None
        self._inference_model = None
        self._graphs: dict = {}
        super().train(False)

    def train(self, mode: bool = True):
        """Encoders stay in eval mode (frozen BatchNorm statistics, no dropout)."""
        return super().train(False)

    def __repr__(self) -> str:
        precision = "" if self.precision == "auto" else f", precision={self.precision}"
        return (f"Encoder({self.spec.id!r}, dim={self.spec.dim}, device={self.device}, "
                f"weights={self.weights_fingerprint}{precision})")

    @property
    def input_size(self) -> tuple:
        """(height, width) frames are resized to."""
        return self.spec.input_size

    @property
    def dim(self) -> int:
        """Embedding dimension D."""
        return self.spec.dim

    @property
    def cam_layer(self):
        """The Grad-CAM layer (``spec.cam_layer`` inside :attr:`model`); ``None`` for pixels."""
        if self.spec.cam_layer is None:
            return None
        if self.precision == "int8":
            raise EncoderError(f"{self.spec.id}: an int8 encoder has no gradients for "
                               "saliency; build the encoder in its native precision")
        return resolve_module(self.model, self.spec.cam_layer)

    @property
    def num_prefix_tokens(self) -> int:
        """Tokens before the patch grid in the cam layer's (B, N, C) output (CLS + registers);
        0 for CNN, Swin and pixels."""
        if self.spec.family == "vit":
            return int(getattr(self.model, "num_prefix_tokens", 1))
        if self.spec.family == "clip":
            return 1
        return 0

    @property
    def grid_size(self) -> tuple:
        """(h, w) of the cam layer's token/feature grid at :attr:`input_size`."""
        if self._grid_size is None:
            self._grid_size = self._compute_grid_size()
        return self._grid_size

    def _compute_grid_size(self) -> tuple:

        family = self.spec.family
        if family == "pixels":
            return tuple(self.input_size)
        if family == "vit" and hasattr(self.model, "patch_embed"):
            return tuple(int(v) for v in self.model.patch_embed.grid_size)
        if family == "clip" and hasattr(self.model, "grid_size"):
            return tuple(int(v) for v in self.model.grid_size)
        seen = []
        handle = self.cam_layer.register_forward_hook(lambda m, i, o: seen.append(
            (o[0] if isinstance(o, (tuple, list)) else o).shape))
        try:
            with torch.inference_mode():
                self.forward(torch.zeros(1, 3, *self.input_size, device=self.device))
        finally:
            handle.remove()
        shape = seen[-1]
        if family == "swin":
            return int(shape[1]), int(shape[2])
        return int(shape[-2]), int(shape[-1])

    def preprocess(self, frames):
        """uint8 frames ``(B, H, W, 3)`` (numpy or tensor) -> normalised ``(B, 3, h, w)`` on
        :attr:`device`, dtype :attr:`dtype` (the one resize policy of the module docstring)."""
        from torchvision.transforms.v2 import functional as TF

        x = as_uint8_batch(frames).to(self.device, non_blocking=True).permute(0, 3, 1, 2)
        if tuple(x.shape[-2:]) != tuple(self.input_size):
            x = TF.resize(x, list(self.input_size), antialias=True)
        x = (x.float() / 255.0 - self._mean) / self._std
        x = x.to(self.dtype)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    def forward(self, x, *, model=None):
        """Normalised ``(B, 3, h, w)`` -> pooled embedding ``(B, D)`` (differentiable w.r.t.
        ``x``; the weights are frozen). ``model``: the module to run (default :attr:`model`)."""

        if x.ndim != 4 or x.shape[1] != 3:
            raise EncoderError(f"{self.spec.id}: forward expects (B, 3, h, w); got "
                               f"{tuple(x.shape)} (use embed() for uint8 frames)")
        x = x.to(device=self.device, dtype=self.dtype)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        out = (self.model if model is None else model)(x)
        if out.ndim != 2:
            out = out.flatten(1)
        return out

    def embed(self, frames, *, batch_size: Optional[int] = None) -> np.ndarray:
        """uint8 frames ``(B, H, W, 3)`` -> embeddings ``(B, D)`` float32 (no gradients).

        Parameters
        ----------
        frames : ndarray or Tensor, uint8, shape (B, H, W, 3)
        batch_size : int, optional
            Split into chunks of this many frames (bounds memory); default: one pass.
        """

        from s2r.encoders.runtime import torch_threads

        frames = as_uint8_batch(frames)
        step = len(frames) if batch_size is None else int(batch_size)
        if step < 1:
            raise EncoderError(f"batch_size must be >= 1, got {batch_size!r}")
        outs = []
        with torch.inference_mode(), torch_threads(self.threads):
            for start in range(0, len(frames), step):
                x = self.preprocess(frames[start:start + step])
                out = self.forward(x, model=self.inference_model(x[:1]))
                outs.append(out.float().cpu().numpy())
        return np.concatenate(outs, axis=0).astype(np.float32, copy=False)

    @property
    def runs_graphs(self) -> bool:
        """Whether :meth:`embed` runs ONNX Runtime graphs: a runtime other than torch, on the
        CPU in float32 (precision auto), for a model worth a graph
        (:func:`s2r.encoders.runtime.has_graph`). Part of the embeddings cache key when
        true."""
        from s2r.encoders.runtime import has_graph

        return (self.runtime != "torch" and self.device.type == "cpu"
                and self.dtype == torch.float32 and self.precision == "auto"
                and has_graph(self.spec))

    def inference_model(self, example=None):
        """What :meth:`embed` runs: :meth:`folded_model`, as an ONNX Runtime graph when
        :attr:`runs_graphs` and it exports (:meth:`graph`)."""
        module = self.folded_model(example)
        if example is None or not self.runs_graphs:
            return module
        return self.graph(module, example)

    def graph(self, module, example, *, outputs: str = "embed"):
        """``module`` (:attr:`model`, its folded copy or a wrapper of it named by ``outputs``)
        as an ONNX Runtime graph (:func:`s2r.encoders.runtime.onnx_model`: cached on disk in
        :attr:`graph_dir`, made once per process); ``module`` itself when it does not export
        (one warning line says why)."""
        from s2r.encoders.runtime import graph_key, onnx_model

        if outputs not in self._graphs:
            key = graph_key(self.spec, self.weights_fingerprint, tuple(example.shape), outputs)
            made = onnx_model(module, example, name=self.spec.id, key=key,
                              graph_dir=self.graph_dir, threads=self.threads)
            self._graphs[outputs] = module if made is None else made
        return self._graphs[outputs]

    def folded_model(self, example=None):
        """The torch module :meth:`embed` runs: on CPU in float32, a copy of :attr:`model`
        with its BatchNorms folded into their convolutions
        (:func:`s2r.encoders.fuse.fold_batchnorm`, made on the first call from ``example``, a
        normalised batch); else :attr:`model`. Gradients and saliency always use
        :attr:`model` itself."""
        from s2r.encoders.fuse import fold_batchnorm

        if self._inference_model is None:
            if (example is None or self.precision == "int8" or self.dtype != torch.float32
                    or self.device.type != "cpu"):
                return self.model
            # kept out of the module registry: the copy is a cache, not part of the encoder's
            # state_dict, parameters or device moves
            object.__setattr__(self, "_inference_model", fold_batchnorm(self.model, example)[0])
        return self._inference_model


def build_encoder(id_or_spec, *, device=None, pretrained: Optional[bool] = None,
                  settings=None, runtime: Optional[str] = None,
                  threads: Optional[int] = None) -> Encoder:
    """Build a frozen :class:`Encoder` from a registry id or spec.

    Parameters
    ----------
    id_or_spec : str or EncoderSpec
        Registry id (``"resnet18"``, ``"resnet18@random"``, ``"timm:convnext_tiny"``...).
    device : str or torch.device, optional
        Default :func:`pick_device`.
    pretrained : bool, optional
        ``None``: pretrained unless the entry is a random-init control; ``False``: the
        entry's ``@random`` control (so the returned ``spec`` is labelled honestly);
        ``True`` on a random entry is an error.
    settings : s2r.settings.Settings, optional
        Handed down by the caller: where weights files are (needed for entries whose weights
        are a file: TypeError without), the user config (``$S2R_ENCODERS``), the runtime
        (``$S2R_RUNTIME``) and the graph cache (``<cache_dir>/graphs``).
    runtime : {"torch", "onnx", "auto"}, optional
        What runs the embedding pass on the CPU (:mod:`s2r.encoders.runtime`); default the
        settings' ``runtime``, else ``"torch"``.
    threads : int, optional
        The embedding pass's threads, torch's and ONNX Runtime's; default the settings'
        (``$S2R_THREADS``, :func:`s2r.settings.embedding_threads`: every core this process
        may use), else torch's as they are.

    Raises
    ------
    EncoderError
        Unknown id; an entry without an image model (the ``state`` reference); weights
        missing (the message says how to get them); a checkpoint that does not match the
        architecture.
    """
    spec = get_spec(id_or_spec, settings=settings)
    if not spec.has_image_model:
        raise EncoderError(
            f"encoder {spec.id!r} has no image model to build: its embedding is the dataset's "
            "robot state, so saliency and anything else that runs a model on frames cannot "
            "use it (embed, score and project can)")
    if pretrained is False and not spec.random_init and not get_backend(spec.backend).weightless:
        spec = random_variant(spec)
    if pretrained is True and spec.random_init:
        raise EncoderError(f"{spec.id} is a random-init control; pretrained=True asks for "
                           f"the weights of {spec.base_id!r} instead")
    model, path = build_model(spec, pretrained=not spec.random_init, settings=settings)
    fingerprint = fingerprint_of(spec, path)
    if runtime is None:
        runtime = getattr(settings, "runtime", "torch")
    graph_dir = None if settings is None else Path(settings.cache_dir) / "graphs"
    if threads is None and settings is not None:
        threads = embedding_threads(settings.threads)
    return Encoder(spec, model, device=device if device is not None else pick_device(),
                   weights_fingerprint=fingerprint, weights_path=path, runtime=runtime,
                   graph_dir=graph_dir, threads=threads)
