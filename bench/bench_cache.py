"""Write and read a big embeddings array through s2r's Cache vs the obvious alternatives.

Compares, for a 50,000 x 2048 float32 array (400 MB; ``--quick``: 5,000 x 2048):

- ``Cache`` miss (np.save to a temp file, fsync, checksum, atomic rename, index record);
- ``Cache`` hit: read-only memmap after size/header/XXH3 checks (the goal: under 1 s), and
  the same hit followed by a full pass over the data (``Z.sum()``);
- ``np.load`` of a plain ``.npy`` (full read into memory);
- a diskcache bytes value (``Cache.set(key, arr.tobytes())`` / ``get`` + ``np.frombuffer``);
- the checksum alone with XXH3, CRC32 and BLAKE2b (why the cache uses XXH3).

Reads are timed warm (the file is in the page cache), median of ``--repeat`` runs.

Usage: ``python bench/bench_cache.py [--quick] [--rows N] [--dim D] [--repeat R]``
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.cache import Cache
from s2r.cache.files import file_checksum


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def stream_hash(path: Path, update, state):
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            state = update(chunk, state)
    return state


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 rows instead of 50,000")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rows = args.rows or (5_000 if args.quick else 50_000)
    data = np.random.default_rng(0).standard_normal((rows, args.dim), dtype=np.float32)
    mb = data.nbytes / 2**20
    print(f"array {rows} x {args.dim} float32 = {mb:.0f} MB, median of {args.repeat} warm reads")

    with tempfile.TemporaryDirectory(prefix="s2r-bench-cache-") as tmp:
        tmp = Path(tmp)
        cache = Cache(tmp / "cache")
        key = {"kind": "embeddings", "frameset": "bench", "encoder": "resnet50"}
        t0 = time.perf_counter()
        cache.get_or_compute_array(key, lambda: data)
        t_write = time.perf_counter() - t0
        t_hit, hit = timed(lambda: Cache(tmp / "cache").get_or_compute_array(key, lambda: None),
                           args.repeat)
        assert isinstance(hit, np.memmap) and hit.shape == data.shape
        t_hit_sum, _ = timed(lambda: float(Cache(tmp / "cache").get_array(key).sum()), args.repeat)

        plain = tmp / "plain.npy"
        np.save(plain, data)
        t_npload, loaded = timed(lambda: np.load(plain), args.repeat)
        assert np.array_equal(loaded, data)
        del loaded

        import diskcache

        dc = diskcache.Cache(str(tmp / "diskcache"))
        t0 = time.perf_counter()
        dc.set("z", data.tobytes())
        t_dc_write = time.perf_counter() - t0
        t_dc, z = timed(lambda: np.frombuffer(dc.get("z"), dtype=np.float32).reshape(data.shape),
                        args.repeat)
        assert np.array_equal(z, data)
        del z
        dc.close()

        path = cache.arrays_dir / f"{cache.ls()[0].hash}.npy"
        t_xxh, _ = timed(lambda: file_checksum(path), args.repeat)
        t_crc, _ = timed(lambda: stream_hash(path, zlib.crc32, 0), args.repeat)
        t_b2, _ = timed(lambda: stream_hash(path, lambda c, h: (h.update(c), h)[1],
                                            hashlib.blake2b()).hexdigest(), args.repeat)

    print(f"{'operation':44s} {'seconds':>8s} {'MB/s':>8s}")
    for label, t in [("Cache write (miss: save+fsync+checksum)", t_write),
                     ("diskcache bytes value write", t_dc_write),
                     ("Cache hit (memmap + size/header/XXH3)", t_hit),
                     ("Cache hit + full pass (Z.sum())", t_hit_sum),
                     ("np.load full read", t_npload),
                     ("diskcache bytes value read", t_dc),
                     ("checksum XXH3-64 (used)", t_xxh),
                     ("checksum CRC32", t_crc),
                     ("checksum BLAKE2b", t_b2)]:
        print(f"{label:44s} {t:8.3f} {mb / t:8.0f}")
    print(f"ratio np.load / Cache hit:            {t_npload / t_hit:5.1f}x")
    print(f"ratio diskcache bytes / Cache hit:    {t_dc / t_hit:5.1f}x")
    print(f"goal Cache hit < 1 s: {'met' if t_hit < 1.0 else 'NOT met'} ({t_hit:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
