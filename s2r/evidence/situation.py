"""Where a validation report was measured: its world, task and kind of visual shift.

A situation is what the evidence table groups a report's correlations by: ``(world, task,
shift)``. A closed-loop report's situation is read from its dataset spec
(``params["dataset"]``) by the worlds' own spec parser
(:func:`s2r.datasets.world.world_options`), never by splitting the text here; your robot's
results are the world ``"real"``.
"""

from __future__ import annotations

from typing import Any, Mapping

from s2r.closedloop.report import REAL_RESULTS, ValidationReport
from s2r.datasets.world import world_options
from s2r.errors import S2RError
from s2r.inputs import quoted

__all__ = ["REAL_WORLD", "ALL_SHIFTS", "situation_of", "real_tasks", "report_seeds"]

#: The world of a report of your robot's results.
REAL_WORLD = "real"
#: The shift of a spec that names none: every part of the world's real look at once.
ALL_SHIFTS = "all"


def real_tasks(report: ValidationReport) -> list:
    """The tasks of a real-results report (``real_results["tasks"]``, sorted; empty when the
    table named none)."""
    return sorted(report.real_results.get("tasks") or [])


def situation_of(report: ValidationReport, *, source: str = "report") -> tuple:
    """``(world, task, shift)`` of ``report``.

    Parameters
    ----------
    report : ValidationReport
    source : str
        How a message names the report.

    Returns
    -------
    (world, task, shift) : tuple of str
        A closed-loop report: the world's name (``"demo"``, ``"metaworld"``), its task (the
        world's ``task`` option; the world's name where it has one task, as the demo) and its
        ``shift`` option (:data:`ALL_SHIFTS` where the world has none). Your robot's
        results: (:data:`REAL_WORLD`, the table's one task or ``"real"``, ``"all"``); a table
        of several tasks is one situation per task, each named by its rows.

    Raises
    ------
    S2RError
        One line naming ``source`` when a closed-loop report's dataset is not a world's spec.
    """
    if report.kind == REAL_RESULTS:
        tasks = real_tasks(report)
        return REAL_WORLD, tasks[0] if len(tasks) == 1 else REAL_WORLD, ALL_SHIFTS
    spec = report.params.get("dataset")
    if not isinstance(spec, str):
        raise S2RError(f"{source}: params 'dataset' must be a world's dataset spec (text), got "
                       f"{quoted(repr(spec))}")
    try:
        world, options = world_options(spec, "the evidence table")
    except S2RError as exc:
        raise S2RError(f"{source}: params 'dataset': {exc}") from None
    return world.name, str(options.get("task", world.name)), str(options.get("shift",
                                                                             ALL_SHIFTS))


def report_seeds(params: Mapping[str, Any], prefix: str = "") -> dict:
    """Every seed of a report's ``params``: ``{dotted key: value}`` of each key named
    ``seed`` or ``seeds`` at any depth (``{"rollouts.seed": 0, "scores.seed": 0}``)."""
    found = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if key in ("seed", "seeds"):
            found[name] = value
        elif isinstance(value, Mapping):
            found.update(report_seeds(value, f"{name}."))
    return found
