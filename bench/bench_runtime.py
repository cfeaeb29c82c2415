"""torch vs ONNX Runtime for the CPU embedding pass (:mod:`s2r.encoders.runtime`), per encoder,
at 1 and 2 threads, idle and beside ``--beside`` busy processes; plus ``torch.compile``
(inductor) on one encoder; with ``--int8``, torch int8 (:mod:`s2r.encoders.quantize`) against
ONNX Runtime fp32 and torch fp32 instead.

Each encoder is built once; its embed runs the same preprocessing and either the
BatchNorm-folded torch module or the ONNX Runtime graph of that module (an
:class:`~s2r.encoders.runtime.OnnxModel` with ``threads`` intra-op threads; torch with
``torch.set_num_threads(threads)``). The arms alternate in one process; each number is the
median of ``--repeats`` embeds of ``--frames`` frames of 96 x 128. ``ratio`` = torch ms /
ONNX ms (> 1: ONNX Runtime is faster); ``pre ms`` = the preprocessing both arms share (resize
to the encoder's input, normalise: torch in both); ``model`` = the ratio without it, (torch -
pre) / (onnx - pre), what the runtime itself gains; ``diff`` = max |onnx - torch| / max
|torch|.

Usage: ``python bench/bench_runtime.py [--encoders a,b] [--frames 8] [--repeats 7]
[--threads 1,2] [--beside 1] [--no-busy] [--no-compile] [--int8]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s2r.settings import prefer_passive_openmp  # noqa: E402  (before torch loads OpenMP)

prefer_passive_openmp()

DEFAULT_ENCODERS = ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2",
                    "mobilenetv3@random", "efficientnet-b0@random", "resnet18@random",
                    "mw-simcnn-dr1")


def _busy(n: int) -> list:
    """``n`` processes spinning on a core each (what a shared machine looks like, or render
    workers beside the embedding pass)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _stop(spinners: list) -> None:
    for spinner in spinners:
        spinner.kill()
        spinner.wait()


def _time(fn, frames) -> float:
    start = time.perf_counter()
    fn(frames)
    return (time.perf_counter() - start) * 1000.0


def _compare(enc, graphs, frames, threads, repeats):
    import torch

    torch.set_num_threads(threads)
    enc.threads = threads          # the pass sets torch's threads to the encoder's

    def run_torch(f):
        enc.runtime = "torch"
        return enc.embed(f)

    def run_onnx(f):
        enc.runtime = "onnx"
        enc._graphs["embed"] = graphs[threads]
        return enc.embed(f)

    def run_preprocess(f):
        with torch.inference_mode():
            return enc.preprocess(f)

    want, got = run_torch(frames), run_onnx(frames)   # warm-up, and the difference
    diff = float(np.abs(want - got).max() / np.abs(want).max())
    arms = {"torch": [], "onnx": [], "pre": []}
    for _ in range(repeats):
        arms["torch"].append(_time(run_torch, frames))
        arms["onnx"].append(_time(run_onnx, frames))
        arms["pre"].append(_time(run_preprocess, frames))
    t, o, pre = (statistics.median(arms[name]) for name in ("torch", "onnx", "pre"))
    return t, o, pre, diff


def _compile_arm(frames, repeats):
    import torch

    from s2r.encoders import build_encoder
    from s2r.settings import current

    torch.set_num_threads(2)
    enc = build_encoder("efficientnet-lite0", device="cpu", settings=current())
    x = enc.preprocess(frames)
    eager = enc.folded_model(x[:1])
    try:
        compiled = torch.compile(eager, backend="inductor")
        start = time.perf_counter()
        with torch.inference_mode():
            got = compiled(x)
        compile_s = time.perf_counter() - start
    except Exception as error:  # noqa: BLE001 - report why, as one line
        print(f"torch.compile (inductor), efficientnet-lite0: failed: "
              f"{type(error).__name__}: {str(error).splitlines()[0][:160]}")
        return
    with torch.inference_mode():
        want = eager(x)
        diff = float((want - got).abs().max() / want.abs().max())
        arms = {"eager": [], "compiled": []}
        for _ in range(repeats):
            for name, fn in (("eager", eager), ("compiled", compiled)):
                start = time.perf_counter()
                fn(enc.preprocess(frames))
                arms[name].append((time.perf_counter() - start) * 1000.0)
    e, c = statistics.median(arms["eager"]), statistics.median(arms["compiled"])
    print(f"torch.compile (inductor), efficientnet-lite0, 2 threads, idle: compile "
          f"{compile_s:.1f} s; eager {e:.1f} ms, compiled {c:.1f} ms, ratio {e / c:.2f}x, "
          f"diff {diff:.1e}")


def _int8_arm(encoder_id, frames, thread_counts, repeats, settings, graph_dir):
    """torch fp32, torch int8 and ONNX Runtime fp32 of one int8-capable encoder, alternating,
    per thread count; ``err`` = the int8 model's :func:`~s2r.encoders.quantize.int8_error`."""
    import torch

    from s2r.encoders import build_encoder
    from s2r.encoders.quantize import quantize_int8
    from s2r.encoders.runtime import OnnxModel

    fp32 = build_encoder(encoder_id, device="cpu", settings=settings, runtime="torch")
    onnx = build_encoder(encoder_id, device="cpu", settings=settings, runtime="onnx")
    onnx.graph_dir = graph_dir
    int8 = quantize_int8(fp32, frames)
    for threads in thread_counts:
        torch.set_num_threads(threads)
        onnx.threads, onnx._graphs = threads, {}
        fp32.threads = int8.threads = threads     # each pass sets torch's threads to these
        onnx.embed(frames)
        if not isinstance(onnx._graphs.get("embed"), OnnxModel):
            print(f"{encoder_id:24} runs torch under ONNX Runtime: skipped")
            return
        arms = {"fp32": fp32.embed, "int8": int8.embed, "onnx": onnx.embed}
        times: dict = {name: [] for name in arms}
        for fn in arms.values():
            fn(frames)                                  # warm-up
        for _ in range(repeats):
            for name, fn in arms.items():
                times[name].append(_time(fn, frames))
        t, q, o = (statistics.median(times[n]) for n in ("fp32", "int8", "onnx"))
        print(f"{encoder_id:24} {threads:>7} {t:>10.1f} {q:>9.1f} {o:>9.1f} {t / q:>10.2f}x "
              f"{o / q:>10.2f}x {int8.int8_error:>6.3f}", flush=True)


def main(argv=None) -> int:
    import torch

    from s2r.encoders import build_encoder, status
    from s2r.encoders.runtime import OnnxModel
    from s2r.settings import current

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", default=",".join(DEFAULT_ENCODERS))
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--beside", type=int, default=1,
                        help="busy processes beside the embedding in the busy arm")
    parser.add_argument("--no-busy", action="store_true")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--int8", action="store_true",
                        help="torch int8 vs ONNX Runtime fp32 vs torch fp32 (idle only)")
    args = parser.parse_args(argv)
    frames = np.random.default_rng(0).integers(0, 256, (args.frames, 96, 128, 3),
                                               dtype=np.uint8)
    thread_counts = [int(t) for t in args.threads.split(",")]
    settings = current()
    loads = ["idle"] + ([] if args.no_busy else ["busy"])
    print(f"{args.frames} frames 96x128, median of {args.repeats} alternating repeats, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__}, load {os.getloadavg()[0]:.2f}")
    graph_dir = tempfile.mkdtemp(prefix="s2r-bench-graphs-")
    if args.int8:
        print(f"{'encoder':24} {'threads':>7} {'fp32 ms':>10} {'int8 ms':>9} {'onnx ms':>9} "
              f"{'fp32/int8':>11} {'onnx/int8':>11} {'err':>6}")
        for encoder_id in args.encoders.split(","):
            _int8_arm(encoder_id, frames, thread_counts, args.repeats, settings, graph_dir)
        return 0
    print(f"{'encoder':24} {'threads':>7} {'load':>5} {'torch ms':>9} {'onnx ms':>8} "
          f"{'ratio':>6} {'pre ms':>7} {'model':>6} {'diff':>8}")
    for encoder_id in args.encoders.split(","):
        if encoder_id.startswith("mw-simcnn") and status(
                encoder_id, settings=settings).state != "ready":
            print(f"{encoder_id:24} skipped: its weights are not here (trained on first use)")
            continue
        enc = build_encoder(encoder_id, device="cpu", settings=settings, runtime="onnx")
        enc.graph_dir = graph_dir
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            first = enc.inference_model(enc.preprocess(frames[:1]))
        if not isinstance(first, OnnxModel):
            print(f"{encoder_id:24} runs torch: {seen[-1].message if seen else '?'}")
            continue
        (graph,) = Path(graph_dir).glob("*.onnx")   # the one graph s2r just wrote
        graphs = {t: OnnxModel(graph.read_bytes(), threads=t) for t in thread_counts}
        for load in loads:
            spinners = _busy(args.beside) if load == "busy" else []
            label = f"+{args.beside}" if load == "busy" else load
            try:
                for threads in thread_counts:
                    t, o, pre, diff = _compare(enc, graphs, frames, threads, args.repeats)
                    model = (t - pre) / (o - pre) if o > pre else float("nan")
                    print(f"{encoder_id:24} {threads:>7} {label:>5} {t:>9.1f} {o:>8.1f} "
                          f"{t / o:>5.2f}x {pre:>7.1f} {model:>5.2f}x {diff:>8.1e}",
                          flush=True)
            finally:
                _stop(spinners)
        for record in Path(graph_dir).glob("*"):
            record.unlink()
    if not args.no_compile:
        _compile_arm(frames, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
