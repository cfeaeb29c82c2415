"""Frames/s of s2r's embedding pipeline vs the paper's reference path, same frames, same model.

For each encoder (default: resnet18@random, efficientnet-lite0, vit@random, pixels):

- **reference path** (the paper's code): per frame ``PIL.Image.resize((224, 224))`` +
  ``ToTensor`` + ``Normalize``, then ``torch.cat`` of the batch, then the model;
- **s2r pipeline**: :func:`s2r.embed.compute_embeddings` over a FrameSet: batched uint8 resize
  (``torchvision.transforms.v2.functional.resize``, antialias) + normalise on the device, a
  background thread reading the next batch, the model.

Both paths run the same weights on the same 240x320 frames (random uint8, or ``--demo`` for
demo scene frames) in the same process, one warm-up batch each first. The reference runs
the model as the reference code does (fp32, default NCHW memory format); s2r runs it as its
``Encoder`` does (channels_last for CNNs on CPU, fp16 on CUDA). A preprocessing-only column
(no model) isolates the resize cost. The cosine similarity
between the two paths' embeddings is printed as a sanity check (the two resizes are both
antialiased bilinear, so they agree closely but not bit for bit).

For encoders that offer it (registry ``int8=True``) on CPU, the opt-in int8 path
(``precision="int8"``, :mod:`s2r.encoders.quantize`) is timed too, as its own column: the
one-time quantization (calibration on 64 frames + conversion) is printed separately with the
number of frames after which it has paid for itself, and the cosine similarity of its
embeddings to the reference's fp32 ones.

Goal: the pipeline >= 2x the reference path for ResNet18 on CPU. The script also prints the
fp32 ceiling: the reference's own forward pass against this CPU's measured fp32 matrix-multiply
rate, i.e. how much any fp32 pipeline could gain at most.

Usage: ``python bench/bench_embed.py [--quick] [--frames N] [--batch-size B]
[--encoders a,b,...] [--device cpu|cuda] [--demo] [--no-int8]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.embed import compute_embeddings
from s2r.frameset import FrameSet
from s2r.settings import current

DEFAULT_ENCODERS = ("resnet18@random", "efficientnet-lite0", "vit@random", "pixels")


def make_frames(n: int, demo: bool) -> np.ndarray:
    """``n`` uint8 frames of 240x320x3."""
    if demo:
        from s2r.worlds.demo.dataset import make_demo

        steps = max(1, -(-n // 2))
        fs = make_demo(episodes=1, steps=steps, gap=0.5, seed=0, height=240, width=320)
        return fs.read_images(np.arange(n))
    return np.random.default_rng(0).integers(0, 256, (n, 240, 320, 3), dtype=np.uint8)


def frameset_of(frames: np.ndarray) -> FrameSet:
    n = len(frames)
    return FrameSet(images=frames, actions=np.zeros((n, 1), np.float32),
                    domain=np.array(["sim"] * n), episode=np.zeros(n, np.int64),
                    step=np.arange(n), name="bench")


def reference_preprocess(frames: np.ndarray, encoder) -> torch.Tensor:
    """The paper's path: one PIL resize + ToTensor + Normalize per frame, then torch.cat."""
    from PIL import Image
    from torchvision import transforms

    to_tensor = transforms.Compose([
        transforms.Resize(tuple(encoder.input_size)),  # PIL bilinear, antialiased
        transforms.ToTensor(),
        transforms.Normalize(encoder.spec.mean, encoder.spec.std),
    ])
    return torch.cat([to_tensor(Image.fromarray(f)).unsqueeze(0) for f in frames])


def reference_model(encoder) -> torch.nn.Module:
    """The encoder's model as the reference code runs it: fp32, default (NCHW) memory format."""
    import copy

    return copy.deepcopy(encoder.model).float().to(memory_format=torch.contiguous_format).eval()


def reference_embed(frames: np.ndarray, encoder, model, batch_size: int) -> np.ndarray:
    outs = []
    with torch.no_grad():
        for s in range(0, len(frames), batch_size):
            x = reference_preprocess(frames[s:s + batch_size], encoder)
            outs.append(model(x.to(encoder.device)).flatten(1).float().cpu().numpy())
    return np.concatenate(outs)


def preprocess_only(frames: np.ndarray, encoder, batch_size: int, reference: bool) -> None:
    with torch.inference_mode():
        for s in range(0, len(frames), batch_size):
            batch = frames[s:s + batch_size]
            if reference:
                reference_preprocess(batch, encoder).to(encoder.device)
            else:
                encoder.preprocess(batch)


def rates(fns: dict, n: int, rounds: int) -> dict:
    """Best frames/s of each function over ``rounds`` interleaved runs (and its last output).

    Interleaving and keeping the best run make the ratio robust to other load on the machine.
    """
    best = {name: (0.0, None) for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            out = fn()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            r = n / (time.perf_counter() - t0)
            best[name] = (max(best[name][0], r), out)
    return best


def sgemm_gflops(size: int = 2048, rounds: int = 5) -> float:
    """This CPU's best fp32 matrix-multiply rate (GFLOP/s) with torch's threads."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(rounds))
    return 2 * size ** 3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def forward_gflop(model, size: tuple) -> float:
    """GFLOP (2 x multiply-adds) of one frame through ``model``'s conv and linear layers."""
    macs = []

    def hook(module, inputs, output):
        if isinstance(module, torch.nn.Conv2d):
            k = module.weight[0].numel()  # (C_in / groups) * kh * kw
            macs.append(output.numel() * k)
        elif isinstance(module, torch.nn.Linear):
            macs.append(output.numel() * module.in_features)

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    try:
        with torch.inference_mode():
            model(torch.zeros(1, 3, *size))
    finally:
        for h in handles:
            h.remove()
    return 2 * sum(macs) / 1e9


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return float((a * b).sum(axis=1).mean())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 frames per encoder, 1 round")
    parser.add_argument("--frames", type=int, default=None, help="frames per encoder (96)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved timing rounds, best kept (default 2)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--encoders", default=",".join(DEFAULT_ENCODERS))
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    parser.add_argument("--demo", action="store_true", help="demo scene frames, not random")
    parser.add_argument("--no-int8", action="store_true", help="skip the int8 column")
    args = parser.parse_args(argv)
    n = args.frames or (16 if args.quick else 96)
    args.rounds = args.rounds or (1 if args.quick else 2)
    bs = args.batch_size

    from s2r.encoders import build_encoder
    from s2r.encoders.quantize import (MAX_INT8_ERROR, calibration_indices, int8_error,
                                       int8_unavailable_reason, quantize_int8)

    frames = make_frames(n, args.demo)
    fs = frameset_of(frames)
    print(f"{n} frames 240x320, batch {bs}, best of {args.rounds} rounds, "
          f"torch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads")

    rows = []
    for encoder_id in [e.strip() for e in args.encoders.split(",") if e.strip()]:
        enc = build_encoder(encoder_id, device=args.device, settings=current())
        ref_model = reference_model(enc)
        warm = frames[:min(bs, n)]
        compute_embeddings(frameset_of(warm), enc, batch_size=bs)
        reference_embed(warm, enc, ref_model, bs)
        fns = {
            "p_ref": lambda: preprocess_only(frames, enc, bs, reference=True),
            "p_ours": lambda: preprocess_only(frames, enc, bs, reference=False),
            "r_ref": lambda: reference_embed(frames, enc, ref_model, bs),
            "r_ours": lambda: compute_embeddings(fs, enc, batch_size=bs),
        }
        int8_setup = None
        if not args.no_int8 and int8_unavailable_reason(enc.spec, enc.device) is None:
            t0 = time.perf_counter()
            calibration = frames[calibration_indices(fs.domain)]
            q = quantize_int8(enc, calibration)
            int8_setup = time.perf_counter() - t0
            compute_embeddings(frameset_of(warm), q, batch_size=bs)
            fns["r_int8"] = lambda: compute_embeddings(fs, q, batch_size=bs)
        got = rates(fns, n, args.rounds)
        (p_ref, _), (p_ours, _), (r_ref, z_ref), (r_ours, z_ours) = list(got.values())[:4]
        r_int8, z_int8 = got.get("r_int8", (None, None))
        cos_int8 = None if z_int8 is None else (cosine(z_ref, z_int8), int8_error(z_ours, z_int8))
        # the fp32 ceiling is only meaningful for dense convolutions (depthwise ones are
        # memory-bound): the ResNet/VGG types, i.e. the int8 ones
        flop = forward_gflop(ref_model, tuple(enc.input_size)) if enc.spec.int8 else None
        rows.append((f"{encoder_id} ({enc.device})", p_ref, p_ours, r_ref, r_ours,
                     cosine(z_ref, z_ours), r_int8, cos_int8, int8_setup, flop))
        print(f"  {encoder_id}: reference {r_ref:7.1f} frames/s, s2r {r_ours:7.1f} frames/s"
              + ("" if r_int8 is None else f", s2r int8 {r_int8:7.1f} frames/s"), flush=True)
        enc = ref_model = None  # free the models before the next encoder

    peak = sgemm_gflops() if args.device in (None, "cpu") and not torch.cuda.is_available() \
        else None
    print()
    print("frames/s; 'pre' = preprocessing only, 'embed' = preprocessing + model; cos = "
          "cosine similarity to the reference's embeddings")
    print(f"{'encoder':30s} {'ref pre':>8s} {'s2r pre':>8s} {'ratio':>6s} {'ref embed':>10s} "
          f"{'s2r embed':>10s} {'ratio':>6s} {'cos':>7s} {'s2r int8':>9s} {'ratio':>6s} "
          f"{'cos':>7s} {'error':>6s}")
    for label, p_ref, p_ours, r_ref, r_ours, cos, r_int8, cos_int8, _, _ in rows:
        int8 = (f"{'-':>9s} {'-':>6s} {'-':>7s} {'-':>6s}" if r_int8 is None else
                f"{r_int8:9.1f} {r_int8 / r_ref:5.2f}x {cos_int8[0]:7.4f} {cos_int8[1]:6.3f}")
        print(f"{label:30s} {p_ref:8.1f} {p_ours:8.1f} {p_ours / p_ref:5.2f}x {r_ref:10.1f} "
              f"{r_ours:10.1f} {r_ours / r_ref:5.2f}x {cos:7.4f} {int8}")
    if any(r[6] is not None for r in rows):
        print(f"int8 'error' = ||Z_int8 - Z_fp32|| / ||Z_fp32 - mean||; s2r embeds in int8 only "
              f"when it is <= {MAX_INT8_ERROR} on the calibration frames (else exactly)")
    for label, _, _, r_ref, r_ours, _, r_int8, _, setup, flop in rows:
        if setup is not None:
            gain = 1 / r_ours - 1 / r_int8  # seconds saved per frame
            print(f"{label}: int8 quantization {setup:.1f} s once per dataset; pays for "
                  f"itself after {setup / gain:.0f} frames" if gain > 0 else
                  f"{label}: int8 quantization {setup:.1f} s; int8 is not faster here")
        if flop is not None and peak is not None:
            print(f"{label}: {flop:.2f} GFLOP/frame; reference forward "
                  f"{flop * r_ref:.0f} GFLOP/s, s2r fp32 {flop * r_ours:.0f} GFLOP/s, this "
                  f"CPU's fp32 matmul peak {peak:.0f} GFLOP/s: an fp32 pipeline at that rate "
                  f"with free preprocessing would be {peak / (flop * r_ref):.2f}x the reference")
    resnet = [r for r in rows if r[0].startswith("resnet18")]
    if resnet:
        ratio = resnet[0][4] / resnet[0][3]
        print(f"goal resnet18 >= 2x the reference path: fp32 (default) "
              f"{'met' if ratio >= 2 else 'NOT met'} ({ratio:.2f}x)", end="")
        if resnet[0][6] is not None:
            ratio8, error = resnet[0][6] / resnet[0][3], resnet[0][7][1]
            print(f"; int8 (opt-in) speed {ratio8:.2f}x", end="")
            if error > MAX_INT8_ERROR:
                print(f", but its error {error:.3f} > {MAX_INT8_ERROR} here, so s2r would embed "
                      f"this model exactly", end="")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
