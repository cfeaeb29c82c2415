"""One encoder's Meta-World rollouts with its runs one after another against two at once
(:mod:`s2r.closedloop.overlap`), in one process, each from an empty cache: wall time, CPU
time of the process and its workers, and whether every outcome is the same.

The demonstrations are drawn once (the process's memo) before either arm, so both arms time
the same work: the encoder's demonstration embeddings, the policy's fit and the rollout runs
(the sim look and the real look at every gap). Arms alternate over ``--repeats``; ``ratio`` =
one lane's median wall / two lanes'.

``--two-lane-threads N`` runs the two-lane arm's encoder passes on N threads (each run's pass
on its own core beside the other run's drawing) while the one-lane arm keeps the setting's;
the embeddings then differ in their last bits, so the bench counts the outcomes that differ
from the one-lane arm's instead of requiring them equal.

Usage: ``MUJOCO_GL=egl python bench/bench_overlap.py [--encoder efficientnet-lite0]
[--task button-press-topdown-v3] [--rollouts 20] [--repeats 2] [--two-lane-threads 1]``
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its children, running ones included
    (the Meta-World workers live as long as the process): read from ``/proc``."""
    tick = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if pid == me or int(fields[1]) == me:      # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick      # utime, stime
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="efficientnet-lite0")
    ap.add_argument("--task", default="button-press-topdown-v3")
    ap.add_argument("--rollouts", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2,
                    help="rounds; each runs both arms, the first arm alternating (the first "
                         "arm of a process pays the warm-up)")
    ap.add_argument("--two-lane-threads", type=int, default=None,
                    help="encoder threads of the two-lane arm (default: the setting's)")
    args = ap.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")

    from s2r.cache import Cache
    from s2r.closedloop import encoder_rollouts as R
    from s2r.closedloop.agent import demonstrations
    from s2r.datasets.world import task_of
    from s2r.settings import current
    from s2r.worlds.metaworld.world import MetaWorldTask

    spec = f"metaworld:task={args.task}"
    task = task_of(spec)
    params = R.RolloutParams(rollouts=args.rollouts).for_task(task)
    gaps = list(task.gaps)
    demonstrations(task, params)                       # drawn once, for both arms
    settings = current()
    arm_settings = {1: settings, 2: settings if args.two_lane_threads is None
                    else dataclasses.replace(settings, threads=args.two_lane_threads)}
    times: dict = {1: [], 2: []}
    cpu: dict = {1: [], 2: []}
    records: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            for lanes in (1, 2) if rep % 2 == 0 else (2, 1):
                MetaWorldTask.overlap = lanes
                cache = Cache(Path(tmp) / f"c{rep}-{lanes}")
                c0, t0 = cpu_seconds(), time.perf_counter()
                out = R.encoder_rollouts(args.encoder, gaps, spec=spec, params=params,
                                         cache=cache, settings=arm_settings[lanes])
                times[lanes].append(time.perf_counter() - t0)
                cpu[lanes].append(cpu_seconds() - c0)
                records.setdefault(lanes, []).append(
                    [out["sim"].to_record()] + [out["real"][g].to_record() for g in gaps])
    same = all(r == records[1][0] for lanes in (1, 2) for r in records[lanes])
    flips = sum(a != b for run in records[2] for look_a, look_b in zip(run, records[1][0])
                for a, b in zip(look_a["successes"], look_b["successes"]))
    n_outcomes = sum(len(look["successes"]) for look in records[1][0])
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(f"{args.encoder} on {args.task}, {args.rollouts} rollouts, gaps {gaps}")
    for lanes in (1, 2):
        print(f"  {lanes} lane(s): wall {statistics.median(times[lanes]):7.1f} s  "
              f"CPU {statistics.median(cpu[lanes]):7.1f} s  "
              f"({statistics.median(cpu[lanes]) / statistics.median(times[lanes]):.2f} cores)")
    print(f"  ratio (1 lane / 2 lanes): {one / two:.2f}x; outcomes the same: {same}")
    print(f"  two-lane threads: {args.two_lane_threads or 'the setting'}; outcomes that differ "
          f"from the one-lane arm's: {flips} of {n_outcomes * len(records[2])}")


if __name__ == "__main__":
    main()
