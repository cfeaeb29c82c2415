"""``python -m s2r validate``: do the scores predict closed-loop real success? (a world's spec)

::

    python -m s2r validate demo:paired=true,height=96,width=128 --gaps 0,0.5,1 \
        --rollouts 20 --out report.json

Does each encoder's best-scoring layer deploy better than its final one? Every layer scored on
the frames at each gap, the best one (on --layer-score, the Sim2Real score by default; no
rollout is looked at) trained on and deployed, beside the final layer's policy::

    python -m s2r validate demo:paired=true,height=96,width=128 --layers best --out report.json

Your robot's results instead of the demo's rollouts, on any dataset (no rollouts are run; see
:mod:`s2r.commands.validate_real`)::

    python -m s2r validate sim.zarr real.zarr --real-results results.csv --out report.json

For every encoder: scores at every gap (cached), a policy trained on its sim embeddings of
expert demonstrations, deployed in the sim look and in the real look at every gap (cached);
then the Spearman/Kendall rank correlations, across encoders, between real success and each
score, with bootstrap intervals (see :mod:`s2r.closedloop.validation`).
"""

from __future__ import annotations

import argparse
import json

from s2r.cli import (add_command, add_dataset_args, add_force_arg, add_object_focus_arg,
                     add_runtime_args, announce_first_use, atomic_output, cache_from_args,
                     integer_arg, output_file, settings_from_args, train_announced)
from s2r.errors import S2RError


def register(subparsers) -> None:
    from s2r.closedloop.validation import BASE_ENCODERS
    from s2r.metrics.layers import DEFAULT_LAYER_SCORE
    from s2r.worlds import WORLDS

    p = add_command(
        subparsers, "validate",
        help="closed-loop ground truth in a simulated world (the demo, or Meta-World): train a "
             "policy on each encoder's sim embeddings, deploy it in the real look at each gap, "
             "and correlate "
             "real success with every score",
        description="Only for a simulated world's spec, e.g. demo:... or metaworld:task=... "
                    "(its frames come from a "
                    "simulator). Writes "
                    "report.json: one row per (encoder, gap) with the real and sim success "
                    "rates (Wilson intervals) and every score, and the rank correlations "
                    "(Spearman, Kendall, bootstrap intervals over encoders and rollouts).",
        show_defaults=True)
    add_dataset_args(p)  # closed loop: a world's spec, e.g. 'demo:paired=true,height=96,width=128'
    # (its gap is replaced by each of --gaps; paired=true makes paired retrieval available)
    p.add_argument("--real-results", default=None, metavar="FILE.csv",
                   help="your robot's results instead of the simulated rollouts: a CSV of "
                        "encoder,successes,trials (or encoder,success_rate), optionally task; "
                        "correlated with the scores of DATASET (any dataset; the encoders are "
                        "the table's registered ids; no rollouts are run). Checked whole "
                        "before any scoring: at most 1 MiB, 100 tasks, 10^9 trials a row")
    controls = "; ".join(f"{w.name}: {','.join(w.controls)}" for w in WORLDS.values())
    p.add_argument("--encoders", default=argparse.SUPPRESS, metavar="A,B,...",
                   help="encoder ids or wildcards (at least 3); default: "
                        f"{','.join(BASE_ENCODERS)} and the world's simcnn controls "
                        f"({controls})")
    p.add_argument("--gaps", default=argparse.SUPPRESS, metavar="G,G,...",
                   help="sim-to-real gaps in [0, 1]; default: the task's own, 0 and the gaps "
                        "where image encoders' real success differed in a measured sweep "
                        f"({_task_gaps_text()})")
    add_rollout_args(p)
    p.add_argument("--n-boot", type=integer_arg, default=2000, metavar="B",
                   help="bootstrap replicates of each correlation (at most 50,000; with "
                        "--real-results, B x (tasks + 1) at most 250,000)")
    p.add_argument("--layers", choices=("last", "best"), default="last",
                   help="best: also train and deploy each image encoder's policy on its "
                        "best-scoring layer at each gap (every layer scored on the frames; no "
                        "rollout looked at) and report real success and progress at both "
                        "layers, and the paired difference across encoders")
    p.add_argument("--layer-score", default=None, metavar="SCORE",
                   help="with --layers best: the score that picks each layer (a ranked score; "
                        f"default {DEFAULT_LAYER_SCORE})")
    add_object_focus_arg(p)
    p.add_argument("--out", required=True, metavar="report.json", help="report file (.json)")
    add_force_arg(p)
    add_runtime_args(p, no_cache=False)
    p.set_defaults(func=run)


def add_rollout_args(p) -> None:
    """Add the options of :class:`~s2r.closedloop.params.RolloutParams` (``--rollouts``,
    ``--horizon``, ``--demos``, ``--demo-steps``, ``--policy``, ``--control-demos``,
    ``--control-members``, ``--memory``, ``--seed``): how the closed loop's ground truth is
    measured; :func:`rollout_params` reads them back."""
    from s2r.closedloop.encoder_rollouts import POLICIES, RolloutParams

    defaults = RolloutParams()
    p.add_argument("--rollouts", type=integer_arg, default=defaults.rollouts, metavar="N",
                   help="rollouts per look and gap")
    p.add_argument("--horizon", type=integer_arg, default=argparse.SUPPRESS, metavar="T",
                   help="steps per rollout; default: the task's (the demo's 30; its expert "
                        "needs <= 15)")
    p.add_argument("--demos", type=integer_arg, default=defaults.demos, metavar="N",
                   help="expert demonstrations the policies are trained on")
    p.add_argument("--demo-steps", type=integer_arg, default=argparse.SUPPRESS, metavar="T",
                   help="most frames per demonstration (each ends at its success); default: "
                        "the task's (the demo's 24)")
    p.add_argument("--policy", choices=POLICIES, default=defaults.policy,
                   help="behaviour cloning on [embedding, proprioception]: two-stage = a probe "
                        "reads the task state, an MLP acts on it; mlp/ridge = end to end")
    p.add_argument("--control-demos", type=integer_arg, default=defaults.control_demos, metavar="N",
                   help="two-stage: expert episodes (states only, nothing rendered) the "
                        "shared control MLP is fitted on; 0 = fit it per encoder on decoded "
                        "states")
    p.add_argument("--control-members", type=integer_arg, default=defaults.control_members,
                   metavar="K", help="two-stage: the shared control acts with the mean action "
                                     "of K MLPs fitted from other seeds (1 = one MLP)")
    p.add_argument("--memory", type=integer_arg, default=defaults.memory, metavar="N",
                   help="two-stage: the deployed policy remembers the static scene (tabletop: "
                        "mean decoded pose; free leg: mean of its first N decoded poses; held "
                        "leg: mean offset from the gripper); 0 = decode every frame afresh")
    p.add_argument("--seed", type=integer_arg, default=None,
                   help="demonstrations, rollouts, policy fit (default: the dataset spec's "
                        "seed, else 0)")


def _task_gaps_text() -> str:
    """Every task's default gaps, for the help: ``demo 0,0.5,1; ...``."""
    from s2r.worlds import task_gaps

    return "; ".join(f"{task or world} {','.join(f'{g:g}' for g in gaps)}"
                     for (world, task), gaps in task_gaps().items())


def rollout_params(args, default_seed: int = 0):
    """The checked :class:`~s2r.closedloop.params.RolloutParams` of :func:`add_rollout_args`'
    options (``--seed`` not given: ``default_seed``)."""
    from s2r.closedloop.encoder_rollouts import RolloutParams

    seed = args.seed if args.seed is not None else int(default_seed)
    return RolloutParams(rollouts=args.rollouts, horizon=getattr(args, "horizon", None),
                         demos=args.demos, demo_steps=getattr(args, "demo_steps", None),
                         policy=args.policy, control_demos=args.control_demos,
                         control_members=args.control_members, memory=args.memory,
                         seed=seed).validate()


def parse_gaps(text: str, flag: str = "--gaps") -> list[float]:
    """The distinct gaps of ``text`` (``"0,0.5,1"``), at most :data:`~s2r.closedloop.params.
    MAX_GAPS` of them, each in [0, 1]; one :class:`S2RError` line naming ``flag`` otherwise."""
    from s2r.closedloop.params import MAX_GAPS
    from s2r.inputs import parse_decimal, quoted

    expected = f"{flag}: expected at most {MAX_GAPS} numbers in [0, 1] separated by commas"
    if len(text) > 100_000:                          # parsed in milliseconds below this
        raise S2RError(f"{expected}, got {len(text):,} characters")
    try:
        gaps = [parse_decimal(t.strip()) for t in text.split(",") if t.strip()]
    except ValueError:
        raise S2RError(f"{expected}, got {quoted(text)}") from None
    if not gaps or any(not 0.0 <= g <= 1.0 for g in gaps):
        raise S2RError(f"{expected}, got {quoted(text)}")
    distinct = list(dict.fromkeys(gaps))
    if len(distinct) > MAX_GAPS:
        raise S2RError(f"{expected}, got {len(distinct):,} distinct gaps")
    return distinct


def ranked_encoder_ids(given, settings):
    """The encoder ids of ``--encoders`` (wildcards expanded,
    :func:`~s2r.commands.score.expand_encoder_ids`), at least 3 (a validation ranks them);
    None when it was not given (the world's default encoders)."""
    from s2r.commands.score import expand_encoder_ids

    if given is None:
        return None
    ids = expand_encoder_ids(given, settings)
    if len(ids) < 3:
        raise S2RError(f"--encoders: validate ranks encoders, give at least 3 (got {len(ids)})")
    return ids


def _cell(r: dict, name: str) -> str:
    return f"{r[name]:.2f} [{r[name + '_ci_low']:.2f}, {r[name + '_ci_high']:.2f}]"


def _print_summary(report) -> None:
    print(f"{'encoder':<20}{'gap':>5}  {'real success':>18}  {'real progress':>18}  "
          f"{'sim success':>18}  {'sim progress':>18}")
    for r in report.results:
        print(f"{r['encoder']:<20}{r['gap']:>5g}  {_cell(r, 'success_real'):>18}  "
              f"{_cell(r, 'progress_real'):>18}  {_cell(r, 'success_sim'):>18}  "
              f"{_cell(r, 'progress_sim'):>18}")
    gaps = sorted({float(r["gap"]) for r in report.results})
    for outcome in ("success", "progress"):          # per gap first: which encoder at a gap
        for gap in gaps:
            print(f"\nrank correlation with real {outcome} over the image encoders at gap "
                  f"{gap:g} (Spearman [95% interval]):")
            _print_correlations(report.correlations_at(gap, outcome))
        print(f"\nrank correlation with real {outcome} over the image encoders, pooled over "
              f"all gaps (second: pooling mixes in the gap's own effect, which inflates it):")
        _print_correlations(report.correlations_at("all", outcome))


def _print_correlations(rows: list) -> None:
    for c in rows:
        text = ("undefined (constant)" if c["spearman"] is None else
                f"{c['spearman']:+.2f} [{c['spearman_ci_low']:+.2f}, "
                f"{c['spearman_ci_high']:+.2f}]  Kendall {c['kendall']:+.2f}")
        print(f"  {c['score']:<28}{text}")


def _print_layers(section: dict) -> None:
    print(f"\nbest layer on {section['score']} (chosen on the frames at each gap) vs the final "
          "layer, real success / progress:")
    print(f"{'encoder':<20}{'gap':>5}  {'final layer':<12}{'chosen layer':<24}"
          f"{'final: success':>19}{'final: progress':>19}{'chosen: success':>19}"
          f"{'chosen: progress':>19}")
    for r in section["rows"]:
        chosen = r["layer_chosen"] if r["changed"] else f"{r['layer_chosen']} (= final)"
        print(f"{r['encoder']:<20}{r['gap']:>5g}  {r['layer_final']:<12}{chosen:<24}"
              f"{_cell(r, 'success_real_final'):>19}{_cell(r, 'progress_real_final'):>19}"
              f"{_cell(r, 'success_real_chosen'):>19}{_cell(r, 'progress_real_chosen'):>19}")
    print("\nchosen - final over the image encoders (mean paired difference [95% interval]):")
    for e in section["effects"]:
        if e["gap"] != "all" or e["difference"] is None:
            continue
        print(f"  {e['outcome']:<9} {e['encoders']:<8} ({e['n_encoders']} encoders): "
              f"{e['difference']:+.3f} [{e['ci_low']:+.3f}, {e['ci_high']:+.3f}]"
              f"{'  resolved' if e['resolved'] else ''}")


def run(args) -> int:
    from s2r.closedloop.encoder_rollouts import world_options
    from s2r.closedloop.validation import default_encoders, validate
    from s2r.inputs import quoted
    from s2r.pipeline.real_results import MAX_N_BOOT
    from s2r.progress import tqdm_progress

    if args.layer_score is not None and args.layers != "best":
        raise S2RError(f"--layer-score {quoted(args.layer_score)} picks the layer of --layers "
                       f"best; give --layers best too, or leave --layer-score out")
    if args.real_results:
        from s2r.commands.validate_real import run_real_results

        if args.layers != "last":
            raise S2RError("--layers best trains and deploys policies in a simulated world; "
                           "it does not apply to --real-results")

        return run_real_results(args)
    if len(args.dataset) != 1:
        raise S2RError(f"DATASET: the closed loop needs one world's spec (e.g. demo:...), got "
                       f"{args.dataset}")
    args.dataset = args.dataset[0]
    gaps = parse_gaps(args.gaps) if hasattr(args, "gaps") else None
    settings = settings_from_args(args)
    ids = ranked_encoder_ids(getattr(args, "encoders", None), settings)  # None: the world's
    from s2r.metrics import catalogue

    if args.layer_score is not None and args.layer_score not in catalogue.ranked_keys():
        raise S2RError(f"--layer-score must be one of {', '.join(catalogue.ranked_keys())}, "
                       f"got {args.layer_score!r}")
    if not 1 <= args.n_boot <= MAX_N_BOOT:
        raise S2RError(f"--n-boot must be in [1, {MAX_N_BOOT:,}], got {args.n_boot}")
    world, options = world_options(args.dataset)   # a non-world spec fails before any work
    gaps = gaps or list(world.task(options).gaps)
    out = output_file(args.out, (".json",), args=args, kind="validation")
    ids = ids if ids is not None else list(default_encoders(world))
    params = rollout_params(args, int(options.get("seed", 0)))
    cache = cache_from_args(args)
    train_announced(announce_first_use(ids, args), args)
    with tqdm_progress("validate") as progress:
        report = validate(args.dataset, ids, gaps, params=params, cache=cache,
                          device=args.device, n_boot=args.n_boot, progress=progress,
                          settings=settings, layers=args.layers,
                          layer_score=args.layer_score, object_focus=args.object_focus)
    with atomic_output(out, args, "validation") as tmp:
        tmp.write_text(json.dumps(report.to_dict(), indent=1))
    _print_summary(report)
    if report.layers is not None:
        _print_layers(report.layers)
    print(f"\nwrote {out}: {len(report.results)} rows, "
          f"{len(report.correlations)} correlations")
    return 0
