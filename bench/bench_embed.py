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

Goal: the pipeline >= 2x the reference path for ResNet18 on CPU.

Usage: ``python bench/bench_embed.py [--quick] [--frames N] [--batch-size B]
[--encoders a,b,...] [--device cpu|cuda] [--demo]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.embed import compute_embeddings  # noqa: E402
from s2r.frameset import FrameSet  # noqa: E402

DEFAULT_ENCODERS = ("resnet18@random", "efficientnet-lite0", "vit@random", "pixels")


def make_frames(n: int, demo: bool) -> np.ndarray:
    """``n`` uint8 frames of 240x320x3."""
    if demo:
        from s2r.datasets.demo import make_demo

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
    args = parser.parse_args(argv)
    n = args.frames or (16 if args.quick else 96)
    args.rounds = args.rounds or (1 if args.quick else 2)
    bs = args.batch_size

    from s2r.encoders import build_encoder

    frames = make_frames(n, args.demo)
    fs = frameset_of(frames)
    print(f"{n} frames 240x320, batch {bs}, best of {args.rounds} rounds, "
          f"torch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads")

    rows = []
    for encoder_id in [e.strip() for e in args.encoders.split(",") if e.strip()]:
        enc = build_encoder(encoder_id, device=args.device)
        ref_model = reference_model(enc)
        warm = frames[:min(bs, n)]
        compute_embeddings(frameset_of(warm), enc, batch_size=bs)
        reference_embed(warm, enc, ref_model, bs)
        got = rates({
            "p_ref": lambda: preprocess_only(frames, enc, bs, reference=True),
            "p_ours": lambda: preprocess_only(frames, enc, bs, reference=False),
            "r_ref": lambda: reference_embed(frames, enc, ref_model, bs),
            "r_ours": lambda: compute_embeddings(fs, enc, batch_size=bs),
        }, n, args.rounds)
        (p_ref, _), (p_ours, _), (r_ref, z_ref), (r_ours, z_ours) = got.values()
        rows.append((f"{encoder_id} ({enc.device})", p_ref, p_ours, r_ref, r_ours,
                     cosine(z_ref, z_ours)))
        print(f"  {encoder_id}: reference {r_ref:7.1f} frames/s, s2r {r_ours:7.1f} frames/s",
              flush=True)
        del enc, ref_model

    print()
    print("frames/s; 'pre' = preprocessing only, 'embed' = preprocessing + model")
    print(f"{'encoder':30s} {'ref pre':>8s} {'s2r pre':>8s} {'ratio':>6s} {'ref embed':>10s} "
          f"{'s2r embed':>10s} {'ratio':>6s} {'cos':>7s}")
    for label, p_ref, p_ours, r_ref, r_ours, cos in rows:
        print(f"{label:30s} {p_ref:8.1f} {p_ours:8.1f} {p_ours / p_ref:5.2f}x {r_ref:10.1f} "
              f"{r_ours:10.1f} {r_ours / r_ref:5.2f}x {cos:7.4f}")
    resnet = [r for r in rows if r[0].startswith("resnet18")]
    if resnet:
        ratio = resnet[0][4] / resnet[0][3]
        print(f"goal resnet18 >= 2x the reference path: {'met' if ratio >= 2 else 'NOT met'} "
              f"({ratio:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
