"""Cost of the exact dataset fingerprint on a 50,000-frame dataset of each kind.

Run: ``python bench/bench_fingerprint.py`` (50,000 frames per kind) or ``--quick`` (5,000).

The fingerprint hashes every label and the *identity* of the stored frames: name, size,
modification and status-change time of every frame file (folder), chunk file (zarr) or the
one HDF5 file (:mod:`s2r.identity`); it never decodes a frame. Printed, measured in this one
process on the same files:

- ``exact``: the fingerprint s2r computes (a fresh FrameSet each time, so nothing is reused);
- ``sampled``: the old fingerprint (labels + the pixels of 32 evenly spaced frames), which
  missed edits of the other frames: the baseline it replaced;
- ``decode all``: hashing every decoded frame, what an exact content hash would cost
  (measured on the first 2,000 frames, read in order, and scaled).

Frames are 48x64 to keep the files small to write: the exact fingerprint's cost depends on
the number of files, not on their size, while ``sampled`` and ``decode all`` grow with the
frame size (at 240x320 they cost ~25x more).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from s2r.datasets import load_dataset

H, W = 48, 64


def _png_bytes(seed: int) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def write_folder(root: Path, n: int) -> str:
    import pandas as pd

    variants = [_png_bytes(s) for s in range(16)]
    rows = []
    for d in ("sim", "real"):
        (root / d).mkdir(parents=True)
        for i in range(n // 2):
            name = f"{i:06d}.png"
            (root / d / name).write_bytes(variants[i % 16])
            rows.append((d, name, i // 100, i % 100, *np.random.default_rng(i).normal(size=3)))
    pd.DataFrame(rows, columns=["domain", "file", "episode", "step", "a0", "a1", "a2"]).to_csv(
        root / "actions.csv", index=False)
    return str(root)


def write_zarrs(root: Path, n: int) -> list:
    import zarr

    rng = np.random.default_rng(0)
    block = rng.integers(0, 256, (32, H, W, 3), dtype=np.uint8)
    paths = []
    for d in ("sim", "real"):
        m = n // 2
        g = zarr.open_group(str(root / f"{d}.zarr"), mode="w", zarr_format=2)
        images = g.create_array("color_image2", shape=(m, H, W, 3), dtype="uint8",
                                chunks=(32, H, W, 3))
        for start in range(0, m, 32):
            images[start:start + 32] = block[: min(32, m - start)]
        g.create_array("action/pos", shape=(m, 10), dtype="float32", chunks=(m, 10))[...] = \
            rng.normal(size=(m, 10)).astype(np.float32)
        g.create_array("episode_ends", shape=(m // 100,), dtype="uint32")[...] = \
            np.arange(100, m + 1, 100, dtype=np.uint32)
        paths.append(str(root / f"{d}.zarr"))
    return paths


def write_hdf5s(root: Path, n: int) -> list:
    import h5py

    rng = np.random.default_rng(0)
    paths = []
    for d in ("sim", "real"):
        path = root / f"{d}.hdf5"
        with h5py.File(path, "w") as f:
            for e in range(n // 2 // 100):
                g = f.create_group(f"data/demo_{e}")
                g.create_dataset("obs/agentview_image",
                                 data=rng.integers(0, 256, (100, H, W, 3), dtype=np.uint8))
                g.create_dataset("actions", data=rng.normal(size=(100, 7)).astype(np.float32))
        paths.append(str(path))
    return paths


def sampled_fingerprint(fs) -> str:
    """The fingerprint s2r used before: labels + pixels of 32 evenly spaced frames."""
    h = hashlib.blake2b(digest_size=8)
    for arr in (fs.actions, fs.episode, fs.step):
        h.update(np.ascontiguousarray(arr).tobytes())
    sample = np.unique(np.linspace(0, len(fs) - 1, 32).astype(int))
    h.update(fs.read_images(sample).tobytes())
    return h.hexdigest()


def decode_all_seconds(fs, n_measure: int = 2000) -> float:
    idx = np.arange(min(n_measure, len(fs)))  # in storage order, as a content hash would read
    start = time.perf_counter()
    h = hashlib.blake2b(digest_size=8)
    for lo in range(0, idx.size, 256):
        h.update(fs.read_images(idx[lo:lo + 256]).tobytes())
    return (time.perf_counter() - start) * len(fs) / idx.size


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def exact_seconds(spec, repeat: int = 3) -> float:
    """The fingerprint of a freshly loaded FrameSet (loading not counted), best of ``repeat``."""
    times = []
    for _ in range(repeat):
        fs = load_dataset(spec)
        start = time.perf_counter()
        _ = fs.fingerprint  # a property: computing it is the work timed
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 frames instead of 50,000")
    args = parser.parse_args()
    n = 5000 if args.quick else 50000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        specs = {}
        t = time.perf_counter()
        specs["folder (PNG files)"] = write_folder(root / "folder", n)
        specs["zarr (32-frame chunks)"] = write_zarrs(root, n)
        specs["HDF5 (robomimic)"] = write_hdf5s(root, n)
        print(f"wrote {n:,} frames of {H}x{W} per kind in {time.perf_counter() - t:.0f} s\n")
        print(f"{'dataset':<24} {'load':>8} {'exact':>8} {'sampled':>8} {'decode all':>11} "
              f"{'exact/sampled':>14} {'exact/decode':>13}")
        for name, spec in specs.items():
            fs = load_dataset(spec)
            load = best_of(lambda: load_dataset(spec), 1)
            exact = exact_seconds(spec)
            sampled = best_of(lambda: sampled_fingerprint(fs))
            full = decode_all_seconds(fs)
            print(f"{name:<24} {load:>7.2f}s {exact:>7.3f}s {sampled:>7.3f}s "
                  f"{full:>10.1f}s {exact / sampled:>14.2f} {exact / full:>13.4f}")


if __name__ == "__main__":
    main()
