"""Scoring at the paper's scale: ``score_embeddings`` on 50,000 x 2,048 embeddings with 1,000
bootstrap replicates, against the code before issue 26's change, in one process.

The goal (issue 26): <= 60 s per encoder on 2 cores. The data mimic an encoder's output as
``bench_probe.py`` does (float32 embeddings with a decaying spectrum, 10-D actions linear in
them plus noise, real frames shifted), in episodes of 50 frames like the demo (1,000 episodes
at 50,000 frames), with a 12-D robot state, so that every score is computed: held-out and
both transfer scores with penalties chosen by nested cross-validation (again in every
replicate), their state ceilings, DIS, the domain probe, paired retrieval.

``old``: the same call with ``s2r/metrics/_moments.py`` as it was at ``--old-ref`` (read with
``git show``; the per-episode ``r x r`` sums, one Cholesky solve per penalty through
``scipy.linalg.solve`` with OpenBLAS's threads) swapped in for the run. The two records are
compared field by field (they must agree to rounding).

Each run is profiled (cProfile) and the time of its parts printed: ``sums`` (ProbeData: the
per-group statistics), ``solves`` (the ridge paths), ``test errors`` (one pass over the test
frames per training set), ``domain probe``, ``retrieval``, ``DIS``, ``bootstrap`` (the
replicates and the jackknife), and the process's CPU time (user + system, every thread: a
measure the other jobs on shared cores barely change). Peak resident memory is the process's
after the new run (the embeddings included: 0.4 GB at 50,000 x 2,048).

Usage: ``python bench/bench_score_scale.py [--n 50000] [--dim 2048] [--n-boot 1000]
[--no-old] [--old-ref 32040f2~1]``. The load average is printed before and after each run
(the machine's cores are shared).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import os
import pstats
import resource
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from s2r.metrics import domain_probe, probe_data  # noqa: E402
from s2r.metrics.params import ScoreParams  # noqa: E402
from s2r.metrics.scoring import score_embeddings  # noqa: E402

#: The commit whose s2r/metrics/_moments.py is the old code path (the parent of the change).
OLD_REF = "32040f2~1"
#: Parts of a run: label -> (file suffix, function name) whose cumulative time is shown.
PARTS = {"sums": ("probe_data.py", "__init__"),
         "solves": ("_moments.py", "path_coefficients"),
         "test errors": ("_moments.py", "add_path_errors"),
         "domain probe": ("probe_data.py", "domain_evidence"),
         "retrieval": ("retrieval.py", "partner_ranks"),
         "DIS fit": ("dis.py", "fit_dis_space"),
         "DIS transform": ("dis.py", "transform"),
         "train null": ("_moments.py", "training_null"),
         "bootstrap": ("scoring.py", "_replicates")}


def synthetic(n: int, dim: int, steps: int = 50, seed: int = 0):
    """``(Z float32 (n, dim), domain, actions (n, 10), episode, state (n, 12))``."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 64), dtype=np.float32)
    mix = rng.standard_normal((64, dim), dtype=np.float32) / 8
    Z = latent @ mix
    Z += 0.5 * rng.standard_normal((n, dim), dtype=np.float32)
    Y = (latent[:, :10] @ rng.standard_normal((10, 10)).astype(np.float32)).astype(np.float64)
    Y += 0.3 * rng.standard_normal((n, 10))
    state = latent[:, :12].astype(np.float64) + 0.1 * rng.standard_normal((n, 12))
    domain = np.repeat(["sim", "real"], [n // 2, n - n // 2])
    Z[domain == "real"] += 0.2
    episode = np.arange(n) // steps
    return Z, domain, Y, episode, state


def old_moments(ref: str):
    """The module ``s2r/metrics/_moments.py`` as it was at ``ref`` (None without git)."""
    try:
        source = subprocess.run(["git", "show", f"{ref}:s2r/metrics/_moments.py"], cwd=REPO,
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"old code path unavailable ({exc}); new path only")
        return None
    spec = importlib.util.spec_from_loader("s2r_old_moments", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module              # dataclasses look their module up
    exec(compile(source, f"{ref}:s2r/metrics/_moments.py", "exec"), module.__dict__)
    return module


@contextmanager
def moments_module(module):
    """Run with ``module`` as the ridge engine of the probes (None: unchanged)."""
    saved = probe_data.mom, domain_probe.mom
    if module is not None:
        probe_data.mom = domain_probe.mom = module
    try:
        yield
    finally:
        probe_data.mom, domain_probe.mom = saved


def timed_score(data, n_boot: int):
    """``(seconds, record, {part: seconds})`` of one profiled ``score_embeddings`` call."""
    Z, domain, Y, episode, state = data
    profile = cProfile.Profile()
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    profile.enable()
    record = score_embeddings(Z, domain, Y, episode, state=state,
                              params=ScoreParams(n_boot=n_boot))
    profile.disable()
    seconds = time.perf_counter() - t0
    parts = {"CPU (all threads)": _cpu_seconds() - cpu0}
    stats = pstats.Stats(profile).stats
    for label, (suffix, name) in PARTS.items():
        parts[label] = sum(v[3] for (path, _, fn), v in stats.items()
                           if fn == name and path.endswith(suffix))
    return seconds, record, parts


def _cpu_seconds() -> float:
    """User + system CPU time of this process, all threads (independent of other jobs'
    load: on 2 idle cores the wall time cannot be below half of it)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def max_difference(a: dict, b: dict) -> tuple[float, str]:
    """Largest absolute difference between the numeric fields of two records."""
    worst, where = 0.0, ""
    for key, value in a.items():
        other = b.get(key)
        if isinstance(value, float) and isinstance(other, float):
            d = abs(value - other)
            if d > worst:
                worst, where = d, key
        elif (value is None) != (other is None):
            return float("inf"), key
    return worst, where


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000, help="frames (half sim, half real)")
    parser.add_argument("--dim", type=int, default=2048, help="embedding dimension")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates")
    parser.add_argument("--no-old", action="store_true", help="skip the old code path")
    parser.add_argument("--old-ref", default=OLD_REF, help="git ref of the old _moments.py")
    args = parser.parse_args(argv)
    data = synthetic(args.n, args.dim)
    print(f"score_embeddings: {args.n} x {args.dim} float32, {np.unique(data[3]).size} "
          f"episodes, 10-D actions, 12-D state, {args.n_boot} replicates, ridge_alpha='auto'; "
          f"{os.cpu_count()} CPUs")
    runs = [("new", None)]
    if not args.no_old:
        old = old_moments(args.old_ref)
        if old is not None:
            runs.append((f"old ({args.old_ref})", old))
    small = synthetic(600, 16)      # warm-up: imports and first calls are not timed
    score_embeddings(*small[:4], state=small[4], params=ScoreParams(n_boot=2))
    results = {}
    for name, module in runs:
        load = os.getloadavg()[0]
        with moments_module(module):
            seconds, record, parts = timed_score(data, args.n_boot)
        results[name] = (seconds, record)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\n{name}: {seconds:.1f} s (load average {load:.1f} -> "
              f"{os.getloadavg()[0]:.1f}); process peak RSS so far {peak:.0f} MB")
        for label, t in parts.items():
            print(f"   {label:<18} {t:7.1f} s")
    if len(results) == 2:
        (t_new, r_new), (t_old, r_old) = results.values()
        diff, key = max_difference(r_new, r_old)
        print(f"\nold / new: {t_old / t_new:.2f}x; largest difference between the records: "
              f"{diff:.1e} ({key or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
