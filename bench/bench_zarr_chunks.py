"""Upstream FurnitureBench chunking (1,000-frame image chunks) vs small chunks, same frames.

Writes two pairs of zarr v2 stores (the zarr 3 library with ``zarr_format=2``, Blosc lz4, as
FurnitureBench's processing writes with zarr 2.16), sim and real, ``--frames`` frames each at
240x320, one pair with 1,000-frame image chunks (230 MB decoded each) and one with 32-frame
chunks, holding identical frames. Then, in a fresh process per run, embeds every frame with
the ``pixels`` encoder and no cache (what ``python -m s2r embed SIM REAL --encoder pixels
--no-cache`` does) and reports wall, user and system seconds and the peak resident memory
(``VmHWM``, reset just before) above what the process held before embedding. Prints the time ratio
upstream / small chunks (goal <= 1.2x; wall time of the best run, and CPU time, which other
jobs on the machine disturb less) and checks that both give identical embeddings.

    .venv/bin/python bench/bench_zarr_chunks.py              # 2,000 + 2,000 frames
    .venv/bin/python bench/bench_zarr_chunks.py --quick      # 400 + 400 frames
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout
H, W = 240, 320


def frame_block(start: int, stop: int, seed: int) -> np.ndarray:
    """Frames ``start .. stop-1`` of a domain: smooth moving gradients plus camera noise (so
    Blosc compresses them about as much as camera frames, not to nothing). Frame ``k`` depends
    on ``k`` and ``seed`` only, so any chunking stores the same frames."""
    yy, xx = np.mgrid[0:H, 0:W].astype(np.uint8)
    noise = np.random.default_rng(seed).integers(0, 8, (7, H, W, 3), dtype=np.uint8)
    out = np.empty((stop - start, H, W, 3), dtype=np.uint8)
    for j, k in enumerate(range(start, stop)):
        base = xx + np.uint8((3 * k + 40 * seed) % 256)
        out[j, ..., 0] = base
        out[j, ..., 1] = yy + np.uint8(k % 256)
        out[j, ..., 2] = base // 2 + yy // 2
        out[j] |= noise[k % 7]
    return out


def write_store(path: Path, n: int, chunk: int, seed: int) -> None:
    """A FurnitureBench-like v2 store: ``color_image2`` chunked by ``chunk`` frames, actions,
    robot state and one episode per 100 frames."""
    import numcodecs
    import zarr

    g = zarr.open_group(str(path), mode="w", zarr_format=2)
    images = g.create_array("color_image2", shape=(n, H, W, 3), dtype="uint8",
                            chunks=(chunk, H, W, 3), compressors=numcodecs.Blosc(cname="lz4"))
    for start in range(0, n, chunk):
        images[start:min(n, start + chunk)] = frame_block(start, min(n, start + chunk), seed)
    rng = np.random.default_rng(seed)
    g.create_array("action/pos", shape=(n, 10), dtype="float32", chunks=(n, 10))[...] = \
        rng.normal(size=(n, 10)).astype(np.float32)
    g.create_array("robot_state", shape=(n, 16), dtype="float32", chunks=(n, 16))[...] = \
        rng.normal(size=(n, 16)).astype(np.float32)
    ends = np.unique(np.r_[np.arange(100, n, 100), n]).astype(np.uint32)
    g.create_array("episode_ends", shape=ends.shape, dtype="uint32", chunks=ends.shape)[...] = ends


def _peak_rss_mb() -> float:
    """Peak resident memory of this process since the last :func:`_reset_peak` (Linux)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:  # "5": reset the peak RSS (Linux >= 4.0)
        f.write("5")


def embed_once(sim: str, real: str) -> dict:
    """Embed every frame with ``pixels`` (no cache) in this process; times and memory."""
    import resource

    from s2r.datasets import load_dataset
    from s2r.embed import compute_embeddings
    from s2r.encoders import build_encoder

    fs = load_dataset([sim, real])
    encoder = build_encoder("pixels", device="cpu")
    encoder.embed(np.zeros((8, H, W, 3), np.uint8))  # warm up torch, not the chunk cache
    _reset_peak()
    base = _peak_rss_mb()
    before = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    z = compute_embeddings(fs, encoder)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF)
    peak = _peak_rss_mb()
    return {"wall": wall, "user": after.ru_utime - before.ru_utime,
            "sys": after.ru_stime - before.ru_stime, "frames": len(fs), "peak_mb": peak,
            "extra_mb": peak - base,
            "digest": hashlib.blake2b(np.ascontiguousarray(z).tobytes(), digest_size=8).hexdigest()}


def run_child(sim: Path, real: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(sim), str(real)], cwd=REPO,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 frames per domain")
    parser.add_argument("--frames", type=int, default=2000, help="frames per domain")
    parser.add_argument("--repeat", type=int, default=3, help="runs per layout")
    parser.add_argument("--child", nargs=2, metavar=("SIM", "REAL"), help=argparse.SUPPRESS)
    parser.add_argument("--keep", metavar="DIR", help="write the stores in DIR and keep them "
                        "(reused by the next run with the same --frames)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(embed_once(*args.child)))
        return
    n = 400 if args.quick else args.frames
    with tempfile.TemporaryDirectory(prefix="s2r-chunks-") as tmp:
        root = Path(args.keep or tmp)
        layouts = {}
        t = time.perf_counter()
        for chunk in (1000, 32):
            pair = [root / f"{n}_{d}_{chunk}" / "success.zarr" for d in ("sim", "real")]
            for seed, path in enumerate(pair):
                if not (path / "episode_ends").exists():
                    write_store(path, n, chunk, seed)
            layouts[chunk] = pair
        print(f"2 x 2 stores of {n} frames {H}x{W} ready in {time.perf_counter() - t:.0f} s")
        runs = {chunk: [] for chunk in layouts}
        for _ in range(args.repeat):  # alternate layouts so machine load hits both alike
            for chunk, pair in layouts.items():
                runs[chunk].append(run_child(*pair))
        best = {c: min(rs, key=lambda r: r["wall"]) for c, rs in runs.items()}
        for chunk, r in best.items():
            walls = " ".join(f"{x['wall']:.2f}" for x in runs[chunk])
            print(f"chunks of {chunk:4d} frames: {r['wall']:6.2f} s wall, {r['user']:6.2f} s user, "
                  f"{r['sys']:5.2f} s system; peak RSS {r['peak_mb']:6.0f} MB "
                  f"(+{r['extra_mb']:.0f} MB while embedding {r['frames']} frames); "
                  f"all runs: {walls} s")
        assert len({r["digest"] for rs in runs.values() for r in rs}) == 1, \
            "embeddings differ between layouts"
        ratio = best[1000]["wall"] / best[32]["wall"]
        median = {c: float(np.median([r["wall"] for r in rs])) for c, rs in runs.items()}
        cpu = {c: r["user"] + r["sys"] for c, r in best.items()}
        print(f"time ratio 1000-frame / 32-frame chunks: {ratio:.2f}x best wall (goal <= 1.2x), "
              f"{median[1000] / median[32]:.2f}x median wall, {cpu[1000] / cpu[32]:.2f}x CPU "
              "(user + system) of the best runs; identical embeddings")


if __name__ == "__main__":
    main()
