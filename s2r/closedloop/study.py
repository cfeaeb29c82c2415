"""The study: the whole validation grid, as data and as one resumable run.

A **study** validates the scores on several tasks at once: every task at its gaps in its full
shift (``shift=all``), then each other kind of visual shift (lighting, texture, camera,
distractors; :data:`s2r.worlds.metaworld.look.SHIFTS`) alone at gaps 0 and 1 on a few tasks.
Each of these is a :class:`Cell`: one :func:`~s2r.closedloop.validation.validate` run (a
world's spec, its encoders, its gaps) and one report.

:class:`StudyPlan` holds the grid (tasks as world specs, so the demo can be a cell too);
:func:`study_cells` lists its cells, a pure function of the plan; :func:`run_study` runs them
into a folder (``reports/<task>--<shift>.json`` and the manifest ``study.json``), each cell
skipped when its report is there and was made the same way, an interrupted cell resumed from
the cache (every score and closed-loop outcome :func:`validate` computes is a cached record),
and, given a Ray address, every (cell, encoder) measured as a Ray task
(:mod:`s2r.closedloop.study_ray`).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from s2r import __version__
from s2r.closedloop.params import MAX_GAPS, RolloutParams
from s2r.closedloop.validation import study_encoders, validate
from s2r.datasets.world import format_world, is_world_spec, parse_world, world_options
from s2r.errors import S2RError
from s2r.progress import ProgressCallback, report

__all__ = ["CORTEXBENCH_TASKS", "Cell", "ENCODER_TASK_SECONDS", "METAWORLD_SPEC",
           "SHIFT_GAPS", "STUDY_SHIFTS", "STUDY_VERSION", "StudyPlan", "StudyTask",
           "cell_units", "default_plan", "estimate_seconds", "read_manifest", "run_study",
           "sim_shared", "study_cells", "task_label"]

#: Bump with any change of the manifest's fields or of what makes two cells the same.
STUDY_VERSION = 1
#: CortexBench's five Meta-World tasks.
CORTEXBENCH_TASKS = ("assembly-v3", "bin-picking-v3", "button-press-topdown-v3",
                     "drawer-open-v3", "hammer-v3")
#: The spec of a Meta-World task in a study (docs/metaworld.md's sweep).
METAWORLD_SPEC = "metaworld:task={task},episodes=8,height=96,width=128"
#: The kinds of shift a study runs alone (every kind of shift but ``all``).
STUDY_SHIFTS = ("lighting", "texture", "camera", "distractors")
#: The tasks each kind of shift runs on by default: image policies succeed there in sim.
SHIFT_TASKS = ("drawer-open-v3", "button-press-topdown-v3")
#: The gaps of a single kind of shift: none and full strength.
SHIFT_GAPS = (0.0, 1.0)
#: Most tasks, and most cells, a study holds (each cell is hours of rollouts on a CPU).
MAX_TASKS = 50
MAX_CELLS = 500
#: Seconds one encoder takes on one task (scores and rollouts) at 20 rollouts a look and three
#: gaps on a 2-core machine, measured on Meta-World (docs/study.md): the dry run's estimate.
ENCODER_TASK_SECONDS = 65.0
#: The manifest is a few kilobytes a cell; anything larger is not one.
MAX_MANIFEST_BYTES = 8 << 20


@dataclass(frozen=True)
class StudyTask:
    """One task of a study: a world's dataset spec and the gaps its full shift runs at."""

    spec: str
    gaps: tuple


@dataclass(frozen=True)
class Cell:
    """One validation run of a study.

    Attributes
    ----------
    name : str
        ``<task>--<shift>``: the report's file name without ``.json``.
    spec : str
        The world's canonical dataset spec, its kind of shift and masks included.
    encoders : tuple of str
    gaps : tuple of float
    """

    name: str
    spec: str
    encoders: tuple
    gaps: tuple

    def to_dict(self) -> dict:
        """Every field, lists for tuples (the manifest's ``cell``)."""
        return {"name": self.name, "spec": self.spec, "encoders": list(self.encoders),
                "gaps": [float(g) for g in self.gaps]}


@dataclass(frozen=True)
class StudyPlan:
    """The grid of a study (see the module).

    Attributes
    ----------
    tasks : tuple of StudyTask
        Each at its gaps with every kind of shift at once.
    encoders : tuple of str, optional
        The encoders of every cell; None: each world's
        :func:`~s2r.closedloop.validation.study_encoders`.
    params : RolloutParams
        Rollouts, demonstrations, policy, seed of every cell (the frame size: each spec's).
    object_focus : bool
        Score the object focus too (the specs then draw masks where the world can).
    masks : bool
        Draw the task objects' masks (``masks=true``) in worlds that offer them.
    shifts : tuple of str
        The kinds of shift run alone (:data:`STUDY_SHIFTS`), at :data:`SHIFT_GAPS`.
    shift_tasks : tuple of str
        The tasks (:func:`task_label`) they run on; each must be one of ``tasks`` in a world
        with kinds of shift.
    n_boot : int
        Bootstrap replicates of each correlation.
    """

    tasks: tuple
    encoders: Optional[tuple] = None
    params: RolloutParams = field(default_factory=RolloutParams)
    object_focus: bool = True
    masks: bool = True
    shifts: tuple = STUDY_SHIFTS
    shift_tasks: tuple = SHIFT_TASKS
    n_boot: int = 2000

    def to_dict(self) -> dict:
        """Every field as JSON values (the manifest's ``plan``)."""
        out = asdict(self)
        out["tasks"] = [{"spec": t.spec, "gaps": [float(g) for g in t.gaps]}
                        for t in self.tasks]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    def measured_as(self) -> dict:
        """What every report depends on besides its cell: two runs share a report only
        when these are equal."""
        return {"params": self.params.to_dict(), "object_focus": self.object_focus,
                "n_boot": int(self.n_boot)}


def task_label(spec: str) -> str:
    """What a study calls the task of a world's spec: its ``task`` option
    (``drawer-open-v3``), else the world's name (``demo``)."""
    world, options = world_options(spec, "a study")
    return str(options.get("task") or world.name)


def default_plan(tasks: Sequence[str] = CORTEXBENCH_TASKS, *, gaps: Optional[dict] = None,
                 **fields) -> StudyPlan:
    """The plan of ``tasks`` (Meta-World task names, or any world's specs), each at
    ``gaps[label]`` when given, else at its task's default gaps (``SimTask.gaps``);
    ``fields``: any other field of :class:`StudyPlan`."""
    gaps = dict(gaps or {})
    specs = [t if is_world_spec(t) else METAWORLD_SPEC.format(task=t) for t in tasks]
    made = []
    for spec in specs:
        label = task_label(spec)
        if label in gaps:
            made.append(StudyTask(spec, tuple(float(g) for g in gaps[label])))
            continue
        world, options = world_options(spec, "a study")
        made.append(StudyTask(spec, tuple(float(g) for g in world.task(options).gaps)))
    return StudyPlan(tasks=tuple(made), **fields)


def _cell_spec(spec: str, shift: str, masks: bool) -> str:
    """The canonical spec of ``spec`` with its kind of shift and masks, where its world has
    those options."""
    parsed = parse_world(spec)
    options, declared = dict(parsed["options"]), world_options(spec, "a study")[0].options
    if "shift" in declared:
        options["shift"] = shift
    if masks and "masks" in declared:
        options["masks"] = True
    return format_world(parsed["kind"], options)


def _check(plan: StudyPlan) -> dict:
    """``{label: StudyTask}`` of a checked plan; one :class:`S2RError` line otherwise."""
    if not 1 <= len(plan.tasks) <= MAX_TASKS:
        raise S2RError(f"a study needs 1 to {MAX_TASKS} tasks, got {len(plan.tasks)}")
    labels = {}
    for task in plan.tasks:
        label = task_label(task.spec)
        if label in labels:
            raise S2RError(f"the study names task {label!r} twice; give each task once")
        gaps = list(dict.fromkeys(task.gaps))
        if not 1 <= len(gaps) <= MAX_GAPS or any(not 0.0 <= float(g) <= 1.0 for g in gaps):
            raise S2RError(f"gaps of {label}: expected 1 to {MAX_GAPS} numbers in [0, 1], got "
                           f"{list(task.gaps)}")
        labels[label] = task
    if plan.encoders is not None and len(set(plan.encoders)) < 3:
        raise S2RError(f"encoders: a study ranks encoders, give at least 3 (got "
                       f"{len(set(plan.encoders))})")
    for kind in plan.shifts:
        if kind not in STUDY_SHIFTS:
            raise S2RError(f"shifts: expected some of {', '.join(STUDY_SHIFTS)}, got {kind!r}")
    for label in plan.shift_tasks if plan.shifts else ():
        if label not in labels:
            raise S2RError(f"shift tasks: {label!r} is not a task of the study (its tasks: "
                           f"{', '.join(labels)})")
        if "shift" not in world_options(labels[label].spec, "a study")[0].options:
            raise S2RError(f"shift tasks: the world of {label!r} has no kinds of shift")
    plan.params.validate()
    return labels


def study_cells(plan: StudyPlan) -> list:
    """The cells of ``plan``, in the order they run: every task at its gaps with
    ``shift=all``, then, for each shift task, each kind of shift alone at
    :data:`SHIFT_GAPS`.

    Returns
    -------
    list of Cell
    """
    labels = _check(plan)

    def cell(label: str, shift: str, gaps) -> Cell:
        spec = labels[label].spec
        ids = plan.encoders or study_encoders(world_options(spec, "a study")[0])
        return Cell(f"{label}--{shift}", _cell_spec(spec, shift, plan.masks),
                    tuple(dict.fromkeys(ids)), tuple(dict.fromkeys(float(g) for g in gaps)))

    cells = [cell(label, "all", task.gaps) for label, task in labels.items()]
    cells += [cell(label, kind, SHIFT_GAPS) for label in plan.shift_tasks for kind in plan.shifts]
    if len(cells) > MAX_CELLS:
        raise S2RError(f"a study holds at most {MAX_CELLS} cells, this one {len(cells)}")
    return cells


def cell_units(cell: Cell) -> int:
    """Progress units of ``cell``: :func:`validate`'s (per encoder, a score at each gap and
    the rollouts of the sim look and each gap)."""
    return len(cell.encoders) * (2 * len(cell.gaps) + 1)


def estimate_seconds(cell: Cell, params: RolloutParams, sim_shared: bool = False) -> float:
    """Wall seconds ``cell`` takes from scratch on a 2-core machine, estimated:
    :data:`ENCODER_TASK_SECONDS` an encoder, in proportion to the rollouts (20 measured) and
    the rollout runs (measured with three: the sim look and two gaps above 0; gap 0 is the
    sim look's). ``sim_shared``: an earlier cell ran this task's sim look
    (:func:`sim_shared`), so only the real gaps above 0 run."""
    runs = sum(float(g) > 0 for g in cell.gaps) + (0 if sim_shared else 1)
    return len(cell.encoders) * ENCODER_TASK_SECONDS * params.rollouts / 20 * runs / 3


def sim_shared(cells: Sequence[Cell]) -> list:
    """Per cell of ``cells`` (in run order), whether an earlier cell is of the same task in
    another kind of shift: its demonstrations, policies and sim-look rollouts are the earlier
    cell's (keyed by :meth:`~s2r.worlds.base.SimTask.sim_identity`), cached by then."""
    seen, out = set(), []
    for cell in cells:
        task = cell.name.rsplit("--", 1)[0]
        out.append(task in seen)
        seen.add(task)
    return out


def _duration(seconds: float) -> str:
    """``"2 h 05 min"``, ``"4 min"`` or ``"35 s"``."""
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{math.ceil(seconds / 60)} min" if seconds >= 60 else f"{math.ceil(seconds)} s"


class _Clock:
    """The study's one progress bar: units over every cell, each message naming the cell and
    an estimate of the time left from the units this run computed and their wall time (cells
    skipped count as done, not in the rate)."""

    def __init__(self, progress: Optional[ProgressCallback], total: int, clock=time.monotonic):
        self.progress, self.total, self.clock = progress, total, clock
        self.start, self.skipped, self.done = clock(), 0, 0

    def skip(self, units: int) -> None:
        self.skipped += units
        self.done += units

    def left(self) -> str:
        computed = self.done - self.skipped
        if computed <= 0:
            return "estimate: time left unknown yet"
        rate = (self.clock() - self.start) / computed
        return f"estimate: {_duration(rate * (self.total - self.done))} left"

    def at(self, offset: int, name: str) -> ProgressCallback:
        """The callback of the cell ``name`` whose units start at ``offset``."""
        def callback(done: int, total: int, message: str = "") -> None:
            self.done = offset + min(done, total)
            report(self.progress, self.done, self.total, f"{name}: {message} ({self.left()})")

        return callback


def read_manifest(path: Path) -> dict:
    """The manifest at ``path`` (``{}`` when there is none), read bounded and checked to be
    one; one :class:`S2RError` line naming the file otherwise."""
    from s2r.inputs import read_bounded

    if not path.exists():
        return {}
    raw = read_bounded(path, "study manifest", max_bytes=MAX_MANIFEST_BYTES)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    cells = data.get("cells") if isinstance(data, dict) else None
    if (not isinstance(cells, list) or data.get("study_version") != STUDY_VERSION
            or not all(isinstance(c, dict) and isinstance(c.get("cell"), dict)
                       for c in cells)):
        raise S2RError(f"{path}: not a study manifest of version {STUDY_VERSION} (a JSON "
                       "object with a list of cells); remove it or give another folder")
    return data


def _finished(manifest: dict, plan: StudyPlan, out_dir: Path) -> dict:
    """``{cell name: entry}`` of the cells ``manifest`` records done, measured as ``plan``
    measures, whose report is still there (at its own name: a manifest's path is never
    followed elsewhere)."""
    if manifest.get("measured_as") != plan.measured_as():
        return {}
    return {e["cell"].get("name"): e for e in manifest["cells"]
            if e.get("status") == "done" and isinstance(e["cell"].get("name"), str)
            and e.get("report") == _report_name(e["cell"]["name"])
            and (out_dir / e["report"]).is_file()}


def _spent(manifest: dict, plan: StudyPlan) -> dict:
    """``{cell name: wall seconds}`` that earlier, interrupted runs spent on cells ``manifest``
    records pending, measured as ``plan`` measures (what the next run adds its own to)."""
    if manifest.get("measured_as") != plan.measured_as():
        return {}
    return {e["cell"].get("name"): float(e["wall_s"]) for e in manifest["cells"]
            if e.get("status") == "pending" and isinstance(e.get("wall_s"), (int, float))
            and not isinstance(e.get("wall_s"), bool) and 0 <= e["wall_s"] < 1e9}


def _report_name(name: str) -> str:
    """Where a cell's report goes, under the study's folder."""
    return f"reports/{name}.json"


def _manifest(plan: StudyPlan, entries: list, command: Sequence[str]) -> dict:
    return {"study_version": STUDY_VERSION, "s2r_version": __version__,
            "command": list(command), "plan": plan.to_dict(),
            "measured_as": plan.measured_as(), "cells": entries}


def _write_json(path: Path, data: dict, writer) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with writer(path) as tmp:
        Path(tmp).write_text(json.dumps(data, indent=1))


def run_study(plan: StudyPlan, out_dir, *, cache=None,
              progress: Optional[ProgressCallback] = None, settings=None,
              address: Optional[str] = None, device=None, command: Sequence[str] = (),
              writer: Optional[Callable] = None,
              on_cell: Optional[Callable[[Cell, Path, Optional[float]], None]] = None) -> list:
    """Run every cell of ``plan`` into ``out_dir``; resumable.

    Parameters
    ----------
    plan : StudyPlan
    out_dir : str or PathLike
        Gets ``reports/<cell name>.json`` (each :func:`validate`'s report, as ``s2r
        validate`` writes it) and ``study.json``: the plan, each cell with its report, status
        (``done``/``pending``) and wall seconds (over every run that worked on it: an
        interrupted run writes its share before it stops, the next adds its own), the s2r
        version and ``command``. Written after every cell and on an interruption. Once
        every cell is done, ``evidence.json`` (:func:`study_evidence`).
    cache : Cache, False or None
        As for :func:`validate`; a cell interrupted midway resumes from it. The Ray path needs
        a cache folder (the workers write into it, the driver reads).
    progress : ProgressCallback, optional
        One bar over every cell (:func:`cell_units` each); each message names the cell and
        an estimate of the time left.
    settings : s2r.settings.Settings, optional
        Default :func:`s2r.settings.current`; handed down (to Ray's workers too).
    address : str, optional
        A Ray cluster (``HOST:PORT``, ``ray://HOST:PORT``, ``auto``, or ``local`` for a new
        instance here): every (cell, encoder) is measured there first.
    device : str, optional
    command : sequence of str
        The command line, for the manifest.
    writer : callable, optional
        ``writer(path)`` a context manager yielding the temporary path a file is written to
        and renamed from (default :func:`s2r.atomic.atomic_path`; the CLI's also records the
        file as s2r's output).
    on_cell : callable, optional
        ``on_cell(cell, report_path, wall_seconds)`` after each cell; ``wall_seconds`` None
        for a cell skipped as already done.

    Returns
    -------
    list of Path
        Every cell's report, in :func:`study_cells` order.
    """
    from s2r.atomic import atomic_path
    from s2r.cache import as_cache
    from s2r.settings import current

    settings = settings if settings is not None else current()
    writer = writer or atomic_path
    cells = study_cells(plan)
    out_dir = Path(out_dir)
    manifest_path = out_dir / "study.json"
    manifest = read_manifest(manifest_path)
    finished, spent = _finished(manifest, plan, out_dir), _spent(manifest, plan)
    cache = as_cache(cache, settings)
    entries = []
    for cell in cells:
        old = finished.get(cell.name)
        done = old is not None and old["cell"] == cell.to_dict()
        entries.append(old if done else {"cell": cell.to_dict(), "status": "pending",
                                         "report": _report_name(cell.name),
                                         "wall_s": spent.get(cell.name)})
    clock = _Clock(progress, sum(cell_units(c) for c in cells))
    offsets = dict(zip((c.name for c in cells),
                       [sum(cell_units(c) for c in cells[:i]) for i in range(len(cells))]))
    todo = [i for i, e in enumerate(entries) if e["status"] != "done"]
    for i, cell in enumerate(cells):
        if i not in todo:
            clock.skip(cell_units(cell))
            if on_cell is not None:
                on_cell(cell, out_dir / entries[i]["report"], None)
    _write_json(manifest_path, _manifest(plan, entries, command), writer)
    for i in _ready(todo, cells, plan, cache, address, device, settings, clock, offsets):
        cell, start = cells[i], time.monotonic()
        before = float(entries[i]["wall_s"] or 0.0)
        try:
            result = validate(cell.spec, cell.encoders, cell.gaps, params=plan.params,
                              cache=cache, device=device, n_boot=plan.n_boot,
                              settings=settings, progress=clock.at(offsets[cell.name], cell.name),
                              object_focus=plan.object_focus)
        except BaseException:      # interrupted: keep the time spent, the next run adds to it
            entries[i] = {**entries[i], "wall_s": before + time.monotonic() - start}
            _write_json(manifest_path, _manifest(plan, entries, command), writer)
            raise
        path = out_dir / entries[i]["report"]
        _write_json(path, result.to_dict(), writer)
        entries[i] = {**entries[i], "status": "done",
                      "wall_s": before + time.monotonic() - start}
        _write_json(manifest_path, _manifest(plan, entries, command), writer)
        if on_cell is not None:
            on_cell(cell, path, entries[i]["wall_s"])
    reports = [out_dir / e["report"] for e in entries]
    _write_json(out_dir / "evidence.json", study_evidence(plan, entries, reports, command),
                writer)
    return reports


def study_evidence(plan: StudyPlan, entries: list, reports: Sequence[Path],
                   command: Sequence[str]) -> dict:
    """The evidence of a finished study (:func:`s2r.evidence.build_evidence` of its reports),
    its provenance the commit, s2r version, command, seeds and wall time of the study."""
    from s2r.closedloop.report import ValidationReport
    from s2r.evidence import build_evidence
    from s2r.identity import source_commit

    provenance = {"source": "s2r study", "commit": source_commit(), "s2r_version": __version__,
                  "command": " ".join(command), "seed": plan.params.seed,
                  "n_boot": plan.n_boot,
                  "wall_s": sum(float(e["wall_s"] or 0.0) for e in entries),
                  "report_files": [str(Path(p).name) for p in reports]}
    return build_evidence([ValidationReport.read(p) for p in reports], provenance=provenance,
                          n_boot=plan.n_boot, seed=plan.params.seed,
                          sources=[str(p) for p in reports])


def _ready(todo: list, cells: list, plan: StudyPlan, cache, address, device, settings,
           clock: _Clock, offsets: dict) -> Iterator[int]:
    """The indices of ``todo``'s cells as each is ready to validate: at once without Ray;
    with Ray, as soon as every encoder of the cell has been measured on the cluster."""
    if address is None or not todo:
        yield from todo
        return
    from s2r.closedloop.study_ray import measure_cells_ray

    def measured(i: int, encoder_id: str, finished: int) -> None:
        cell = cells[i]
        per = 2 * len(cell.gaps) + 1
        clock.at(offsets[cell.name], cell.name)(finished * per, cell_units(cell),
                                                f"{encoder_id} measured on Ray")

    for k in measure_cells_ray([cells[i] for i in todo], plan, cache=cache, address=address,
                               device=device, settings=settings,
                               on_encoder=lambda k, e, n: measured(todo[k], e, n)):
        yield todo[k]
