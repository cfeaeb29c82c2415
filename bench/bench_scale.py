"""s2r end to end at the paper's scale: wall time and peak memory of every stage vs frames.

For each size N (default 5,000, 20,000, 50,000 frames, half sim half real) and each encoder
(``pixels``, ``resnet18@random``, ``state``), the stages a user's session runs:

- ``load``: the demo dataset of N frames (:func:`s2r.worlds.demo.make_demo`: the scripted
  episodes are simulated; the frames are rendered on every read at every size, like a video
  file is decoded, so rendering is part of ``embed`` and ``saliency``), 50 steps per episode;
- ``embed``: :func:`s2r.embed.embed_frameset` into a disk cache of the bench's own
  (``<cache>/bench_scale``; frames streamed in batches, never all decoded at once);
- ``score``: :func:`s2r.metrics.scoring.score_embeddings` of the cached embeddings, every
  metric with 1,000 bootstrap replicates (``n_boot``);
- ``tsne-joint`` and ``tsne-place``: :func:`s2r.projection.project` with its defaults and every
  frame, joint and place-real;
- ``saliency``: one sim/real frame pair (its real partner found by :class:`s2r.pairing.
  FramePairer`), Grad-CAM (``resnet18``) or integrated gradients (``pixels``) toward the
  embedding norm (``state`` has no image model: none).

Every stage runs in a fresh subprocess (stages after ``embed`` read the embeddings from the
cache, as the app does), so its peak resident memory (``ru_maxrss``, which includes the
interpreter, numpy and torch) is that stage's alone.

**Frame size.** Frames are 64 x 80 pixels, the smallest the demo renders, and ``resnet18@random``
runs at that size (``input_size`` (64, 80) instead of its registry entry's 224 x 224; a ResNet
pools globally, so it accepts any size): measured on this machine's 2 shared cores,
``resnet18`` embeds 2.8 frames/s at 224 x 224, 7.4 at 96 x 128 and 9.8 at 64 x 80 (load
average 17-22, other engineers' jobs), i.e. 5 hours for 50,000 frames at 224 x 224.

**Deadline.** ``--deadline HH:MM`` (UTC): a stage whose time at N, extrapolated from the sizes
already measured (power law through the last two points; linear from one point), would end
after the deadline is not run; its time is printed as ``~extrapolated`` and the stages that
need its output are skipped. The table says which numbers are measured.

Writes ``docs/bench_scale.json`` (every measurement) and ``docs/bench_scale.png`` (log-log time
vs N per stage, one line per encoder, with the fitted exponent in the legend).

Usage: ``python bench/bench_scale.py [--sizes 5000,20000,50000] [--deadline 21:45]``
"""

from __future__ import annotations

import os

# Before torch, scikit-learn or openTSNE load their OpenMP runtimes: idle threads wait
# passively (see s2r.projection; busy-waiting threads cost 6-9x on a shared machine).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from s2r.settings import current

ENCODERS = ("pixels", "resnet18@random", "state")
STAGES = ("load", "embed", "score", "tsne-joint", "tsne-place", "saliency")
NEEDS = {"embed": "load", "score": "embed", "tsne-joint": "embed", "tsne-place": "embed",
         "saliency": "embed"}
HEIGHT, WIDTH, STEPS = 64, 80, 50
N_BOOT = 1000


# ----------------------------------------------------------------------------- one stage
def _frameset(n: int):
    from s2r.worlds.demo import dataset as demo

    # One render mode at every size: frames rendered on every read, never held. make_demo
    # holds them when they fit in EAGER_LIMIT_BYTES (512 MiB), which at 64 x 80 pixels
    # switched between 20,000 and 50,000 frames and moved the rendering from `load` to
    # `embed` there (the exponents of both measured the switch, not the scaling).
    demo.EAGER_LIMIT_BYTES = -1
    return demo.make_demo(episodes=max(1, n // (2 * STEPS)), steps=STEPS, gap=0.5, seed=0,
                          height=HEIGHT, width=WIDTH)


def _encoder(encoder_id: str):
    """The encoder the bench embeds with: ``state`` as an id, image encoders built on the CPU
    at the frame size (module docstring)."""
    import dataclasses

    from s2r.encoders import build_encoder, get_spec

    spec = get_spec(encoder_id)
    if not spec.has_image_model:
        return encoder_id
    if spec.family == "cnn":
        spec = dataclasses.replace(spec, input_size=(HEIGHT, WIDTH))
    return build_encoder(spec, device="cpu", settings=current())


def _cache():
    from s2r.cache import Cache

    return Cache(Path(current().cache_dir) / "bench_scale")


def run_stage(stage: str, n: int, encoder_id: str) -> dict:
    """Run one stage in this process; return ``{"seconds": ..., ...}`` (what it measured)."""
    import s2r.worlds.demo.dataset  # noqa: F401  (imports are not the stage's time)
    from s2r.embed import embed_frameset

    t0 = time.perf_counter()
    fs = _frameset(n)
    if stage == "load":
        return {"seconds": time.perf_counter() - t0, "frames": len(fs)}
    encoder = _encoder(encoder_id)
    if stage == "embed":
        t0 = time.perf_counter()
        Z = embed_frameset(fs, encoder, cache=_cache(), settings=current())
        return {"seconds": time.perf_counter() - t0, "dim": int(Z.shape[1])}
    Z = embed_frameset(fs, encoder, cache=_cache(), settings=current())  # a cache read
    t0 = time.perf_counter()
    if stage == "score":
        from s2r.metrics.params import ScoreParams
        from s2r.metrics.scoring import score_embeddings
        from s2r.pairing import pair_frames

        record = score_embeddings(Z, fs.domain, fs.actions, fs.episode, state=fs.state,
                                  pairs=pair_frames(fs), params=ScoreParams(n_boot=N_BOOT))
        return {"seconds": time.perf_counter() - t0,
                "fields": sorted(k for k in record if k.endswith("_ci_low"))}
    if stage in ("tsne-joint", "tsne-place"):
        from s2r.projection import project

        proj = project(Z, fs.domain, episode=fs.episode,
                       mode="joint" if stage == "tsne-joint" else "place-real")
        return {"seconds": time.perf_counter() - t0, "kl": proj.kl_divergence,
                "mixing": proj.mixing, "n_iter_run": proj.params["n_iter_run"]}
    if stage == "saliency":
        from s2r.pairing import FramePairer
        from s2r.saliency import pair_maps, saliency_targets

        if isinstance(encoder, str):
            return {"seconds": float("nan"), "skipped": "no image model"}
        sim = int(np.flatnonzero(fs.domain == "sim")[len(fs) // 4])
        real = int(FramePairer(fs).query(np.array([sim]))[0])
        frames = fs.read_images(np.array([sim, real]))
        targets = saliency_targets("embedding", Z, domain=fs.domain, actions=fs.actions,
                                   episode=fs.episode, sim_indices=[sim], real_indices=[real])
        pair_maps(encoder, frames[:1], frames[1:], targets,
                  method="gradcam" if encoder.spec.cam_layer else "ig")
        return {"seconds": time.perf_counter() - t0}
    raise ValueError(f"unknown stage {stage!r}")


def _child(stage: str, n: int, encoder_id: str) -> None:
    import resource

    out = run_stage(stage, n, encoder_id)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("RESULT " + json.dumps(out), flush=True)


# ----------------------------------------------------------------------------- driver
def fit_exponent(ns, ts) -> float:
    """Least-squares slope of log(time) on log(N) (NaN with fewer than two points)."""
    ok = [(n, t) for n, t in zip(ns, ts) if t and np.isfinite(t) and t > 0]
    if len(ok) < 2:
        return float("nan")
    x, y = np.log([n for n, _ in ok]), np.log([t for _, t in ok])
    return float(np.polyfit(x, y, 1)[0])


def extrapolate(ns, ts, n: int) -> float:
    """Time at ``n`` from the measured points: power law through the last two, else linear."""
    pts = [(a, t) for a, t in zip(ns, ts) if t and np.isfinite(t) and t > 0]
    if not pts:
        return float("nan")
    if len(pts) == 1:
        return pts[0][1] * n / pts[0][0]
    (n1, t1), (n2, t2) = pts[-2], pts[-1]
    b = np.log(t2 / t1) / np.log(n2 / n1)
    return float(t2 * (n / n2) ** b)


def spawn(stage: str, n: int, encoder_id: str, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", stage, str(n), encoder_id]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": float("nan"), "over": timeout, "error": f"stopped after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            out = json.loads(line[7:])
            out["process_seconds"] = time.perf_counter() - start
            return out
    return {"seconds": float("nan"), "error": (proc.stderr or proc.stdout)[-600:]}


def plot(results: list[dict], path: Path) -> dict:
    """Log-log time vs N, one panel per stage; returns the fitted exponents."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exps = {}
    fig, axes = plt.subplots(2, 3, figsize=(13, 7.5), constrained_layout=True)
    for ax, stage in zip(axes.flat, STAGES):
        for enc in ENCODERS:
            rows = [r for r in results if r["stage"] == stage and r["encoder"] == enc
                    and r.get("measured") and np.isfinite(r["seconds"])]
            if stage == "load" and enc != ENCODERS[0]:
                continue
            if not rows:
                continue
            ns, ts = [r["n"] for r in rows], [r["seconds"] for r in rows]
            b = fit_exponent(ns, ts)
            exps[f"{stage}/{enc}"] = b
            label = ("all encoders" if stage == "load" else enc) + (
                f" (N^{b:.2f})" if np.isfinite(b) else "")
            ax.loglog(ns, ts, "o-", label=label)
            extra = [r for r in results if r["stage"] == stage and r["encoder"] == enc
                     and not r.get("measured") and np.isfinite(r.get("seconds", np.nan))]
            if extra:
                ax.loglog([ns[-1]] + [r["n"] for r in extra],
                          [ts[-1]] + [r["seconds"] for r in extra], "x:", color="grey")
        ax.set_title(stage)
        ax.set_xlabel("frames N")
        ax.set_ylabel("wall time (s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("s2r stages vs frames, 2 shared CPU cores (x: extrapolated)")
    fig.savefig(path, dpi=90)
    return exps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000,50000")
    parser.add_argument("--encoders", default=",".join(ENCODERS))
    parser.add_argument("--deadline", default=None, help="HH:MM UTC: skip stages that would "
                        "end later (their time is extrapolated)")
    parser.add_argument("--stage-timeout", type=float, default=3600.0,
                        help="seconds after which a stage is stopped and reported as longer")
    parser.add_argument("--out", default=str(REPO / "docs" / "bench_scale"),
                        help="path prefix of the .json and .png written")
    parser.add_argument("--child", nargs=3, metavar=("STAGE", "N", "ENCODER"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]), args.child[2])
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    encoders = [e for e in args.encoders.split(",") if e]
    deadline = None
    if args.deadline:
        h, m = (int(x) for x in args.deadline.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        deadline = now.replace(hour=h, minute=m, second=0, microsecond=0)
        if deadline <= now:              # past midnight: the next day's HH:MM
            deadline += dt.timedelta(days=1)
    # Embeddings are measured, not read back: start from an empty bench cache (the bench's
    # own folder; nothing else is touched).
    shutil.rmtree(_cache().root, ignore_errors=True)
    results: list[dict] = []
    print(f"bench_scale: sizes {sizes}, encoders {encoders}, frames {HEIGHT}x{WIDTH}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'N':>6} {'encoder':<16} {'stage':<11} {'seconds':>10} {'peak RSS MB':>11} "
          f"{'load':>5}  note")
    for n in sizes:
        for enc in encoders:
            failed: set = set()
            for stage in STAGES:
                if stage == "load" and enc != encoders[0]:
                    continue
                prior = [r for r in results if r["stage"] == stage and r["encoder"] == enc
                         and r.get("measured")]
                guess = extrapolate([r["n"] for r in prior], [r["seconds"] for r in prior], n)
                left = ((deadline - dt.datetime.now(dt.timezone.utc)).total_seconds()
                        if deadline else float("inf"))
                row = {"n": n, "encoder": enc, "stage": stage}
                stopped = [r for r in results if r["stage"] == stage and r["encoder"] == enc
                           and r.get("over")]
                if stopped:
                    row.update(seconds=float("nan"), measured=False,
                               note=f"not run: over {stopped[0]['over']:.0f} s at "
                                    f"N={stopped[0]['n']}")
                elif NEEDS.get(stage) in failed:
                    row.update(seconds=guess, measured=False, note="needs " + NEEDS[stage])
                    failed.add(stage)
                elif deadline and (left <= 0 or (np.isfinite(guess) and guess > left)):
                    row.update(seconds=guess, measured=False,
                               note=f"~extrapolated (would end after {args.deadline})")
                    failed.add(stage)
                else:
                    out = spawn(stage, n, enc, timeout=min(args.stage_timeout, max(60.0, left)))
                    ok = np.isfinite(out.get("seconds", np.nan)) and "error" not in out
                    row.update(out, measured=bool(ok), note=out.get("error", out.get(
                        "skipped", "")).splitlines()[-1] if not ok else "")
                    if not ok and "skipped" not in out:
                        failed.add(stage)
                row["load_avg"] = os.getloadavg()[0]
                results.append(row)
                rss = row.get("peak_rss_mb", float("nan"))
                secs = f"{row['seconds']:.1f}" if np.isfinite(row["seconds"]) else "-"
                mark = "" if row["measured"] else "~"
                print(f"{n:>6} {enc:<16} {stage:<11} {mark + secs:>10} {rss:11.0f} "
                      f"{row['load_avg']:5.1f}  {row.get('note', '')}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    exps = plot(results, out.with_suffix(".png"))
    peak = max((r.get("peak_rss_mb", 0) for r in results if r.get("measured")), default=0)
    summary = {"sizes": sizes, "encoders": encoders, "frame_size": [HEIGHT, WIDTH],
               "n_boot": N_BOOT, "results": results, "exponents": exps,
               "peak_rss_mb": peak}
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1, default=float))
    print("fitted exponents (time ~ N^b):")
    for key, b in sorted(exps.items()):
        print(f"  {key:<28} {b:5.2f}")
    print(f"peak resident memory of any measured stage: {peak:.0f} MB")
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
