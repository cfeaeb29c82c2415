"""Reading FurnitureBench-like zarr images in batches: ChunkedImages vs plain ArrayImages.

Writes a zarr v2 store of smooth 240x320 frames (Blosc lz4, ``--chunk`` frames per chunk,
like the real files) to a temporary folder, then walks all frames in batches of ``--batch``
with both sources, as embedding does, and reads random 64-frame samples, as the app does.
Prints seconds and the ratio (baseline / ChunkedImages; > 1 means ChunkedImages is faster).

    .venv/bin/python bench/bench_zarr_reads.py            # 2000 frames
    .venv/bin/python bench/bench_zarr_reads.py --quick    # 400 frames
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout


def make_store(path: str, n: int, chunk: int):
    import numcodecs
    import zarr

    yy, xx = np.mgrid[0:240, 0:320]
    g = zarr.open_group(path, mode="w", zarr_format=2)
    arr = g.create_array("color_image2", shape=(n, 240, 320, 3), dtype="uint8",
                         chunks=(chunk, 240, 320, 3), compressors=numcodecs.Blosc(cname="lz4"))
    for start in range(0, n, chunk):
        k = np.arange(start, min(n, start + chunk))[:, None, None]
        base = ((xx[None] + 3 * k) % 256).astype(np.uint8)
        block = np.stack([base, (yy[None] + k) % 256 + 0 * base, base // 2], axis=-1)
        arr[start:start + len(k)] = block.astype(np.uint8)
    return zarr.open_group(path, mode="r")["color_image2"]


def walk(source, n: int, batch: int) -> float:
    t = time.perf_counter()
    for start in range(0, n, batch):
        source.read(np.arange(start, min(n, start + batch)))
    return time.perf_counter() - t


def sample(source, n: int, reps: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    for _ in range(reps):
        source.read(rng.choice(n, 64, replace=False))
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (400 frames)")
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=50)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    n = 400 if args.quick else args.frames

    from s2r.datasets._sources import ChunkedImages
    from s2r.images import ArrayImages

    with tempfile.TemporaryDirectory() as tmp:
        arr = make_store(f"{tmp}/bench.zarr", n, args.chunk)
        base, chunked = ArrayImages(arr, sorted_reads=True), ChunkedImages(arr)
        assert np.array_equal(base.read(np.arange(0, n, 7)), chunked.read(np.arange(0, n, 7)))
        chunked = ChunkedImages(arr)  # fresh cache
        print(f"{n} frames 240x320, chunks of {args.chunk}, batches of {args.batch}")
        for label, fn in (("sequential batches", lambda s: walk(s, n, args.batch)),
                          ("random 64-frame samples x10", lambda s: sample(s, n, 10))):
            t_base = fn(base)
            t_new = fn(ChunkedImages(arr))
            print(f"{label:30s} ArrayImages {t_base:7.3f}s  ChunkedImages {t_new:7.3f}s  "
                  f"ratio {t_base / t_new:5.2f}x")


if __name__ == "__main__":
    main()
