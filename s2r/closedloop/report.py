"""The validation report: what ``python -m s2r validate`` writes and every reader reads.

:class:`ValidationReport` is one typed record for both kinds of report: a world.s closed loop
(:func:`s2r.closedloop.validation.validate`: one row per encoder and gap, rank correlations
per outcome, score and gap, the rollouts' outcomes, the task's stages) and your robot's
results (``validate --real-results``: ``real_results`` instead of rollouts). ``to_dict()`` is
the JSON file, unchanged; :meth:`ValidationReport.from_dict` is the one reader of a report
that came from outside (a file handed to ``python -m s2r figure validation``): it treats it as
hostile, bounded and checked field by field, and says what is wrong in one line naming the
report, the row and the field, quoting at most 100 characters of what it read.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from typing import (Any, List, Mapping, Optional, TypedDict, Union, get_args, get_origin,
                    get_type_hints)

from s2r.errors import S2RError
from s2r.inputs import quoted, read_json

__all__ = ["CLOSED_LOOP", "KIND_ALIASES", "MAX_REPORT_BYTES", "MAX_REPORT_ROWS", "REAL_RESULTS",
           "Correlation", "LayerEffect", "LayerOutcome", "LayerRow", "LayersSection", "ResultRow",
           "RolloutOutcome", "ValidationReport", "report_kind"]

#: :attr:`ValidationReport.kind` of a report of rollouts in a simulated world (any world).
CLOSED_LOOP = "closed-loop"
#: :attr:`ValidationReport.kind` of a report of your robot's results.
REAL_RESULTS = "real-results"
#: Other names of a kind, read as the kind: ``"demo"`` named the closed loop in every world.
KIND_ALIASES = {"demo": CLOSED_LOOP}


def report_kind(name: str) -> str:
    """The kind ``name`` stands for (:data:`CLOSED_LOOP` for ``"demo"``; a kind itself
    unchanged), so a reader that compares kinds reads the old name too."""
    return KIND_ALIASES.get(name, name)

#: Largest report read (bytes): a validate report of 100 tasks x 100 encoders is ~5 MB.
MAX_REPORT_BYTES = 32 << 20
#: Most rows of any list of a report (result rows, your results, correlations, outcomes).
MAX_REPORT_ROWS = 20_000
_NOT_A_REPORT = "not a report of 'python -m s2r validate'"
#: Result-row fields that must be there, in [0, 1] (a closed-loop report).
_REQUIRED_UNIT = ("success_real", "success_real_ci_low", "success_real_ci_high")
#: Result-row fields in [0, 1] or null when there.
_OPTIONAL_UNIT = tuple(f"{o}_{look}{end}" for o in ("success", "progress")
                       for look in ("real", "sim") for end in ("", "_ci_low", "_ci_high")
                       if f"{o}_{look}{end}" not in _REQUIRED_UNIT)
#: Correlation fields that are numbers (or null) and must all be numbers with ``spearman``.
_RHO = ("spearman", "spearman_ci_low", "spearman_ci_high")
_TAU = ("kendall", "kendall_ci_low", "kendall_ci_high")


class ResultRow(TypedDict, total=False):
    """One encoder at one gap (closed-loop report): real and sim outcomes with 95% intervals, the
    share of real/sim rollouts that reached each stage, and every top-level number of the
    encoder's score record at that gap (``dis``, ``sim2real_score``, ... with ``_ci_low`` /
    ``_ci_high``: a number or None). ``runtime`` names what computed the embeddings when it
    was not torch (``"onnxruntime/v1"``); a row without it is torch's."""

    encoder: str
    gap: float
    image_encoder: bool
    runtime: str
    success_real: float
    success_real_ci_low: float
    success_real_ci_high: float
    success_sim: float
    progress_real: float
    progress_sim: float
    stages_real: List[float]
    stages_sim: List[float]
    rollouts: int
    steps_real_mean: float


class Correlation(TypedDict, total=False):
    """A rank correlation of one score with one outcome (``"success"``, ``"progress"`` or
    ``"real-results"``) at one gap (a number, ``"all"``, or None for your results) or task;
    the statistics are None where undefined (a constant score or outcome)."""

    score: str
    gap: Union[float, str, None]
    outcome: str
    task: str
    encoders: List[str]
    n: int
    spearman: Optional[float]
    spearman_ci_low: Optional[float]
    spearman_ci_high: Optional[float]
    kendall: Optional[float]
    kendall_ci_low: Optional[float]
    kendall_ci_high: Optional[float]
    undefined_share: Optional[float]


class RolloutOutcome(TypedDict):
    """Per rollout of one encoder at one gap (real look): success and graded progress."""

    encoder: str
    gap: float
    successes: List[bool]
    progress: List[float]


class LayerRow(TypedDict, total=False):
    """One image encoder at one gap of the ``layers`` section: the final and the chosen layer,
    the choosing score of each (``score_difference`` with its interval; ``score_resolved``
    whether the interval excludes 0), and real (and sim, for the chosen layer) success and
    progress of each layer's policy with their intervals (``success_real_final``,
    ``progress_real_chosen``, ``success_sim_chosen``, ... with ``_ci_low``/``_ci_high``: a
    number in [0, 1] or None)."""

    encoder: str
    gap: float
    score: str
    layer_final: str
    layer_chosen: str
    layer_chosen_index: int
    layer_chosen_depth: float
    layer_count: int
    changed: bool
    score_final: Optional[float]
    score_chosen: Optional[float]
    score_difference: Optional[float]
    score_difference_ci_low: Optional[float]
    score_difference_ci_high: Optional[float]
    score_resolved: Optional[bool]


class LayerOutcome(RolloutOutcome):
    """The chosen layer's rollouts of one encoder at one gap (real look)."""

    layer: str


class LayerEffect(TypedDict, total=False):
    """The paired chosen - final difference of one outcome across encoders
    (:func:`s2r.metrics.layers.paired_effect`): ``encoders`` is ``"all"`` or ``"changed"``
    (those whose choice was not the final layer), ``gap`` a number or ``"all"``."""

    outcome: str
    gap: Union[float, str]
    encoders: str
    encoder_ids: List[str]
    n_encoders: Optional[int]
    difference: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    p_chosen_better: Optional[float]
    resolved: Optional[bool]


class LayersSection(TypedDict, total=False):
    """The ``validate --layers best`` section
    (:func:`s2r.closedloop.layer_choice.layer_validation`): ``score`` picked each layer, on
    the frames only (``chosen_on`` says how)."""

    choice: str
    score: str
    chosen_on: str
    rows: List[LayerRow]
    outcomes: List[LayerOutcome]
    effects: List[LayerEffect]


@dataclass(frozen=True)
class ValidationReport:
    """A validation report (see the module docstring).

    Attributes
    ----------
    results : list of ResultRow
        One row per (encoder, gap), encoders in the order asked; empty for your results.
    correlations : list of Correlation
        Per outcome, score and gap (and ``"all"``) over the image encoders; for your results
        per score and task.
    outcomes : list of RolloutOutcome
        Row ``i`` of :attr:`results`'s rollouts (closed-loop report).
    stages : list of str
        The task's stages, in order (closed-loop report).
    params : dict
        How it was measured (dataset, rollout and score parameters, ``n_boot``, ...).
    real_results : dict or None
        Your robot's results (``rows``: one per encoder and task with ``success_rate``, its
        Wilson interval and the encoder's scores; ``missing_scores``, ``tasks``, ``file``);
        None for the closed loop.
    layers : LayersSection or None
        ``validate --layers best``: its rows (:class:`LayerRow`), outcomes
        (:class:`LayerOutcome`) and effects (:class:`LayerEffect`); None otherwise.
    """

    results: list
    correlations: list
    outcomes: list = field(default_factory=list)
    stages: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    real_results: Optional[dict] = None
    layers: Optional[LayersSection] = None

    # ------------------------------------------------------------------------- reading
    @property
    def kind(self) -> str:
        """:data:`CLOSED_LOOP` (rollouts in a simulated world, any world) or
        :data:`REAL_RESULTS` (your robot's results); see :func:`report_kind` for the old
        names."""
        return CLOSED_LOOP if self.real_results is None else REAL_RESULTS

    @property
    def rows(self) -> list:
        """The rows a chart draws: :attr:`results`, or your results' rows."""
        return self.results if self.real_results is None else self.real_results["rows"]

    @property
    def gaps(self) -> list:
        """The gaps of :attr:`results`, ascending."""
        return sorted({float(r["gap"]) for r in self.results})

    def has_score(self, score: str) -> bool:
        """Whether any row holds ``score``."""
        return any(score in r for r in self.rows)

    def correlations_at(self, gap: Any = "all", outcome: str = "success") -> list:
        """The correlations of every score at ``gap`` with ``outcome`` (a row without an
        ``outcome`` is a success one), in the report's order."""
        return [c for c in self.correlations
                if str(c.get("gap")) == str(gap) and c.get("outcome", "success") == outcome]

    def correlation(self, score: str, *, gap: Any = "all",
                    outcome: str = "success") -> Optional[Correlation]:
        """The correlation of ``score`` at ``gap`` with ``outcome``, or None."""
        return next((c for c in self.correlations_at(gap, outcome) if c["score"] == score),
                    None)

    def outcome(self, encoder: str, gap: float) -> RolloutOutcome:
        """The rollouts of ``encoder`` at ``gap``; KeyError when the report has none."""
        for o in self.outcomes:
            if o["encoder"] == encoder and float(o["gap"]) == float(gap):
                return o
        raise KeyError(f"no rollouts of {encoder!r} at gap {gap:g} in this report")

    # ------------------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        """The report as ``python -m s2r validate`` writes it (a deep copy)."""
        out: dict = {"results": self.results, "correlations": self.correlations}
        if self.real_results is None:
            out.update(outcomes=self.outcomes, stages=self.stages)
        else:
            out["real_results"] = self.real_results
        if self.layers is not None:
            out["layers"] = self.layers
        out["params"] = self.params
        return copy.deepcopy(out)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "validation report") -> "ValidationReport":
        """The report of a JSON object, checked field by field.

        Parameters
        ----------
        data : object
            What ``json.loads`` made of a report file (or :meth:`to_dict`).
        source : str
            How messages name the report (``"report 'out/report.json'"``).

        Raises
        ------
        S2RError
            One line naming ``source``, the row and the field, and what was expected.
        """
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise S2RError(f"{source}: {_NOT_A_REPORT} (no results list)")
        real = data.get("real_results")
        results = [_result_row(row, f"{source} results[{k}]")
                   for k, row in enumerate(_rows(data["results"], source, "results"))]
        corr = data.get("correlations", [])
        if not isinstance(corr, list):
            raise S2RError(f"{source}: 'correlations' must be a list; {_NOT_A_REPORT}")
        correlations = [_correlation(c, f"{source} correlations[{k}]")
                        for k, c in enumerate(_rows(corr, source, "correlations"))]
        outcomes = [_outcome(o, f"{source} outcomes[{k}]")
                    for k, o in enumerate(_rows(data.get("outcomes", []), source, "outcomes"))]
        stages = data.get("stages", [])
        _need(isinstance(stages, list) and all(_text(s) for s in stages), source, "stages",
              stages, "a list of stage names")
        params = data.get("params", {})
        _need(isinstance(params, dict), source, "params", params, "a JSON object")
        return cls(results=results, correlations=correlations, outcomes=outcomes,
                   stages=list(stages), params=params,
                   real_results=None if real is None and "real_results" not in data
                   else _real_results(real, f"{source} real_results"),
                   layers=None if data.get("layers") is None
                   else _layers(data["layers"], f"{source} layers"))

    @classmethod
    def read(cls, path: Union[str, os.PathLike]) -> "ValidationReport":
        """Read a report file: refused unopened when it is a FIFO, a device or a link to one,
        unread when over :data:`MAX_REPORT_BYTES` (:func:`s2r.inputs.read_bounded`), then
        parsed (depth-bounded) and checked by :meth:`from_dict`."""
        data = read_json(path, "report", max_bytes=MAX_REPORT_BYTES, expected=_NOT_A_REPORT)
        return cls.from_dict(data, source=f"report {quoted(str(path))}")


# ----------------------------------------------------------------------------- field checks
def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(value, most: int = 200) -> bool:
    return isinstance(value, str) and len(value) <= most


def _need(ok: bool, where: str, key: str, value, expected: str) -> None:
    if not ok:
        shown = quoted(json.dumps(value)) if not isinstance(value, (dict, list)) else \
            f"a {'JSON object' if isinstance(value, dict) else 'list'}"
        raise S2RError(f"{where}: {key!r} must be {expected}, got {shown}")


def _number(row: Mapping, key: str, where: str, *, optional: bool = False,
            unit: bool = False) -> None:
    if key not in row:
        if not optional:
            raise S2RError(f"{where}: no {key!r}; {_NOT_A_REPORT}")
        return
    value = row[key]
    if value is None and optional:
        return
    expected = "a number in [0, 1]" if unit else "a number"
    _need(_is_number(value) and (not unit or 0 <= value <= 1), where, key, value,
          expected + (" or null" if optional else ""))


def _others_numbers(row: Mapping, where: str, checked) -> None:
    """Every field not in ``checked`` (the scores) is a number or null."""
    for key, value in row.items():
        if key not in checked and value is not None and not _is_number(value):
            _need(False, where, str(key)[:100], value, "a number or null")


def _rows(value, where: str, key: str) -> list:
    _need(isinstance(value, list), where, key, value, "a list of rows")
    if len(value) > MAX_REPORT_ROWS:
        raise S2RError(f"{where}: {len(value):,} rows, over the limit of "
                       f"{MAX_REPORT_ROWS:,} for a report")
    for k, row in enumerate(value):
        if not isinstance(row, dict):
            raise S2RError(f"{where} {key}[{k}]: a row must be a JSON object, got "
                           f"{type(row).__name__}")
    return value


def _encoder(row: Mapping, where: str) -> None:
    value = row.get("encoder")
    _need(isinstance(value, str) and 0 < len(value) <= 200, where, "encoder", value,
          "an encoder id (text)")


def _unit_list(row: Mapping, key: str, where: str) -> None:
    if key in row:
        value = row[key]
        _need(isinstance(value, list) and all(_is_number(v) and 0 <= v <= 1 for v in value),
              where, key, value, "a list of numbers in [0, 1]")


def _result_row(row: dict, where: str) -> ResultRow:
    _encoder(row, where)
    _number(row, "gap", where)
    for key in _REQUIRED_UNIT:
        _number(row, key, where, unit=True)
    for key in _OPTIONAL_UNIT:
        _number(row, key, where, optional=True, unit=True)
    for key in ("stages_real", "stages_sim"):
        _unit_list(row, key, where)
    if "image_encoder" in row:
        _need(isinstance(row["image_encoder"], bool), where, "image_encoder",
              row["image_encoder"], "true or false")
    if "runtime" in row:
        _need(_text(row["runtime"]), where, "runtime", row["runtime"],
              "text (what computed the embeddings)")
    _others_numbers(row, where, {"encoder", "image_encoder", "runtime", "stages_real",
                                 "stages_sim"})
    return row


def _correlation(c: dict, where: str) -> Correlation:
    if "score" not in c:
        raise S2RError(f"{where}: no 'score'; {_NOT_A_REPORT}")
    _need(_text(c["score"]), where, "score", c["score"], "a score name (text)")
    gap = c.get("gap")
    _need(gap is None or gap == "all" or _is_number(gap), where, "gap", gap,
          "a number, \"all\" or null")
    for key in ("outcome", "task"):
        _need(c.get(key) is None or _text(c[key]), where, key, c.get(key), "text or null")
    encoders = c.get("encoders", [])
    _need(isinstance(encoders, list) and all(_text(e) for e in encoders), where, "encoders",
          encoders, "a list of encoder ids")
    for key in (*_RHO, *_TAU, "n", "undefined_share"):
        _number(c, key, where, optional=True)
    if c.get("spearman") is not None:   # a defined correlation has its interval (and tau)
        for key in (*_RHO, *(k for k in _TAU if k in c)):
            _need(_is_number(c.get(key)), where, key, c.get(key),
                  "a number (the correlation is defined)")
    return c


def _outcome(o: dict, where: str) -> RolloutOutcome:
    _encoder(o, where)
    _number(o, "gap", where)
    successes, progress = o.get("successes"), o.get("progress")
    _need(isinstance(successes, list) and all(isinstance(s, bool) for s in successes), where,
          "successes", successes, "a list of true/false")
    _need(isinstance(progress, list) and all(_is_number(p) and 0 <= p <= 1 for p in progress),
          where, "progress", progress, "a list of numbers in [0, 1]")
    return o


def _real_results(real: Any, where: str) -> dict:
    if not isinstance(real, dict):
        raise S2RError(f"{where}: must be a JSON object; {_NOT_A_REPORT}")
    for k, row in enumerate(_rows(real.get("rows"), where, "rows")):
        at = f"{where}.rows[{k}]"
        _encoder(row, at)
        task = row.get("task")
        _need(task is None or _text(task), at, "task", task, "text or null")
        _number(row, "success_rate", at, unit=True)
        for key in ("success_ci_low", "success_ci_high"):
            _number(row, key, at, optional=True, unit=True)
        _others_numbers(row, at, {"encoder", "task"})
    return real


def _fits(value, kind) -> bool:
    """Whether the JSON ``value`` is of the annotated ``kind`` (str, bool, int, float, a
    ``List`` of one of them, ``Optional``/``Union`` of them)."""
    origin, args = get_origin(kind), get_args(kind)
    if origin is Union:
        return any(_fits(value, k) for k in args)
    if origin in (list, List):
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    if kind is type(None):
        return value is None
    if kind is str:
        return _text(value)
    if kind is bool:
        return isinstance(value, bool)
    if kind in (int, float):
        return _is_number(value)
    return True                           # a nested record: checked on its own


def _expected(kind) -> str:
    """What ``kind`` reads as in a message ("true, false or null", "text", ...)."""
    origin, args = get_origin(kind), get_args(kind)
    if origin is Union:
        names = [_expected(k) for k in args if k is not type(None)]
        if type(None) in args:
            names.append("null")
        return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    if origin in (list, List):
        return f"a list of {_expected(args[0])}"
    return {str: "text", bool: "true, false", int: "a number", float: "a number"}.get(
        kind, "a JSON value")


def _typed(row: Mapping, record: type, where: str, skip=()) -> None:
    """Every field of ``row`` that the TypedDict ``record`` annotates is of its type (a
    missing one is fine: the records are ``total=False``)."""
    for key, kind in get_type_hints(record).items():
        if key in row and key not in skip:
            _need(_fits(row[key], kind), where, key, row[key], _expected(kind))


def _layers(section: Any, where: str) -> dict:
    """The ``validate --layers best`` section: its rows (every outcome in [0, 1] or null, the
    rest numbers, text or true/false), outcomes and effects, checked as the report's own."""
    _need(isinstance(section, dict), where, "layers", section, "a JSON object")
    _need(_text(section.get("score")), where, "score", section.get("score"), "a score name")
    _typed(section, LayersSection, where, skip=("rows", "outcomes", "effects"))
    texts = {k for k, t in get_type_hints(LayerRow).items() if t is str}
    for k, row in enumerate(_rows(section.get("rows", []), where, "rows")):
        at = f"{where}.rows[{k}]"
        _encoder(row, at)
        for key in texts - {"encoder"}:           # the layers and the score are always named
            _need(_text(row.get(key)), at, key, row.get(key), "text")
        _typed(row, LayerRow, at)
        for key in row:
            if key.startswith(("success_", "progress_")):
                _number(row, key, at, optional=True, unit=True)
        _others_numbers(row, at, set(get_type_hints(LayerRow)))
    for k, o in enumerate(_rows(section.get("outcomes", []), where, "outcomes")):
        _outcome(o, f"{where}.outcomes[{k}]")
        _typed(o, LayerOutcome, f"{where}.outcomes[{k}]")
    for k, e in enumerate(_rows(section.get("effects", []), where, "effects")):
        at = f"{where}.effects[{k}]"
        for key in ("outcome", "encoders"):
            _need(_text(e.get(key)), at, key, e.get(key), "text")
        _need(e.get("gap") == "all" or _is_number(e.get("gap")), at, "gap", e.get("gap"),
              "a number or \"all\"")
        _typed(e, LayerEffect, at)
    return section
