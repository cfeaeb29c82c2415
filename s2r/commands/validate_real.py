"""``python -m s2r validate DATASET --real-results results.csv``: your robot's results against
the scores (:mod:`s2r.pipeline.real_results`; no rollouts are run).

The table's encoders are scored on DATASET (cached; an encoder that cannot be scored here, e.g.
without its weights, is reported as missing scores); the report holds one row per table row
(``real_results.rows``) and, per score and task, Spearman/Kendall with bootstrap intervals in
``correlations[]`` with ``outcome: "real-results"``.

Everything that can be checked without the dataset is checked first, so a bad table never
costs a scoring run: ``--out`` (not the table itself), the whole table
(:func:`~s2r.pipeline.real_results.read_real_results`: size, fields, encoder ids, counts) and
the bootstrap's size (:func:`~s2r.pipeline.real_results.check_work`).
"""

from __future__ import annotations

import json

from s2r.cli import (atomic_output, cache_from_args, dataset_from_args, output_file,
                     settings_from_args)
from s2r.closedloop.report import ValidationReport
from s2r.errors import S2RError


def _print_summary(report: ValidationReport, key: str) -> None:
    """Each encoder's real success beside its ``key`` score, then the correlations."""
    from s2r.metrics import catalogue

    real = report.real_results
    short = catalogue.get(key).short
    print(f"{'encoder':<24}{'task':<14}{'real success':>22}  {short:>14}")
    for r in real["rows"]:
        text = f"{r['success_rate']:.2f}"
        if r["success_ci_low"] is not None:
            text += f" [{r['success_ci_low']:.2f}, {r['success_ci_high']:.2f}]"
        skill = r.get(key)
        print(f"{r['encoder']:<24}{(r['task'] or '-'):<14}{text:>22}  "
              f"{'n/a' if skill is None else f'{skill:.3f}':>14}")
    for encoder, why in real["missing_scores"].items():
        print(f"missing scores: {encoder} ({why})")
    print("\nrank correlation with your real success, all tasks (Spearman [95% interval]):")
    for c in report.correlations:
        if c["task"] != "all":
            continue
        text = ("undefined (fewer than 3 encoders or a constant)" if c["spearman"] is None else
                f"{c['spearman']:+.2f} [{c['spearman_ci_low']:+.2f}, "
                f"{c['spearman_ci_high']:+.2f}]  Kendall {c['kendall']:+.2f}")
        print(f"  {c['score']:<28}{text}")


def run_real_results(args) -> int:
    from s2r.pipeline import score_encoder
    from s2r.pipeline.real_results import (MAX_N_BOOT, check_work, read_real_results,
                                           real_results_report, real_results_validation)
    from s2r.progress import tqdm_progress

    out = output_file(args.out, (".json",), args=args, kind="validation",
                      reads=[("--real-results", args.real_results)])
    if not 1 <= args.n_boot <= MAX_N_BOOT:
        raise S2RError(f"--n-boot must be in [1, {MAX_N_BOOT:,}], got {args.n_boot}")
    settings = settings_from_args(args)
    results = read_real_results(args.real_results, settings=settings)
    try:
        check_work(results, args.n_boot)
    except S2RError as exc:
        raise S2RError(f"--n-boot: {exc}") from None
    ids = list(dict.fromkeys(r["encoder"] for r in results))
    cache = cache_from_args(args)
    frameset = dataset_from_args(args).require_domains()
    records, missing = {}, {}
    with tqdm_progress("score") as progress:
        for k, encoder_id in enumerate(ids):
            progress(k, len(ids), encoder_id)
            try:
                records[encoder_id] = score_encoder(frameset, encoder_id, cache=cache,
                                                    device=args.device, settings=settings)
            except S2RError as exc:   # weights missing here, ...: named, not fatal
                missing[encoder_id] = str(exc)
        progress(len(ids), len(ids), "done")
    seed = args.seed or 0
    with tqdm_progress("correlate") as progress:
        joined = real_results_report(results, records, n_boot=args.n_boot, seed=seed,
                                     progress=progress)
    report = real_results_validation(joined, file=str(args.real_results),
                                     dataset=frameset.name, fingerprint=frameset.fingerprint,
                                     encoders=ids, seed=seed, missing=missing)
    with atomic_output(out, args, "validation") as tmp:
        tmp.write_text(json.dumps(report.to_dict(), indent=1))
    from s2r.evidence import default_score, evidence_in_effect

    _print_summary(report, default_score("validation", evidence_in_effect(settings)))
    print(f"\nwrote {out}: {len(report.real_results['rows'])} real results, "
          f"{len(report.correlations)} correlations")
    return 0
