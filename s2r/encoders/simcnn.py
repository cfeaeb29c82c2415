"""A small CNN trained on a dataset's *sim* frames only: the control a practitioner compares a
pretrained encoder with ("is a pretrained encoder better than a small one trained on my own
sim frames with augmentation?").

:func:`train_simcnn` fits :class:`SimCNN` to predict the frames' state and/or actions
(z-scored, mean squared error) from the frames alone, with image augmentation at a
``strength`` in [0, 1] (:func:`augmentation`: torchvision ``transforms.v2`` colour,
brightness, blur, noise and small shifts, each scaled by ``strength``; 0 = none). The
encoder is the network without its output layer: normalised ``(B, 3, h, w)`` ->
``(B, dim)`` ReLU features. :func:`save_simcnn` writes it as safetensors (what the
``simcnn`` backend, :mod:`s2r.encoders.backends.simcnn`, loads).

The architecture follows the small "NatureCNN"-style encoders of visuomotor policy learning
(strided 3x3/5x5 convolutions, a flattened feature map, one fully connected layer; e.g.
stable-baselines3 ``torch_layers.NatureCNN``): the flattened map keeps *where* things are,
which a globally pooled CNN discards.

Everything is seeded: initialisation, batch order and augmentation draw from generators
made from ``seed`` (one thread's result is deterministic on one machine).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Optional

import numpy as np
import torch
from torch import nn

from s2r.errors import EncoderError
from s2r.inputs import quoted
from s2r.progress import ProgressCallback, report

__all__ = ["SimCNN", "augmentation", "train_simcnn", "save_simcnn", "read_simcnn_meta",
           "simcnn_tensors", "SimCNNFileError", "SIMCNN_DIM", "SIMCNN_INPUT", "SIMCNN_MEAN",
           "SIMCNN_STD", "SIMCNN_MAX_DIM", "SIMCNN_MAX_SIDE", "SIMCNN_MAX_HEADER",
           "SIMCNN_MAX_BYTES"]

SIMCNN_DIM = 128
#: (height, width) frames are resized to (half the demo's 96 x 128: CPU-fast).
SIMCNN_INPUT = (48, 64)
SIMCNN_MEAN = (0.5, 0.5, 0.5)
SIMCNN_STD = (0.5, 0.5, 0.5)


class SpatialSoftmax(nn.Module):
    """Expected image coordinates of each channel's softmax over the feature map (Levine et al.
    2016; robomimic ``models/base_nets.py`` ``SpatialSoftmax``): ``(B, C, h, w) -> (B, 2C)``
    keypoints in [-1, 1], precise below one feature-map cell."""

    def __init__(self, h: int, w: int):
        super().__init__()
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w),
                                indexing="ij")
        self.register_buffer("grid", torch.stack([xs.reshape(-1), ys.reshape(-1)], 1),
                             persistent=False)

    def forward(self, x):
        b, c = x.shape[:2]
        attention = torch.softmax(x.reshape(b, c, -1), dim=-1)
        return (attention @ self.grid).reshape(b, 2 * c)


class SimCNN(nn.Module):
    """``features``: strided 3x3 convolutions (batch norm, ReLU) to a 1/4-resolution map of
    32 channels, a spatial soft-argmax (one keypoint per channel, :class:`SpatialSoftmax`),
    Linear -> ``dim``, ReLU (the embedding); ``head``: Linear ``dim -> n_out`` (training
    only). Keypoints keep *where* things are, below the map's resolution, which pooling
    would discard."""

    def __init__(self, dim: int = SIMCNN_DIM, n_out: int = 1,
                 input_size: tuple = SIMCNN_INPUT):
        super().__init__()
        h, w = (int(v) for v in input_size)
        h, w = (h + 1) // 2, (w + 1) // 2
        h, w = (h + 1) // 2, (w + 1) // 2
        layers, c_in = [], 3
        for c_out, stride in ((32, 2), (32, 1), (64, 2), (32, 1)):
            layers += [nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1),
                       nn.BatchNorm2d(c_out), nn.ReLU()]
            c_in = c_out
        self.features = nn.Sequential(*layers, SpatialSoftmax(h, w), nn.Linear(64, int(dim)),
                                      nn.ReLU())
        self.head = nn.Linear(int(dim), int(n_out))

    def forward(self, x):
        return self.head(self.features(x))


def augmentation(strength: float):
    """The training augmentation at ``strength`` in [0, 1] (torchvision ``transforms.v2`` on
    uint8 ``(3, H, W)`` tensors); ``None`` at 0.

    At strength ``s``: colour jitter (brightness, contrast, saturation ``0.5 s``, hue
    ``0.1 s``), Gaussian blur (sigma up to ``2 s``, half the frames), shifts up to
    ``8 s`` % of the frame, and Gaussian pixel noise (sigma ``0.06 s``).
    """
    s = float(strength)
    if not 0.0 <= s <= 1.0 or math.isnan(s):
        raise EncoderError(f"--augment: expected a strength in [0, 1], got {strength!r}")
    if s == 0.0:
        return None
    from torchvision.transforms import v2

    return v2.Compose([
        v2.ColorJitter(brightness=0.5 * s, contrast=0.5 * s, saturation=0.5 * s, hue=0.1 * s),
        v2.RandomApply([v2.GaussianBlur(5, sigma=(0.1, max(0.11, 2.0 * s)))], p=0.5),
        v2.RandomAffine(degrees=0, translate=(0.08 * s, 0.08 * s)),
        v2.ToDtype(torch.float32, scale=True),
        v2.GaussianNoise(mean=0.0, sigma=0.06 * s, clip=True),
    ])


def _prepare(frames: np.ndarray, input_size: tuple):
    """uint8 (N, H, W, 3) -> uint8 (N, 3, h, w) tensor at ``input_size`` (the encoder's
    resize: bilinear, antialiased; :meth:`s2r.encoders.build.Encoder.preprocess`)."""
    from torchvision.transforms.v2 import functional as TF

    x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2)
    if tuple(x.shape[-2:]) != tuple(input_size):
        x = TF.resize(x, list(input_size), antialias=True)
    return x.contiguous()


def _normalise(x):
    """uint8 or [0, 1] float ``(B, 3, h, w)`` -> ``(x - mean) / std`` (mean = std = 0.5)."""
    if x.dtype == torch.uint8:
        x = x.float() / 255.0
    return (x - 0.5) / 0.5


def train_simcnn(frames, targets, *, augment: float = 0.0, seed: int = 0, epochs: int = 12,
                 batch_size: int = 64, lr: float = 3e-3, dim: int = SIMCNN_DIM,
                 input_size: tuple = SIMCNN_INPUT,
                 progress: Optional[ProgressCallback] = None) -> tuple[dict, dict]:
    """Train a :class:`SimCNN` to predict ``targets`` from ``frames``.

    Parameters
    ----------
    frames : ndarray (N, H, W, 3) uint8
        Sim frames only.
    targets : ndarray (N, K) float
        What to predict (state and/or actions), z-scored per column here (constant columns
        get scale 1).
    augment : float in [0, 1]
        Augmentation strength (:func:`augmentation`).
    seed : int
        Initialisation, batch order, augmentation.
    epochs, batch_size, lr : int, int, float
        Adam with a cosine learning-rate decay.
    dim : int
        Embedding width.
    input_size : (int, int)
        Frames are resized to it (the encoder does the same).

    Returns
    -------
    state_dict : dict of str -> Tensor
        The encoder's weights (``features.*`` keys without the prefix), CPU float32.
    info : dict
        ``loss`` per epoch (z-scored MSE), ``frames``, ``targets``, ``augment``, ``seed``.
    """
    frames = np.asarray(frames)
    Y = np.asarray(targets, dtype=np.float64)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise EncoderError(f"frames must be uint8 (N, H, W, 3), got {frames.dtype} "
                           f"{frames.shape}")
    if Y.ndim != 2 or len(Y) != len(frames) or Y.shape[1] < 1 or not np.all(np.isfinite(Y)):
        raise EncoderError(f"targets must be finite (N={len(frames)}, K>=1), got {Y.shape}")
    if len(frames) < 2:
        raise EncoderError(f"train-encoder needs at least 2 sim frames, got {len(frames)}")
    aug = augmentation(augment)
    mean, scale = Y.mean(0), Y.std(0)
    scale[scale < 1e-9] = 1.0
    Yt = torch.as_tensor((Y - mean) / scale, dtype=torch.float32)
    X = _prepare(frames, input_size)
    threads = torch.get_num_threads()
    # one thread: these small convolutions gain little from two, and on a shared CPU the
    # second thread's spin-waits made training ~10x slower (measured at load 15-20)
    torch.set_num_threads(1)
    try:
        return _fit(model_args=(dim, Y.shape[1], input_size), X=X, Yt=Yt, aug=aug, seed=seed,
                    epochs=epochs, batch_size=batch_size, lr=lr, progress=progress,
                    info={"frames": int(len(X)), "targets": int(Y.shape[1]),
                          "augment": float(augment), "seed": int(seed), "epochs": int(epochs),
                          "dim": int(dim), "input_size": [int(v) for v in input_size]})
    finally:
        torch.set_num_threads(threads)


def _fit(*, model_args, X, Yt, aug, seed, epochs, batch_size, lr, progress, info):
    dim, n_out, input_size = model_args
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))       # init + v2's random draws (the global generator)
        model = SimCNN(dim=dim, n_out=n_out, input_size=input_size)
        gen = torch.Generator().manual_seed(int(seed))
        opt = torch.optim.Adam(model.parameters(), lr=float(lr))
        steps = int(epochs) * math.ceil(len(X) / int(batch_size))
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, steps))
        losses = []
        model.train()
        for epoch in range(int(epochs)):
            perm = torch.randperm(len(X), generator=gen)
            total, count = 0.0, 0
            for start in range(0, len(X), int(batch_size)):
                idx = perm[start:start + int(batch_size)]
                xb = X[idx]
                if aug is not None:   # one draw per frame (v2 draws once per call)
                    xb = torch.stack([aug(x) for x in xb])
                loss = torch.mean((model(_normalise(xb)) - Yt[idx]) ** 2)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                total, count = total + float(loss.detach()) * len(idx), count + len(idx)
            losses.append(total / count)
            report(progress, epoch + 1, int(epochs),
                   f"simcnn epoch {epoch + 1}/{epochs}: loss {losses[-1]:.3f}")
    model.eval()
    state = {k: v.detach().cpu().float().contiguous()
             for k, v in model.features.state_dict().items()}
    return state, {"loss": losses, **info}


def save_simcnn(path, state_dict: dict, info: dict, *, exclusive: bool = False) -> None:
    """Write the encoder's weights to ``path`` (.safetensors) atomically, ``info`` as the
    file's metadata (JSON under ``"s2r_simcnn"``).

    Written to a new temporary sibling (:func:`s2r.atomic.atomic_path`: a new file gets the
    usual ``0666 & ~umask`` mode, a replaced one keeps its mode), then moved into place.
    ``exclusive``: never replace a file (or link) that is at ``path`` by then: the finished
    file is hard-linked to ``path``, which fails when ``path`` exists (FileExistsError, and
    nothing is written); where the file system has no hard links, ``path`` is checked just
    before the move instead.
    """
    import errno
    import os
    from pathlib import Path

    from safetensors.torch import save

    from s2r.atomic import atomic_path

    path = Path(path)
    # the bytes, written into atomic_path's file (safetensors' save_file would put its own
    # 0600 file in its place)
    data = save(state_dict, metadata={"s2r_simcnn": json.dumps(info)})
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
        if exclusive:
            try:
                # after the link, atomic_path's rename of ``tmp`` onto the same file is a
                # no-op (POSIX rename of two links to one file) and ``tmp`` is removed
                os.link(tmp, path)
            except FileExistsError:
                raise FileExistsError(errno.EEXIST, "exists already", str(path)) from None
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP,
                                     errno.EOPNOTSUPP):
                    raise
                if os.path.lexists(path):
                    raise FileExistsError(errno.EEXIST, "exists already", str(path)) from None


#: Bounds on a simcnn file, checked from its header before a tensor is read or a model is
#: built: the embedding width, each side of the input size, the header (8-byte length +
#: JSON) and the whole file. The controls are 128 wide at 48 x 64 (~0.2 MB).
SIMCNN_MAX_DIM = 4096
SIMCNN_MAX_SIDE = 1024
SIMCNN_MAX_HEADER = 1 << 20
SIMCNN_MAX_BYTES = 64 << 20


def shown(value) -> str:
    """``repr(value)`` for a one-line message about a file's contents: as it is when short
    and printable, else :func:`s2r.inputs.quoted` (cut, escape codes removed)."""
    text = repr(value)
    return text if len(text) <= 100 and text.isprintable() else quoted(text)


class SimCNNFileError(EncoderError):
    """A file that is not a simcnn encoder s2r can load: ``path`` and the ``reason``."""

    def __init__(self, path, reason: str):
        self.path, self.reason = path, reason
        super().__init__(f"{path}: {reason}")


@functools.lru_cache(maxsize=8)
def simcnn_tensors(dim: int) -> dict:
    """Name -> (safetensors dtype, shape) of the tensors a SimCNN encoder file of width
    ``dim`` holds (the same at every input size; all float32, as :func:`train_simcnn` returns
    them), found on the meta device (nothing allocated)."""
    with torch.device("meta"):
        features = SimCNN(dim=int(dim)).features
    return {k: ("F32", list(v.shape)) for k, v in features.state_dict().items()}


def _read_header(path, what: str) -> tuple:
    """(header dict, size of the data after it) of the safetensors file ``path``: its length
    and its JSON bounded before they are read."""
    import os
    import stat

    from s2r.inputs import input_file

    p = input_file(path, what, max_bytes=SIMCNN_MAX_BYTES, error=EncoderError)
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO swapped in: no hang
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SimCNNFileError(path, "not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            if not 2 <= n <= min(SIMCNN_MAX_HEADER, info.st_size - 8):
                shown_n = f"{n:,} bytes" if n >= 0 else "missing"
                raise SimCNNFileError(path, f"not a safetensors file: its header length is "
                                            f"{shown_n}, expected 2 to {SIMCNN_MAX_HEADER:,} "
                                            "bytes within the file")
            raw = f.read(n)
    finally:
        os.close(fd)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):     # UnicodeDecodeError is a ValueError
        raise SimCNNFileError(path, "not a safetensors file: its header is not JSON") from None
    if not isinstance(header, dict):
        raise SimCNNFileError(path, "not a safetensors file: its header is not a JSON object")
    return header, info.st_size - 8 - n


def _check_tensors(path, header: dict, data_bytes: int, dim: int) -> None:
    """The header's tensors are those of a SimCNN of width ``dim`` and fill the file."""
    want = simcnn_tensors(dim)
    got = {k: v for k, v in header.items() if k != "__metadata__"}
    for key in sorted(set(want) | set(got)):
        entry = got.get(key)
        found = (entry.get("dtype"), entry.get("shape")) if isinstance(entry, dict) else None
        if found != want.get(key):
            expected = ("no such tensor" if key not in want
                        else f"{shown(want[key][0])} {want[key][1]}")
            got_text = ("missing" if entry is None else
                        f"{shown(found[0])} {shown(found[1])}" if found else shown(entry))
            raise SimCNNFileError(path, f"its tensors are not those of a {dim}-wide simcnn "
                                        f"encoder: {shown(key)} is {got_text}, expected "
                                        f"{expected}")
    end = 0
    for key, (_dtype, shape) in want.items():
        offsets = got[key].get("data_offsets")
        size = math.prod(shape) * 4
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(v, int) for v in offsets)
                or offsets[1] - offsets[0] != size or not 0 <= offsets[0] <= data_bytes - size):
            raise SimCNNFileError(path, f"tensor {shown(key)} has data offsets "
                                        f"{shown(offsets)} outside the file")
        end = max(end, offsets[1])
    if end != data_bytes:
        raise SimCNNFileError(path, f"its tensors take {end:,} bytes but the file holds "
                                    f"{data_bytes:,}")


def read_simcnn_meta(path, *, what: str = "simcnn file") -> dict:
    """The ``info`` :func:`save_simcnn` stored in ``path``, read from the file's header only
    and checked before a tensor is read or a model is built.

    Checks: a regular file (not a FIFO, device or folder; links are followed) of at most
    :data:`SIMCNN_MAX_BYTES`; a header of at most :data:`SIMCNN_MAX_HEADER` bytes of JSON;
    ``s2r_simcnn`` metadata that is a JSON object with an integer ``dim`` in
    [1, :data:`SIMCNN_MAX_DIM`] and an ``input_size`` of two integers in
    [1, :data:`SIMCNN_MAX_SIDE`]; tensors with the names, dtypes and shapes of that encoder,
    filling the file.

    Raises
    ------
    EncoderError
        One line naming the file and the first thing wrong (:class:`SimCNNFileError` for
        the file's contents).
    """
    header, data_bytes = _read_header(path, what)
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or not isinstance(meta.get("s2r_simcnn"), str):
        raise SimCNNFileError(path, "not written by train-encoder (no s2r_simcnn metadata)")
    try:
        info = json.loads(meta["s2r_simcnn"])
    except (ValueError, RecursionError):
        raise SimCNNFileError(path, "its s2r_simcnn metadata is not JSON: "
                                    f"{quoted(meta['s2r_simcnn'])}") from None
    if not isinstance(info, dict):
        raise SimCNNFileError(path, "its s2r_simcnn metadata is not a JSON object")
    dim, size = info.get("dim"), info.get("input_size")
    if not (isinstance(dim, int) and not isinstance(dim, bool) and 1 <= dim <= SIMCNN_MAX_DIM):
        raise SimCNNFileError(path, f"metadata dim must be an integer in [1, {SIMCNN_MAX_DIM}], "
                                    f"got {shown(dim)}")
    if not (isinstance(size, list) and len(size) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= SIMCNN_MAX_SIDE
                    for v in size)):
        raise SimCNNFileError(path, "metadata input_size must be [height, width], integers in "
                                    f"[1, {SIMCNN_MAX_SIDE}], got {shown(size)}")
    _check_tensors(path, header, data_bytes, dim)
    return info
