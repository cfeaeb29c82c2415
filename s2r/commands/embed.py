"""``python -m s2r embed DATASET --encoder NAME --out FILE.npz``: embed every frame, cached.

The npz holds ``embeddings`` (N, D) float32, ``domain`` (N,) str, ``episode`` (N,) int64,
``step`` (N,) int64, ``actions`` (N, A) float32, ``encoder`` (the registry id) and
``precision`` (``auto`` or ``int8``: what the embeddings were computed in), row ``i`` of each
describing frame ``i``. ``--precision int8`` embeds ResNet/VGG-type encoders in int8 on CPU.
A second run with the same dataset, encoder and precision reads the embeddings from the disk
cache.

``--backend ray [--address ADDR]`` embeds on a Ray cluster (:mod:`s2r.embed.ray_run`) into
the same cache entries; :func:`add_backend_args` and :func:`backend_from_args` are shared with
``score``.
"""

from __future__ import annotations

import argparse

from s2r.cli import (add_command, add_force_arg, add_runtime_args, announce_first_use,
                     atomic_output, cache_from_args, dataset_from_args, integer_arg, output_file,
                     settings_from_args, train_announced)
from s2r.errors import S2RError


def add_backend_args(parser) -> None:
    """Add ``--backend {local,ray}`` and ``--address ADDR`` to ``parser`` (or a group)."""
    parser.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="where to embed: this process (default) or a Ray cluster (needs "
                             "requirements-ray.txt); both use the same cache entries")
    parser.add_argument("--address", default=None, metavar="ADDR",
                        help="with --backend ray: the cluster's head, HOST:PORT (e.g. "
                             "10.0.0.1:6379), ray://HOST:PORT or auto (default "
                             "$S2R_RAY_ADDRESS; neither: a Ray instance on this machine)")


def backend_from_args(args) -> dict:
    """Check the backend options before any work; the Ray keywords (empty for local).

    Returns
    -------
    dict
        ``{}`` for ``--backend local``; for ``ray``: ``address`` and ``dataset`` (the spec and
        keys the workers open the dataset from), as
        :func:`s2r.embed.ray_run.embed_encoders_ray` takes them.
    """
    if args.backend != "ray":
        if args.address:
            raise S2RError("--address names a Ray cluster: add --backend ray")
        return {}
    from s2r.embed.ray_backend import check_address, import_ray

    if args.precision != "auto":
        raise S2RError(f"--precision {args.precision} runs on the local backend only; use "
                       "--precision auto with --backend ray")
    settings = settings_from_args(args)
    address = check_address(args.address, settings.ray_address)
    import_ray()
    keys = {"image_key": args.image_key, "action_key": args.action_key,
            "state_key": args.state_key}
    return {"address": address, "dataset": {"spec": list(args.dataset), "keys": keys},
            "settings": settings}


def runtime_cache(args):
    """The cache of the runtime arguments; with Ray, ``--device cuda`` is the cluster's
    business (checked there), not this machine's."""
    if args.backend == "ray":
        args = argparse.Namespace(**{**vars(args), "device": None})
    return cache_from_args(args)


def register(subparsers):
    p = add_command(
        subparsers, "embed",
        help="embed every frame of a dataset with one encoder (cached) into an .npz",
        description="Embed every frame of DATASET with one encoder and write an .npz with "
                    "embeddings (N, D) float32, domain, episode, step, actions and encoder. "
                    "Results are cached (see 'python -m s2r cache').", dataset=True, encoder=True)
    p.add_argument("--out", required=True, metavar="FILE.npz", help="output file (.npz)")
    add_force_arg(p)
    p.add_argument("--batch-size", type=integer_arg, default=None, metavar="B",
                   help="frames per forward pass (default 8 on CPU, 256 on CUDA; halved "
                        "automatically on out-of-memory)")
    add_runtime_args(p, precision=True)
    add_backend_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    import numpy as np

    from s2r.embed import embed_frameset, embedding_precision
    from s2r.encoders import get_spec
    from s2r.progress import tqdm_progress

    out = output_file(args.out, (".npz",), args=args, kind="embeddings")
    if args.batch_size is not None and args.batch_size < 1:
        raise S2RError(f"--batch-size must be a positive integer, got {args.batch_size}")
    settings = settings_from_args(args)
    get_spec(args.encoder, settings=settings)  # an unknown id fails before any work
    ray_options = backend_from_args(args)
    cache = runtime_cache(args)
    first_use = announce_first_use([args.encoder], args)
    frameset = dataset_from_args(args)
    train_announced(first_use, args)
    with tqdm_progress(f"embed {args.encoder}") as progress:
        if ray_options:
            from s2r.embed.ray_run import embed_frameset_ray

            Z = embed_frameset_ray(frameset, args.encoder, cache=cache, device=args.device,
                                   batch_size=args.batch_size, progress=progress,
                                   **ray_options)
        else:
            Z = embed_frameset(frameset, args.encoder, cache=cache, device=args.device,
                               batch_size=args.batch_size, precision=args.precision,
                               progress=progress, settings=settings)
    used = embedding_precision(frameset, args.encoder, precision=args.precision,
                               device=args.device, cache=cache, settings=settings)
    with atomic_output(out, args, "embeddings") as tmp:
        np.savez(tmp, embeddings=np.asarray(Z, dtype=np.float32), domain=frameset.domain,
                 episode=frameset.episode, step=frameset.step, actions=frameset.actions,
                 encoder=np.array(args.encoder), precision=np.array(used))
    print(f"wrote {out}: embeddings {Z.shape[0]} x {Z.shape[1]} float32 ({args.encoder}"
          f"{', int8' if used == 'int8' else ''}) for "
          f"{frameset.n_frames('sim')} sim + {frameset.n_frames('real')} real frames")
    return 0
