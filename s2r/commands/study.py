"""``python -m s2r study``: the whole validation grid in one resumable command.

::

    python -m s2r study --out-dir study/                      # CortexBench's five tasks
    python -m s2r study --out-dir study/ --dry-run            # the cells and a time estimate
    python -m s2r study --out-dir study/ --ray local          # every (cell, encoder) on Ray
    python -m s2r study --tasks drawer-open-v3 --gaps "drawer-open-v3=0,0.5,1" \
        --shifts lighting --rollouts 8 --out-dir study/

Every task at its gaps with every kind of shift, then each kind of shift alone at gaps 0 and 1
on the shift tasks: one ``s2r validate`` run each (:mod:`s2r.closedloop.study`), its report in
``DIR/reports/<task>--<shift>.json``, the manifest in ``DIR/study.json``. Run the same command
again after an interruption: finished cells are skipped, an interrupted one resumes from the
cache.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from s2r.cli import (add_command, add_force_arg, add_runtime_args, announce_first_use,
                     atomic_output, cache_from_args, integer_arg, output_folder,
                     settings_from_args, train_announced)
from s2r.errors import S2RError


def register(subparsers) -> None:
    from s2r.closedloop.study import CORTEXBENCH_TASKS, SHIFT_TASKS, STUDY_SHIFTS
    from s2r.commands.validate import add_rollout_args

    p = add_command(
        subparsers, "study",
        help="the whole validation grid (tasks x gaps x kinds of shift) in one resumable run, "
             "locally or on Ray",
        description="Runs 's2r validate' for every cell of the study: each task at its gaps "
                    "with every kind of shift, then each kind of shift alone at gaps 0 and 1 "
                    "on the shift tasks. Writes DIR/reports/<task>--<shift>.json and the "
                    "manifest DIR/study.json; a rerun skips finished cells and resumes an "
                    "interrupted one from the cache.",
        show_defaults=True)
    p.add_argument("--tasks", default=",".join(CORTEXBENCH_TASKS), metavar="T,T",
                   help="Meta-World tasks (metaworld:task=T,episodes=8,height=96,width=128)")
    p.add_argument("--spec", action="append", default=[], metavar="SPEC",
                   help="also a task given as any world's spec (e.g. demo:paired=true,...); "
                        "repeat for several")
    p.add_argument("--gaps", default="", metavar="TASK=G,G;...",
                   help="gaps of some tasks (the task's own default gaps for the others)")
    p.add_argument("--encoders", default=argparse.SUPPRESS, metavar="A,B,...",
                   help="encoder ids or wildcards (at least 3); default: each world's, as "
                        "'s2r validate' ranks them")
    p.add_argument("--shifts", default=",".join(STUDY_SHIFTS), metavar="K,K",
                   help="kinds of shift run alone at gaps 0 and 1 ('' for none)")
    p.add_argument("--shift-tasks", default=",".join(SHIFT_TASKS), metavar="T,T",
                   help="the tasks the kinds of shift run on")
    add_rollout_args(p)
    p.add_argument("--n-boot", type=integer_arg, default=2000, metavar="B",
                   help="bootstrap replicates of each correlation")
    p.add_argument("--no-object-focus", action="store_true",
                   help="do not score the object focus (scored by default, on masks drawn "
                        "with the frames)")
    p.add_argument("--out-dir", required=True, metavar="DIR",
                   help="reports/ and study.json go here")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="measure every (cell, encoder) as a Ray task on the cluster at "
                        "HOST:PORT (or ray://HOST:PORT, auto; local = a new local instance); "
                        "the cache folder must be one every worker writes")
    p.add_argument("--dry-run", action="store_true",
                   help="print the cells and an estimate of the wall time; run nothing")
    add_force_arg(p)
    add_runtime_args(p, no_cache=False)
    p.set_defaults(func=run)


def _items(text: str, flag: str) -> list:
    from s2r.inputs import quoted

    if len(text) > 10_000:
        raise S2RError(f"{flag}: expected names separated by commas, got {len(text):,} "
                       "characters")
    items = [t.strip() for t in text.split(",") if t.strip()]
    if any(not t.replace("-", "").replace(".", "").replace("_", "").isalnum() for t in items):
        raise S2RError(f"{flag}: expected names separated by commas, got {quoted(text)}")
    return list(dict.fromkeys(items))


def task_gaps(text: str) -> dict:
    """``--gaps "TASK=G,G;TASK=G"`` -> ``{TASK: [G, G], ...}`` (each gap list checked by
    :func:`~s2r.commands.validate.parse_gaps`)."""
    from s2r.commands.validate import parse_gaps
    from s2r.inputs import quoted

    if len(text) > 100_000:
        raise S2RError(f"--gaps: expected TASK=G,G;... , got {len(text):,} characters")
    out = {}
    for part in filter(None, (t.strip() for t in text.split(";"))):
        task, eq, gaps = part.partition("=")
        task = task.strip()
        if not eq or not task or task in out:
            raise S2RError(f"--gaps: expected TASK=G,G;... with each task once, got "
                           f"{quoted(part)}")
        out[task] = parse_gaps(gaps, flag=f"--gaps {task}")
    return out


def _plan(args, settings):
    """The study's plan from the arguments, every bound checked."""
    from s2r.closedloop.study import default_plan, task_label
    from s2r.commands.validate import ranked_encoder_ids, rollout_params
    from s2r.datasets.world import world_options
    from s2r.pipeline.real_results import MAX_N_BOOT

    if not 1 <= args.n_boot <= MAX_N_BOOT:
        raise S2RError(f"--n-boot must be in [1, {MAX_N_BOOT:,}], got {args.n_boot}")
    params = rollout_params(args)
    for spec in args.spec:                   # a world's spec, never read as a task name
        world_options(spec, "--spec")
    tasks = [*_items(args.tasks, "--tasks"), *args.spec]
    gaps = task_gaps(args.gaps)
    labels = [*_items(args.tasks, "--tasks"), *map(task_label, args.spec)]
    for task in gaps:
        if task not in labels:
            raise S2RError(f"--gaps: {task!r} is not a task of the study (its tasks: "
                           f"{', '.join(labels)})")
    ids = ranked_encoder_ids(getattr(args, "encoders", None), settings)
    return default_plan(tasks, gaps=gaps, encoders=tuple(ids) if ids else None, params=params,
                        object_focus=not args.no_object_focus,
                        shifts=tuple(_items(args.shifts, "--shifts")),
                        shift_tasks=tuple(_items(args.shift_tasks, "--shift-tasks")),
                        n_boot=args.n_boot)


def _dry_run(cells, params) -> int:
    from s2r.closedloop.study import ENCODER_TASK_SECONDS, estimate_seconds, sim_shared

    total = 0.0
    for cell, shared in zip(cells, sim_shared(cells)):
        seconds = estimate_seconds(cell, params, shared)
        total += seconds
        print(f"{cell.name:<38} gaps {','.join(f'{g:g}' for g in cell.gaps):<14} "
              f"{len(cell.encoders):>3} encoders  ~{seconds / 60:,.0f} min")
    print(f"\n{len(cells)} cells; estimate: ~{total / 3600:,.1f} h of wall time from scratch on "
          f"a 2-core machine (measured: ~{ENCODER_TASK_SECONDS:.0f} s an encoder-task at 20 "
          "rollouts and 3 gaps; cached cells cost seconds; on Ray, divided by the workers)")
    return 0


@contextlib.contextmanager
def sigterm_interrupts():
    """Within it, SIGTERM (a batch scheduler's or ``kill``'s stop) ends the study as Ctrl-C
    does: the manifest keeps the interrupted cell's time spent, the cache what was computed.
    The previous handler comes back after; off the main thread (where Python runs no signal
    handler) nothing changes."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args) -> int:
    from s2r.closedloop.study import run_study, study_cells
    from s2r.embed.ray_backend import check_address
    from s2r.progress import tqdm_progress

    settings = settings_from_args(args)
    plan = _plan(args, settings)
    if args.ray is not None:
        check_address(args.ray)
    cells = study_cells(plan)                # every spec parsed before any work
    if args.dry_run:
        return _dry_run(cells, plan.params)
    out = output_folder(args.out_dir, args=args, kind="study", flag="--out-dir",
                        files=("study.json", "reports/*.json"))
    cache = cache_from_args(args)
    worlds = {}                              # each world's controls, announced once
    for cell in cells:
        spec, ids = worlds.setdefault(cell.spec.partition(":")[0], (cell.spec, []))
        ids += [e for e in cell.encoders if e not in ids]
    train_announced([item for spec, ids in worlds.values()
                     for item in announce_first_use(ids, args, dataset=spec)], args)

    def finished(cell, path, seconds) -> None:
        how = "already done" if seconds is None else f"{seconds / 60:,.1f} min"
        print(f"{cell.name}: {path} ({how})")

    with sigterm_interrupts(), tqdm_progress("study") as progress:
        run_study(plan, out, cache=cache, progress=progress, settings=settings,
                  address=args.ray, device=args.device, command=["s2r", *sys.argv[1:]],
                  writer=lambda path: atomic_output(path, args, "study"), on_cell=finished)
    print(f"wrote {out / 'study.json'}")
    return 0
