"""``python -m s2r saliency DATASET --encoder NAME --frames 0,5,10 --out DIR``: saliency maps
of sim frames and their real partners, as overlay PNGs and a JSON of measures.

Each sim frame is paired with its real partner (:func:`s2r.pairing.pair_frames`: nearest
real frame by robot state, else action). Per pair the command writes
``pair_<k>_sim<i>_real<j>.png`` (sim overlay left, real overlay right) and one
``saliency.json`` with, per pair, the sim/real agreement (Spearman correlation of the two maps
on a 56x56 grid) and, when the dataset has task-relevant masks, the focus (share of saliency
inside the mask), the mask area (chance level) and the lift (focus / area) of each frame.
"""

from __future__ import annotations

import json
import math

import numpy as np

from s2r.cli import (add_command, add_force_arg, add_runtime_args, announce_first_use,
                     atomic_output, cache_from_args, dataset_from_args, integer_arg, output_folder,
                     settings_from_args, train_announced)
from s2r.errors import S2RError

_GAP = 4  # white pixels between the sim and the real overlay


def register(subparsers) -> None:
    from s2r.options import METHODS, TARGET_KINDS

    p = add_command(
        subparsers, "saliency",
        help="saliency maps of sim/real frame pairs: overlay PNGs and a JSON of focus and "
             "sim/real agreement",
        description="Compute saliency maps (Captum) of sim frames and their paired real frames "
                    "for one encoder and target; write side-by-side overlay PNGs and "
                    "saliency.json (focus on the task-relevant mask when the dataset has "
                    "masks, sim/real agreement per pair).",
        dataset=True, encoder=True, show_defaults=True)
    p.add_argument("--frames", default=None, metavar="IDS",
                   help="comma-separated FrameSet indices of sim frames (default: 4 sim frames "
                        "evenly spread over the dataset)")
    p.add_argument("--target", choices=TARGET_KINDS, default="embedding",
                   help="embedding: norm of the embedding; action: action-probe prediction of "
                        "--action-dim (probe fitted on sim frames); domain: domain-probe "
                        "logit toward each frame's own domain; pair: cosine similarity to the "
                        "partner frame's embedding")
    p.add_argument("--action-dim", default="0", metavar="J",
                   help="action dimension for --target action (index or name)")
    p.add_argument("--method", choices=METHODS, default="gradcam",
                   help="gradcam (Captum LayerGradCam), ig (Integrated Gradients) or "
                        "occlusion")
    p.add_argument("--layer", default=None, metavar="NAME",
                   help="explain the encoder at this layer (Grad-CAM on that layer's output, "
                        "the target on its pooled embedding; see 'score --layers'); default "
                        "its final embedding")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    add_force_arg(p)
    p.add_argument("--batch-size", type=integer_arg, default=8, metavar="B",
                   help="frames per forward/backward pass")
    add_runtime_args(p, no_cache=False, runtime=False)
    p.set_defaults(func=run)


def parse_frame_ids(text, frameset) -> np.ndarray:
    """Sim frame indices from ``"0,5,10"`` (ASCII digits: :func:`s2r.inputs.parse_integer`);
    default 4 sim frames evenly spread."""
    from s2r.inputs import parse_integer

    if text is None:
        sim = frameset.indices("sim")
        return sim[np.unique(np.linspace(0, sim.size - 1, min(4, sim.size)).astype(int))]
    try:
        ids = [parse_integer(part.strip()) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise S2RError(f"--frames must be comma-separated frame indices like 0,5,10, got "
                       f"{text!r}") from None
    if not ids:
        raise S2RError("--frames names no frame")
    bad = [i for i in ids if not 0 <= i < len(frameset)]
    if bad:
        raise S2RError(f"--frames {text!r}: {bad[0]} is not a frame index; indices run from 0 "
                       f"to {len(frameset) - 1} (sim frames: {_ranges(frameset.indices('sim'))})")
    return np.asarray(ids, dtype=np.int64)


def _ranges(indices: np.ndarray) -> str:
    """``"0..95, 192..287"``: the runs of consecutive indices."""
    if indices.size == 0:
        return "none"
    breaks = np.flatnonzero(np.diff(indices) != 1) + 1
    runs = np.split(indices, breaks)
    return ", ".join(f"{r[0]}..{r[-1]}" if r.size > 1 else f"{r[0]}" for r in runs[:4]) + \
        (", ..." if len(runs) > 4 else "")


def side_by_side(left: np.ndarray, right: np.ndarray, gap: int = _GAP) -> np.ndarray:
    """Two ``(H, W, 3)`` uint8 images next to each other with a white gap."""
    spacer = np.full((left.shape[0], gap, 3), 255, dtype=np.uint8)
    return np.concatenate([left, spacer, right], axis=1)


def _finite_or_none(value):
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _mean(values) -> "float | None":
    values = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(values)) if values else None


def run(args) -> int:
    from PIL import Image

    from s2r.encoders import build_encoder, get_spec
    from s2r.pipeline.saliency import pair_saliency
    from s2r.progress import tqdm_progress
    from s2r.saliency import overlay

    if args.batch_size < 1:
        raise S2RError(f"--batch-size must be a positive integer, got {args.batch_size}")
    out = output_folder(args.out, args=args, kind="saliency",
                        files=("saliency.json", "pair_*.png"))
    settings = settings_from_args(args)
    spec = get_spec(args.encoder, settings=settings)  # an unknown id fails before any work
    cache = cache_from_args(args)
    if args.layer is not None:                 # and an unknown layer, naming the encoder's
        from s2r.embed.layers import plan_of
        from s2r.encoders.taps import select_layers

        select_layers(plan_of(spec, cache=cache, settings=settings), [args.layer],
                      encoder=spec.id)
    first_use = announce_first_use([spec.id], args)
    frameset = dataset_from_args(args).require_domains()
    sim_idx = parse_frame_ids(args.frames, frameset)
    train_announced(first_use, args)
    encoder = build_encoder(args.encoder, device=args.device, settings=settings)
    with tqdm_progress(f"saliency {args.encoder}") as progress:
        result = pair_saliency(frameset, encoder, sim_idx, target=args.target,
                               method=args.method, action_dim=args.action_dim,
                               batch_size=args.batch_size, cache=cache, progress=progress,
                               settings=settings, layer=args.layer)
    out.mkdir(parents=True, exist_ok=True)
    measures = result.measures()
    pairs = []
    for k, (i, j) in enumerate(zip(result.sim_indices, result.real_indices)):
        png = f"pair_{k:02d}_sim{int(i)}_real{int(j)}.png"
        image = side_by_side(overlay(result.sim_frames[k], result.sim.maps[k]),
                             overlay(result.real_frames[k], result.real.maps[k]))
        with atomic_output(out / png, args, "saliency") as tmp:
            Image.fromarray(image).save(tmp)
        m = measures[k]
        pairs.append(_finite_or_none({
            "sim_index": int(i), "real_index": int(j), "png": png,
            "agreement": m["agreement"], "sim_focus": m["sim"], "real_focus": m["real"],
            "sim_constant": bool(result.sim.constant[k]),
            "real_constant": bool(result.real.constant[k])}))
    summary = {
        "mean_agreement": _mean([m["agreement"] for m in measures]),
        "mean_focus_sim": _mean([m["sim"]["focus"] for m in measures if m["sim"]]),
        "mean_focus_real": _mean([m["real"]["focus"] for m in measures if m["real"]]),
        "mean_lift_sim": _mean([m["sim"]["lift"] for m in measures if m["sim"]]),
        "mean_lift_real": _mean([m["real"]["lift"] for m in measures if m["real"]]),
    }
    report = {"dataset": frameset.name, "fingerprint": frameset.fingerprint,
              "encoder": encoder.spec.id, "layer": args.layer, "method": args.method,
              "target": result.target,
              "has_masks": frameset.has_masks, "agreement_grid": 56, "pairs": pairs,
              "summary": summary}
    with atomic_output(out / "saliency.json", args, "saliency") as tmp:
        tmp.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {len(pairs)} pair overlays and saliency.json to {out}/ "
          f"({encoder.spec.id}{' at ' + args.layer if args.layer else ''}, {args.method}, "
          f"target {result.target})")
    for p in pairs:
        focus = ("" if p["sim_focus"] is None else
                 f"  focus sim {_fmt(p['sim_focus']['focus'])} real "
                 f"{_fmt(p['real_focus']['focus'])} (mask area {_fmt(p['sim_focus']['area'])})")
        print(f"  sim {p['sim_index']:>6} / real {p['real_index']:>6}: agreement "
              f"{_fmt(p['agreement'])}{focus}")
    return 0


def _fmt(value) -> str:
    return "  n/a" if value is None else f"{value:5.2f}"
