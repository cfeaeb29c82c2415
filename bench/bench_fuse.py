"""BatchNorm folding for inference: the embedding speed of each CNN with and without it.

For every encoder, times the original module (:attr:`Encoder.model`, what saliency runs) and
the folded copy :meth:`Encoder.embed` runs (:func:`s2r.encoders.fuse.fold_batchnorm`) on the
same normalised batch, alternating the two, and prints the ratio and the largest difference of
the embeddings relative to their scale.

    python bench/bench_fuse.py [--encoders efficientnet-lite0,resnet18@random] [--batch 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.encoders import build_encoder
from s2r.settings import current

DEFAULT = ("efficientnet-lite0,efficientnet-lite1,efficientnet-lite2,resnet18@random,"
           "mobilenetv3@random,efficientnet-b0@random")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoders", default=DEFAULT)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    frames = np.random.default_rng(0).integers(0, 256, (args.batch, 96, 128, 3), dtype=np.uint8)
    print(f"{torch.get_num_threads()} threads, batch {args.batch} of 96 x 128 frames")
    for encoder_id in args.encoders.split(","):
        enc = build_encoder(encoder_id, device="cpu", settings=current())
        x = enc.preprocess(frames)
        folded = enc.inference_model(x[:1])
        times = {"original": [], "folded": []}
        with torch.inference_mode():
            want = enc.forward(x).numpy()
            got = enc.forward(x, model=folded).numpy()
            for _ in range(args.repeats):
                for name, model in (("original", enc.model), ("folded", folded)):
                    t0 = time.perf_counter()
                    enc.forward(x, model=model)
                    times[name].append(time.perf_counter() - t0)
        t0, t1 = (float(np.median(times[k])) for k in ("original", "folded"))
        err = float(np.abs(got - want).max() / np.abs(want).max())
        print(f"{encoder_id:24s} original {t0 * 1e3:6.0f} ms, folded {t1 * 1e3:6.0f} ms: "
              f"{t0 / t1:.2f}x faster; embeddings differ by {err:.1e} of their scale"
              + ("" if folded is not enc.model else " (nothing folded)"))


if __name__ == "__main__":
    main()
