"""Every layer of an encoder in one pass: time and memory against the final embedding alone.

For each encoder, in one process and alternating the arms on the same frames:

* **final only**: :func:`s2r.embed.compute_embeddings` (what ``embed_frameset`` runs on a miss:
  the ``(N, D)`` result in memory);
* **all layers**: :func:`s2r.embed.layers.embed_layers` with ``"all"`` into a fresh disk cache
  (the one forward pass with a hook per layer, every layer's rows written to its own
  memory-mapped file as each batch is made, then each stored in the cache under its own key).

Prints the median wall time of each arm and their ratio (goal <= 1.3). Memory is measured in a
fresh process per arm (an allocator keeps what an earlier arm freed): the peak anonymous memory
(``RssAnon`` of ``/proc/self/status``, sampled every 2 ms) above its level once the frames are
loaded and the encoder built, for each arm on N frames and for all layers on 4N frames (bounded:
it does not grow with N), beside the bytes all layers would take held in memory. ResNet18 runs
with random weights (``resnet18@random``: the speed and the shapes of the pretrained model; no
weights are offline); EfficientNet-Lite0 with its real packaged ImageNet weights.

    python bench/bench_layers.py [--encoders resnet18@random,efficientnet-lite0]
                                 [--frames 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.cache import Cache  # noqa: E402
from s2r.datasets import load_dataset  # noqa: E402
from s2r.embed import compute_embeddings  # noqa: E402
from s2r.embed.layers import embed_layers, plan_of  # noqa: E402
from s2r.encoders import build_encoder  # noqa: E402
from s2r.settings import current  # noqa: E402


def rss_anon() -> int:
    """Bytes of anonymous resident memory of this process (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


class PeakMemory:
    """The largest :func:`rss_anon` above its level at entry, sampled in a thread."""

    def __enter__(self):
        self.base = self.peak = rss_anon()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_anon())
            time.sleep(0.002)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_anon())
        self.above = self.peak - self.base


def load_frames(n: int):
    steps = 16
    return load_dataset(f"demo:episodes={max(1, n // (2 * steps))},steps={steps}")


def run_arm(arm: str, frameset, enc, root: str):
    """One arm on ``frameset``: ``final`` (the final embedding in memory) or ``layers`` (all
    layers into the disk cache at ``root``)."""
    if arm == "final":
        return compute_embeddings(frameset, enc)
    return embed_layers(frameset, enc, "all", cache=Cache(root))


def child(arm: str, encoder_id: str, frames: int) -> None:
    """Run one arm in this (fresh) process and print the peak anonymous memory above the
    level after the dataset was loaded and the encoder built and warmed up."""
    frameset = load_frames(frames)
    enc = build_encoder(encoder_id, device="cpu", settings=current())
    enc.embed(frameset.read_images(np.arange(2)))
    with tempfile.TemporaryDirectory(prefix="s2r-bench-layers-") as root:
        with PeakMemory() as peak:
            run_arm(arm, frameset, enc, root)
    print(peak.above)


def peak_in_child(arm: str, encoder_id: str, frames: int) -> int:
    out = subprocess.run([sys.executable, __file__, "--child", arm, "--encoders", encoder_id,
                          "--frames", str(frames)], check=True, capture_output=True, text=True)
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoders", default="resnet18@random,efficientnet-lite0")
    ap.add_argument("--frames", type=int, default=256,
                    help="demo frames (half sim, half real; 128 x 160)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.encoders, args.frames)
    frameset = load_frames(args.frames)
    settings = current()
    print(f"{len(frameset)} frames of {frameset.images.shape[1]} x {frameset.images.shape[2]}, "
          f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f} at the start")
    for encoder_id in args.encoders.split(","):
        enc = build_encoder(encoder_id, device="cpu", settings=settings)
        plan = plan_of(enc.spec, cache=False)
        enc.embed(frameset.read_images(np.arange(2)))      # warm-up: BatchNorm folding
        times = {"final": [], "layers": []}
        for _ in range(args.repeats):
            for arm in ("final", "layers"):
                with tempfile.TemporaryDirectory(prefix="s2r-bench-layers-") as root:
                    t0 = time.perf_counter()
                    Z = run_arm(arm, frameset, enc, root)
                    times[arm].append(time.perf_counter() - t0)
                    del Z
        t_final, t_layers = (float(np.median(times[k])) for k in ("final", "layers"))
        widths = sum(int(t.dim) for t in plan)
        mib = 2 ** 20
        print(f"{encoder_id}: {len(plan)} layers ({', '.join(f'{t.name} {t.dim}' for t in plan)})")
        print(f"  final only {t_final:6.2f} s, all layers {t_layers:6.2f} s (median of "
              f"{args.repeats}, alternated): {t_layers / t_final:.2f}x (goal <= 1.3)")
        final_mem = peak_in_child("final", encoder_id, args.frames)
        layers_mem = peak_in_child("layers", encoder_id, args.frames)
        layers_mem4 = peak_in_child("layers", encoder_id, 4 * args.frames)
        print(f"  peak anonymous memory of the arm (fresh process each): final only "
              f"{final_mem / mib:.0f} MiB, all layers {layers_mem / mib:.0f} MiB; all layers on "
              f"{4 * len(frameset)} frames {layers_mem4 / mib:.0f} MiB (all layers held in "
              f"memory: {len(frameset) * widths * 4 / mib:.1f} and "
              f"{4 * len(frameset) * widths * 4 / mib:.1f} MiB)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
