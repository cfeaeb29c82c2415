"""``python -m s2r score``: score encoders on a dataset into a leaderboard file; merge files.

Score (one record per encoder, see :func:`s2r.pipeline.score_encoder`)::

    python -m s2r score demo --encoders pixels,efficientnet-lite0 --out scores.csv
    python -m s2r score sim.zarr real.zarr --encoders 'r3m-*,mcr' --out fb.json --n-boot 500

A null control (actions permuted across frames within each domain; every skill should then
sit at 0 within its interval) and the pairwise ranking confidence::

    python -m s2r score demo --encoders pixels,state --out null.json --null shuffle:1
    python -m s2r score demo --encoders pixels,efficientnet-lite0 --out s.json --pairwise p.csv

Every layer of each encoder (one record per encoder and layer, all layers embedded in one
pass; each encoder's best layer on --layer-score marked, with its paired difference from the
final layer)::

    python -m s2r score demo --encoders efficientnet-lite0,state --layers all --out layers.json
    python -m s2r score demo --encoders resnet18@random --layers layer2,layer3,last --out l.csv

Merge leaderboards of several runs/datasets (JSON and/or CSV; one row per encoder, dataset
fingerprint and parameters, the file given last wins)::

    python -m s2r score --merge run1.json run2.csv --out all.csv

Embeddings and scores are cached (``python -m s2r cache``): re-running with the same dataset,
encoder and parameters reads the record back.

On a Ray cluster, every encoder embedded at once and the metrics fitted here as each one
completes (:func:`s2r.pipeline.ray_grid.score_encoders_ray`), into the same cache::

    python -m s2r score sim.zarr real.zarr --encoders 'r3m-*,mcr' --out fb.json \
        --backend ray --address 10.0.0.1:6379
"""

from __future__ import annotations

import argparse
import fnmatch
import os
from pathlib import Path

from s2r.cli import (add_command, add_force_arg, add_object_focus_arg, add_runtime_args,
                     announce_first_use, atomic_output, dataset_from_args, integer_arg, number_arg,
                     output_file, settings_from_args, train_announced)
from s2r.commands.embed import add_backend_args, backend_from_args, runtime_cache
from s2r.errors import S2RError



def register(subparsers) -> None:
    from s2r.metrics.action_probe import DEFAULT_RIDGE_ALPHA, PAPER_TRAIN_ALPHA
    from s2r.metrics.bootstrap import DEFAULT_CI, DEFAULT_N_BOOT
    from s2r.metrics.dis import DEFAULT_PCA_DIM
    from s2r.metrics.domain_probe import DEFAULT_DOMAIN_C
    from s2r.metrics.folds import DEFAULT_N_FOLDS
    from s2r.metrics.layers import DEFAULT_LAYER_SCORE

    p = add_command(
        subparsers, "score",
        help="score encoders on a dataset (DIS, action/transfer scores, domain probe, "
             "Sim2Real score, bootstrap CIs) into a .json/.csv leaderboard",
        description="Embed DATASET with each encoder (cached) and write one record per encoder "
                    "with every score and its episode-bootstrap confidence interval. With "
                    "--merge, the positional arguments are leaderboard files to merge instead.",
        dataset=True)
    p.add_argument("--encoders", default=None, metavar="A,B,...",
                   help="comma-separated encoder ids or wildcards ('r3m-*'); see "
                        "'python -m s2r encoders'")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="leaderboard file to write: .json (nested records) or .csv (flat)")
    add_force_arg(p)
    p.add_argument("--merge", action="store_true",
                   help="merge the leaderboard files given as positional arguments into --out "
                        "instead of scoring")
    p.add_argument("--pairwise", default=None, metavar="FILE",
                   help="also write P(A beats B) and the paired difference interval of every "
                        "pair of encoders on every ranked score to FILE (.json or .csv)")
    add_object_focus_arg(p)
    p.add_argument("--layers", default=None, metavar="all|last|NAME,...",
                   help="which layers of each encoder to score (one record per encoder and "
                        "layer, all embedded in one pass): 'last' = the final embedding "
                        "(default), 'all', or layer names (an unknown name lists the "
                        "encoder's layers)")
    p.add_argument("--layer-score", default=None, metavar="SCORE",
                   help="with --layers: the score that picks each encoder's best layer "
                        f"(default {DEFAULT_LAYER_SCORE})")
    g = p.add_argument_group("score parameters (recorded in every row)")
    g.add_argument("--pca-dim", type=integer_arg, default=DEFAULT_PCA_DIM, metavar="K",
                   help=f"DIS: common PCA dimension, the same K for every encoder compared "
                        f"(default {DEFAULT_PCA_DIM})")
    g.add_argument("--distance", choices=("squared", "euclidean"), default="squared",
                   help="DIS: squared centroid distance (eq. 1, default) or plain Euclidean")
    g.add_argument("--ridge-alpha", type=_alpha, default=DEFAULT_RIDGE_ALPHA, metavar="A",
                   help="held-out/transfer probes: ridge penalty as a fraction of the training "
                        "embeddings' total variance, or 'auto' (default: chosen inside each "
                        "training set by episode-grouped cross-validation)")
    g.add_argument("--train-alpha", type=number_arg, default=PAPER_TRAIN_ALPHA, metavar="A",
                   help=f"the paper's training AS: one fixed penalty for every encoder "
                        f"(default {PAPER_TRAIN_ALPHA})")
    g.add_argument("--null", default=None, metavar="shuffle[:SEED]",
                   help="null control: permute the actions across frames within each domain "
                        "before scoring (every skill should then be 0 within its interval)")
    g.add_argument("--seed", type=integer_arg, default=0, metavar="S",
                   help="seed of the PCA, the episode folds and the bootstrap (default 0)")
    g.add_argument("--n-boot", type=integer_arg, default=DEFAULT_N_BOOT, metavar="B",
                   help=f"bootstrap replicates, 0 = no confidence intervals (default "
                        f"{DEFAULT_N_BOOT})")
    g.add_argument("--ci", type=number_arg, default=DEFAULT_CI,
                   help=f"confidence level (default {DEFAULT_CI})")
    g.add_argument("--n-folds", type=integer_arg, default=DEFAULT_N_FOLDS,
                   help=f"episode folds of the held-out scores (default {DEFAULT_N_FOLDS})")
    g.add_argument("--domain-c", type=number_arg, default=DEFAULT_DOMAIN_C, metavar="C",
                   help=f"domain probe: inverse L2 penalty of the logistic regression "
                        f"(default {DEFAULT_DOMAIN_C})")
    r = p.add_argument_group("running")
    add_runtime_args(r, precision=True)
    add_backend_args(r)
    p.set_defaults(func=run)


def _alpha(text: str):
    """``--ridge-alpha`` value: ``auto`` or a number."""
    from s2r.inputs import parse_decimal, quoted

    if text == "auto":
        return text
    try:
        return parse_decimal(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {quoted(text)} (a "
                                         "number written with the digits 0-9, e.g. 0.5 or "
                                         "1e-3)") from None


def expand_encoder_ids(text: str, settings) -> list[str]:
    """``"a,r3m-*"`` -> registry ids, wildcards expanded in registry order, duplicates dropped
    (``settings``: the user's encoder config); refused when any of them cannot run with its
    weights (:func:`check_weights_here`)."""
    from s2r.encoders import get_spec, list_encoders

    ids: list[str] = []
    named: set = set()
    patterns: list[str] = []
    for item in (t.strip() for t in (text or "").split(",")):
        if not item:
            continue
        if any(ch in item for ch in "*?["):
            found = [s.id for s in list_encoders(item, include_random=item.endswith("@random")
                                                 or "@" in item, settings=settings)]
            found = [i for i in found if fnmatch.fnmatchcase(i, item)]
            if not found:
                raise S2RError(f"--encoders: no encoder id matches {item!r}; see "
                               "'python -m s2r encoders'")
            patterns.append(item)
        else:
            found = [get_spec(item, settings=settings).id]
            named.update(found)
        ids += [i for i in found if i not in ids]
    if not ids:
        raise S2RError("--encoders: give at least one encoder id (e.g. --encoders pixels,"
                       "efficientnet-lite0)")
    check_weights_here(ids, named, patterns, settings)
    return ids


#: Most encoder ids a message lists (then "and N more").
LISTED_IDS = 5


def _listed(ids: list) -> str:
    """``a, b, c, d, e and 7 more``."""
    shown = ", ".join(ids[:LISTED_IDS])
    return shown if len(ids) <= LISTED_IDS else f"{shown} and {len(ids) - LISTED_IDS} more"


def check_weights_here(ids: list, named: set, patterns: list, settings) -> None:
    """Refuse, before any work, the encoders of ``ids`` whose weights are not here
    (:func:`s2r.encoders.status` ``weights-missing``): every one a wildcard selected (a
    pattern never starts downloads: ``*`` would fetch gigabytes), and every one ``named``
    that building would not download either (a research checkpoint, a user's file, or any
    entry while downloads are off). A named hub entry is downloaded on use, as asked. One
    line: up to :data:`LISTED_IDS` of them, how many more, and how to get their weights."""
    from s2r.encoders import status
    from s2r.encoders.weights import fetched_on_use

    missing = [i for i in ids if status(i, settings=settings).state == "weights-missing"
               and (i not in named or not fetched_on_use(i, settings=settings))]
    if not missing:
        return
    selected = [i for i in missing if i not in named]
    by = (f" ({', '.join(repr(p) for p in patterns)} selected {len(selected)} of them)"
          if selected else "")
    fetch = ("python -m s2r weights fetch " + " ".join(missing) if len(missing) <= LISTED_IDS
             else "python -m s2r weights fetch ID ...")
    raise S2RError(f"--encoders: the weights of {len(missing)} encoder(s) are not here: "
                   f"{_listed(missing)}{by}; get them with `{fetch}`, use ID@random for random "
                   f"weights, or leave them out (`python -m s2r encoders` shows which are ready)")


def params_from_args(args):
    """The :class:`~s2r.metrics.params.ScoreParams` of the command line (validated)."""
    from s2r.metrics.params import ScoreParams

    return ScoreParams(pca_dim=args.pca_dim, distance=args.distance,
                       ridge_alpha=args.ridge_alpha, train_alpha=args.train_alpha,
                       seed=args.seed, n_boot=args.n_boot, ci=args.ci, n_folds=args.n_folds,
                       domain_C=args.domain_c, null=args.null).validate()


def layers_from_args(args):
    """``--layers`` as a request (:func:`s2r.encoders.taps.select_layers`): ``"last"`` (also
    when not given), ``"all"`` or a list of names; an empty value is refused, not read as
    ``"last"``; ``--layer-score`` checked (a ranked score)."""
    from s2r.inputs import quoted
    from s2r.metrics import catalogue

    text = "last" if args.layers is None else args.layers
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise S2RError(f"--layers: expected 'all', 'last' or layer names separated by commas, "
                       f"got {quoted(text)}")
    score = args.layer_score
    if score is not None and score not in catalogue.ranked_keys():
        raise S2RError(f"--layer-score must be one of {', '.join(catalogue.ranked_keys())}, "
                       f"got {score!r}")
    if score is not None and names == ["last"]:
        raise S2RError("--layer-score picks a best layer: give --layers all or layer names")
    return names[0] if names in (["all"], ["last"]) else names


def _best_lines(records) -> list:
    """One line per encoder with several layers: its best layer against its final one."""
    from s2r.metrics.layers import best_layers

    key = next((r["layer_best_score"] for r in records if r.get("layer_best_score")), None)
    lines = []
    for row in best_layers(records, key) if key else []:
        if row["best_is_final"] or row["final_estimate"] is None:
            lines.append(f"best layer of {row['encoder']} on {key}: {row['best_layer']} "
                         f"({row['best_estimate']:.3f}), the final one")
            continue
        verdict = ("resolved" if row["resolved"] else "not resolved" if row["resolved"]
                   is False else "no interval")
        interval = ("" if row["difference_ci_low"] is None else
                    f" [{row['difference_ci_low']:+.3f}, {row['difference_ci_high']:+.3f}]")
        lines.append(f"best layer of {row['encoder']} on {key}: {row['best_layer']} "
                     f"({row['best_estimate']:.3f}) vs the final {row['final_layer']} "
                     f"({row['final_estimate']:.3f}): {row['difference']:+.3f}{interval}, "
                     f"{verdict}")
    return lines


def _summary_table(records, order_by: str) -> str:
    """The CLI's table: the catalogue's summary scores, best ``order_by`` first."""
    from s2r.leaderboard import records_to_frame
    from s2r.metrics import catalogue
    from s2r.figures.tables import best_first

    frame = records_to_frame(records)
    summary = catalogue.keys("summary")
    cols = ["encoder.id"] + [c for c in summary if c in frame.columns]
    if "layer" in frame.columns:
        frame["layer"] = [f"{layer}{' *' if best is True else ''}" for layer, best in
                          zip(frame["layer"], frame.get("layer_best", [None] * len(frame)))]
        cols.insert(1, "layer")
    if "precision" in frame.columns and (frame["precision"] == "int8").any():
        cols.insert(1, "precision")
    table = frame[cols].copy()
    for c in summary:
        if c in table:
            table[c] = [format_score(r, c) for r in frame.to_dict("records")]
    order = best_first(frame, order_by)
    return (f"sorted by the {catalogue.get(order_by).title} (the score with the strongest "
            f"record in the evidence), best first\n" + table.iloc[order].to_string(index=False))


def _record_lines(evidence, world, label: str) -> str:
    """Each summary score's record against closed-loop success (:attr:`Record.short`), one
    line each, under the table."""
    from s2r.evidence import score_record
    from s2r.metrics import catalogue

    lines = [f"record against closed-loop success ({label}):"]
    lines += [f"  {key}: {score_record(evidence, key, world=world).short}"
              for key in catalogue.keys("summary")]
    return "\n".join(lines)


def format_score(row: dict, key: str) -> str:
    """``"0.312 [0.210, 0.401]"``, ``"0.312"`` without an interval, ``"n/a"`` when missing."""
    import math

    value = row.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    lo, hi = row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")
    if lo is None or hi is None or (isinstance(lo, float) and math.isnan(lo)):
        return f"{value:.3f}"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _write_pairwise(records, path: Path, ci: float, args: argparse.Namespace,
                    key: str) -> None:
    """P(A beats B) of every pair on every ranked score, and the resolved tiers, to ``path``;
    prints what is resolved on ``key``."""
    import json

    import pandas as pd

    from s2r.metrics import catalogue
    from s2r.metrics.pairwise import pairwise_comparisons, tiers

    rows = pairwise_comparisons(records, ci=ci)
    with atomic_output(path, args, "pairwise") as tmp:
        if path.suffix.lower() == ".json":
            groups = {k: tiers(records, k, ci=ci) for k in catalogue.ranked_keys()}
            tmp.write_text(json.dumps({"ci": ci, "comparisons": rows, "tiers": groups},
                                      indent=1, allow_nan=False) + "\n")
        else:
            pd.DataFrame(rows).to_csv(tmp, index=False)
    resolved = sum(r["resolved"] for r in rows if r["metric"] == key) // 2
    n_pairs = sum(1 for r in rows if r["metric"] == key) // 2
    print(f"wrote {path}: {len(rows)} comparisons; on the {catalogue.get(key).title} "
          f"{resolved} of {n_pairs} pair(s) resolved at {ci:.0%}; tiers: "
          + " > ".join("{" + ", ".join(t) + "}" for t in tiers(records, key, ci=ci)))


def run(args: argparse.Namespace) -> int:
    from s2r.leaderboard import FORMATS, merge_leaderboard_records, write_records

    out = output_file(args.out, tuple(FORMATS), args=args, kind="scores")
    pairwise = (output_file(args.pairwise, tuple(FORMATS), args=args, kind="pairwise",
                            flag="--pairwise") if args.pairwise else None)
    if pairwise is not None and os.path.abspath(pairwise) == os.path.abspath(out):
        raise S2RError(f"--pairwise {args.pairwise!r} is the same file as --out; the "
                       "comparisons would replace the scores: give two paths")
    if args.merge:
        if args.encoders:
            raise S2RError("--merge takes leaderboard files, not --encoders")
        given = [flag for flag, value in (("--layers", args.layers),
                                          ("--layer-score", args.layer_score))
                 if value is not None]
        if given:
            raise S2RError(f"--merge copies the files' rows as they are: {' and '.join(given)} "
                           f"cannot apply (score the layers first, then merge the files)")
        records = merge_leaderboard_records(args.dataset)
        with atomic_output(out, args, "scores") as tmp:
            write_records(records, tmp)
        print(f"merged {len(args.dataset)} file(s) into {out}: {len(records)} row(s)")
        return 0
    if not args.encoders:
        raise S2RError("--encoders is required (e.g. --encoders pixels,efficientnet-lite0)")
    from s2r.pipeline import score_encoders
    from s2r.progress import tqdm_progress

    params = params_from_args(args)
    settings = settings_from_args(args)
    from s2r.evidence import evidence_in_effect

    evidence = evidence_in_effect(settings)     # a bad S2R_EVIDENCE is refused before work
    ids = expand_encoder_ids(args.encoders, settings)
    layers = layers_from_args(args)
    ray_options = backend_from_args(args)
    if layers != "last" and ray_options:
        raise S2RError("--layers runs on this machine: drop --backend ray (or --layers)")
    if args.object_focus and (layers != "last" or ray_options):
        raise S2RError("--object-focus explains each encoder's final embedding on this machine: "
                       "drop --layers and --backend ray (or --object-focus)")
    cache = runtime_cache(args)
    first_use = announce_first_use(ids, args)
    if layers != "last":
        from s2r.pipeline.layers import per_encoder_layers

        per_encoder_layers(ids, layers, cache=cache, settings=settings)  # names, before work
    frameset = dataset_from_args(args)
    train_announced(first_use, args)
    with tqdm_progress("scoring encoders") as progress:
        if layers != "last":
            from s2r.metrics.layers import DEFAULT_LAYER_SCORE
            from s2r.pipeline.layers import score_encoders_layers

            records = score_encoders_layers(
                frameset, ids, layers, params=params, cache=cache, device=args.device,
                precision=args.precision, best_by=args.layer_score or DEFAULT_LAYER_SCORE,
                progress=progress, settings=settings)
        elif ray_options:
            from s2r.pipeline.ray_grid import score_encoders_ray

            records = score_encoders_ray(frameset, ids, params=params, cache=cache,
                                         device=args.device, progress=progress, **ray_options)
        else:
            records = score_encoders(frameset, ids, params=params, cache=cache,
                                     device=args.device, precision=args.precision,
                                     progress=progress, settings=settings,
                                     object_focus=args.object_focus)
    with atomic_output(out, args, "scores") as tmp:
        write_records(records, tmp)
    from s2r.pipeline.pick import pick_encoder, reference_ids, world_of

    pick = pick_encoder(records, evidence, world=world_of(frameset),
                        n_frames=len(frameset), reference=reference_ids(ids, settings))
    print(_summary_table(records, pick.score))
    from s2r.evidence import evidence_label

    print(_record_lines(evidence, world_of(frameset), evidence_label(settings)))
    for line in _best_lines(records):
        print(line)
    for r in records:
        for w in r.get("warnings", []):
            print(f"warning ({r['encoder']['id']}): {w}")
    if pairwise is not None:
        _write_pairwise(records, pairwise, params.ci, args, pick.score)
    what = (f"{len(records)} encoder(s)" if layers == "last" else
            f"{len(records)} (encoder, layer) record(s) of {len(ids)} encoder(s)")
    print(f"wrote {out}: {what} on {frameset.name!r} ({frameset.fingerprint})")
    print("\n" + "\n".join(pick.lines()))
    return 0
