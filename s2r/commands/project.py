"""``python -m s2r project DATASET --encoder NAME --out FILE.csv``: t-SNE map of sim and real
frames (openTSNE, cached) and the mixing number.

The CSV has one row per projected frame: ``index`` (FrameSet row), ``domain``, ``x``, ``y``.
The mixing number (1 = sim and real frames as mixed as random labels, 0 = separated; see
:func:`s2r.projection.mixing_number`) is printed. ``--mode place-real`` fits the map on sim
frames only and places each real frame into it.
"""

from __future__ import annotations

from s2r.cli import (add_command, add_force_arg, add_runtime_args, announce_first_use,
                     atomic_output, cache_from_args, dataset_from_args, integer_arg, number_arg,
                     output_file, settings_from_args, train_announced)
from s2r.errors import S2RError


def register(subparsers) -> None:
    from s2r.projection import MODES

    p = add_command(
        subparsers, "project",
        help="t-SNE map of sim and real embeddings into a CSV (index, domain, x, y) and the "
             "mixing number",
        description="Embed DATASET with one encoder (cached), project sim and real frames to "
                    "2-D with openTSNE (PCA to 50 dimensions first, PCA initialisation, fixed "
                    "seed; cached) and write index, domain, x, y per frame. Prints the mixing "
                    "number: 1 = as mixed as random labels, 0 = separated domains.",
        dataset=True, encoder=True, show_defaults=True)
    p.add_argument("--out", required=True, metavar="FILE.csv", help="output CSV file")
    add_force_arg(p)
    p.add_argument("--mode", choices=MODES, default="joint",
                   help="joint: fit all frames; place-real: fit sim frames, place real ones")
    p.add_argument("--max-per-domain", type=integer_arg, default=0, metavar="N",
                   help="fit the map on at most N frames per domain (stratified by episode, "
                        "seeded; the mixing number still uses every frame); 0 = all frames")
    p.add_argument("--perplexity", type=number_arg, default=30.0, help="t-SNE perplexity")
    p.add_argument("--seed", type=integer_arg, default=0, help="seed of subsampling, PCA and t-SNE")
    p.add_argument("--k", type=integer_arg, default=15, help="neighbours of the mixing number")
    add_runtime_args(p, no_cache=False, precision=True)
    p.set_defaults(func=run)


def run(args) -> int:
    from s2r.encoders import get_spec
    from s2r.pipeline import project_frameset
    from s2r.progress import tqdm_progress

    out = output_file(args.out, (".csv",), args=args, kind="projection")
    if args.max_per_domain < 0:
        raise S2RError(f"--max-per-domain must be >= 0 (0 = all frames), got "
                       f"{args.max_per_domain}")
    if not args.perplexity > 0:
        raise S2RError(f"--perplexity must be > 0, got {args.perplexity}")
    if args.k < 1:
        raise S2RError(f"--k must be >= 1, got {args.k}")
    settings = settings_from_args(args)
    get_spec(args.encoder, settings=settings)  # an unknown id fails before any work
    cache = cache_from_args(args)
    first_use = announce_first_use([args.encoder], args)
    frameset = dataset_from_args(args)
    train_announced(first_use, args)
    with tqdm_progress(f"project {args.encoder}") as progress:
        proj = project_frameset(
            frameset, args.encoder, cache=cache, mode=args.mode,
            max_per_domain=args.max_per_domain or None, perplexity=args.perplexity,
            seed=args.seed, k=args.k, device=args.device, precision=args.precision,
            progress=progress, settings=settings)
    with atomic_output(out, args, "projection") as tmp:
        proj.to_frame().to_csv(tmp, index=False)
    print(f"wrote {out}: {proj.params['n_sim']} sim + {proj.params['n_real']} real frames "
          f"({args.mode}, perplexity {proj.params['perplexity']:g})")
    print(f"mixing number ({args.encoder}, k={proj.params['k']}, all "
          f"{proj.params['n_frames']} frames): {proj.mixing:.3f}  "
          "(1 = as mixed as random labels, 0 = separated)")
    print(f"t-SNE KL divergence {proj.kl_divergence:.3f} after "
          f"{proj.params['early_exaggeration_iter']} + {proj.params['n_iter_run']} iterations")
    for w in proj.params.get("warnings", []):
        print(f"warning: {w}")
    return 0
