"""``python -m s2r train-encoder``: a small CNN trained on a dataset's sim frames, registered
as a user encoder (see :mod:`s2r.pipeline.train_encoder`).

::

    python -m s2r train-encoder my_dataset/ --augment 0.5 --out my-simcnn
    python -m s2r score my_dataset/ --encoders my-simcnn,efficientnet-lite0,...

The options, the name, the weights folder and the config file are checked before the dataset
is read; the name is then reserved (a second run with the same ``--out`` is refused at once).
"""

from __future__ import annotations

import math

from s2r.cli import add_command, dataset_from_args, integer_arg, settings_from_args
from s2r.errors import S2RError


def register(subparsers) -> None:
    from s2r.pipeline.train_encoder import MAX_EPOCHS, NAME_MAX_LENGTH

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
                    "./s2r_encoders.toml, created if missing). The name, the weights folder "
                    "and the config file are checked before the dataset is read; a second run "
                    "with the same NAME is refused while the first runs.",
        dataset=True, show_defaults=True)
    p.add_argument("--augment", required=True, metavar="STRENGTH",
                   help="augmentation strength in [0, 1] (0 = none)")
    p.add_argument("--out", required=True, metavar="NAME",
                   help=f"the new encoder's id: at most {NAME_MAX_LENGTH} ASCII letters, digits "
                        "and . _ + - (starting with a letter or digit), not a built-in id or "
                        "file name in any letter case")
    p.add_argument("--epochs", type=integer_arg, default=10,
                   help=f"training epochs (at most {MAX_EPOCHS:,})")
    p.add_argument("--max-frames", type=integer_arg, default=6000, metavar="N",
                   help="at most this many sim frames (a seeded subset when there are more)")
    p.add_argument("--seed", type=integer_arg, default=0,
                   help="subset, initialisation, batches, augmentation")
    p.set_defaults(func=run)


def strength(text: str) -> float:
    """``--augment``'s value: a number in [0, 1]; the error quotes it as given."""
    from s2r.inputs import parse_decimal, quoted

    try:
        value = parse_decimal(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise S2RError(f"--augment: expected a strength in [0, 1], got {quoted(text)}")
    return value


def run(args) -> int:
    from s2r.pipeline.train_encoder import check_options, reserve, train_encoder
    from s2r.progress import tqdm_progress

    augment = strength(args.augment)
    check_options(augment=augment, epochs=args.epochs, max_frames=args.max_frames,
                  seed=args.seed)
    settings = settings_from_args(args)
    with reserve(args.out, settings=settings) as dest:
        frameset = dataset_from_args(args)
        with tqdm_progress(f"train-encoder {dest.name}") as progress:
            result = train_encoder(frameset, dest.name, augment=augment, seed=args.seed,
                                   epochs=args.epochs, max_frames=args.max_frames,
                                   progress=progress, reserved=dest, settings=settings)
    print(f"trained {result['id']} on {result['frames']} sim frames to predict "
          f"{result['targets']} (loss {result['loss'][0]:.3f} -> {result['loss'][-1]:.3f})")
    print(f"wrote {result['weights']}; registered in {result['config']}")
    return 0
