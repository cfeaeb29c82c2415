"""Stand-ins for the embedding tests: an encoder that follows the Encoder protocol without a
model library, a lazy image source that counts its reads, and a per-batch reference."""

from __future__ import annotations

import threading
import weakref
from types import SimpleNamespace

import numpy as np
import torch

from s2r.frameset import FrameSet


class StandInEncoder(torch.nn.Module):
    """Follows the Encoder protocol: preprocess, forward, embed, spec, device, fingerprint.

    ``oom_above``: ``embed`` raises an out-of-memory error for batches larger than this.
    """

    def __init__(self, dim=6, *, oom_above=None, oom_error=None, nan_at=None):
        super().__init__()
        self.spec = SimpleNamespace(id="stand-in", dim=dim, family="cnn", name="Stand-in")
        self.device = torch.device("cpu")
        self.weights_fingerprint = "stand-in-weights-v1"
        gen = torch.Generator().manual_seed(0)
        self.proj = torch.nn.Linear(3 * 4 * 4, dim)
        with torch.no_grad():
            self.proj.weight.copy_(torch.randn(dim, 48, generator=gen))
            self.proj.bias.copy_(torch.randn(dim, generator=gen))
        self.oom_above = oom_above
        self.oom_error = oom_error or torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB")
        self.nan_at = nan_at
        self.calls: list[int] = []  # batch sizes embed was called with

    def preprocess(self, frames):
        x = torch.as_tensor(np.asarray(frames)).permute(0, 3, 1, 2).float() / 255.0
        return torch.nn.functional.adaptive_avg_pool2d(x, (4, 4))

    def forward(self, x):
        return self.proj(x.flatten(1))

    def embed(self, frames):
        self.calls.append(int(frames.shape[0]))
        if self.oom_above is not None and frames.shape[0] > self.oom_above:
            raise self.oom_error
        with torch.no_grad():
            z = self.forward(self.preprocess(frames)).numpy().astype(np.float32)
        if self.nan_at is not None:
            z[min(self.nan_at, len(z) - 1)] = np.nan
        return z


class CountingSource:
    """Lazy frames computed from their index; counts frames alive in returned arrays."""

    def __init__(self, n, h=8, w=8):
        self.shape = (n, h, w, 3)
        self.alive = 0
        self.max_alive = 0
        self.reads = 0
        self._lock = threading.Lock()

    def _release(self, k):
        with self._lock:
            self.alive -= k

    def read(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        n, h, w, _ = self.shape
        base = (idx[:, None, None, None] * 7 + np.arange(h * w * 3).reshape(1, h, w, 3) * 13)
        frames = (base % 251).astype(np.uint8)
        with self._lock:
            self.reads += 1
            self.alive += idx.size
            self.max_alive = max(self.max_alive, self.alive)
        weakref.finalize(frames, self._release, int(idx.size))
        return frames


def make_frameset(source):
    """A FrameSet of ``source``'s frames: first half sim, second half real, episodes of 10."""
    n = source.shape[0]
    half = n // 2
    return FrameSet(images=source, actions=np.zeros((n, 2), np.float32),
                    domain=np.array(["sim"] * half + ["real"] * (n - half)),
                    episode=np.arange(n) // 10, step=np.arange(n) % 10, name="counting")


def reference(encoder, frameset, indices, batch):
    """Per-batch ``encoder.embed`` on the same frames, concatenated."""
    idx = np.asarray(indices)
    return np.concatenate([encoder.embed(frameset.read_images(idx[s:s + batch]))
                           for s in range(0, idx.size, batch)])
