"""``python -m s2r train-encoder``: a small CNN trained on a dataset's sim frames, registered
as a user encoder (see :mod:`s2r.pipeline.train_encoder`).

::

    python -m s2r train-encoder my_dataset/ --augment 0.5 --out my-simcnn
    python -m s2r score my_dataset/ --encoders my-simcnn,efficientnet-lite0,...
"""

from __future__ import annotations

import math

from s2r.cli import add_command, dataset_from_args
from s2r.errors import S2RError


def register(subparsers) -> None:
    p = add_command(
        subparsers, "train-encoder",
        help="train a small CNN on a dataset's sim frames (to predict its state/actions, with "
             "augmentation) and register it as a user encoder: the control a pretrained "
             "encoder should beat",
        description="Reads the SIM frames of DATASET only, trains a small seeded CNN to predict "
                    "their robot state and/or actions with torchvision v2 augmentation (colour, "
                    "brightness, blur, noise, small shifts) at --augment, writes "
                    "NAME.safetensors to the weights folder (S2R_WEIGHTS_DIR or ./weights) and "
                    "adds NAME to the encoder config file in effect (S2R_ENCODERS, else "
                    "./s2r_encoders.toml, created if missing).",
        dataset=True, show_defaults=True)
    p.add_argument("--augment", type=float, required=True, metavar="STRENGTH",
                   help="augmentation strength in [0, 1] (0 = none)")
    p.add_argument("--out", required=True, metavar="NAME", help="the new encoder's id")
    p.add_argument("--epochs", type=int, default=10, help="training epochs")
    p.add_argument("--max-frames", type=int, default=6000, metavar="N",
                   help="at most this many sim frames (a seeded subset when there are more)")
    p.add_argument("--seed", type=int, default=0, help="subset, initialisation, batches, "
                                                       "augmentation")
    p.set_defaults(func=run)


def run(args) -> int:
    from s2r.pipeline.train_encoder import train_encoder
    from s2r.progress import tqdm_progress

    if not (math.isfinite(args.augment) and 0.0 <= args.augment <= 1.0):
        raise S2RError(f"--augment: expected a strength in [0, 1], got {args.augment:g}")
    if args.seed < 0:
        raise S2RError(f"--seed must be >= 0, got {args.seed}")
    frameset = dataset_from_args(args)
    with tqdm_progress(f"train-encoder {args.out}") as progress:
        result = train_encoder(frameset, args.out, augment=args.augment, seed=args.seed,
                               epochs=args.epochs, max_frames=args.max_frames,
                               progress=progress)
    print(f"trained {result['id']} on {result['frames']} sim frames to predict "
          f"{result['targets']} (loss {result['loss'][0]:.3f} -> {result['loss'][-1]:.3f})")
    print(f"wrote {result['weights']}; registered in {result['config']}")
    return 0
