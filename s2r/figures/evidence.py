"""The evidence (:mod:`s2r.evidence`) as a table and a forest plot: which score ranked the
image encoders as closed-loop deployment did, at each task, kind of shift and gap, and
combined over them (pure: evidence document in, table or chart out; no Streamlit).

A cell is a score's Spearman with real ``outcome`` over the image encoders at one task-gap,
with its 95% bootstrap interval and how many encoders the score left tied; the last column and
the forest plot's bold mark are the combined estimate (the mean over the real looks, with the
hierarchical bootstrap interval). Chance is rho = 0; a perfect ranking is 1. At the study's
scale the tasks at their full shift (:func:`evidence_table` with ``shift="all"``) and each
kind of shift alone (:func:`shift_table`: its own combined estimate, then each task) are two
tables, and the forest plot grows with the task-gaps (:func:`forest_height`).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import altair as alt
import pandas as pd

from s2r.evidence.narrowing import ALL, ENCODER_COUNTS, evidence_narrowing
from s2r.evidence.shifts import combined_by_shift, evidence_shifts
from s2r.evidence.situation import ALL_SHIFTS
from s2r.metrics import catalogue

__all__ = ["COMBINED", "FOREST_STEP", "evidence_rows", "evidence_table", "forest_height",
           "forest_plot", "markdown", "narrowing_table", "shift_table"]

#: The forest plot's and the table's name of the combined estimate.
COMBINED = "combined"
#: The tasks' colours: saturated on a light and a dark theme alike (the app's own palette
#: is pale on both).
TASK_COLOURS = "tableau10"
#: The widest score title drawn whole (pixels): "Transfer skill (sim → real)" and longer.
LABEL_LIMIT = 320
#: The forest plot's height a line (pixels): each task-gap's interval, and the combined.
FOREST_STEP = 12


def _place(row: Mapping[str, Any]) -> str:
    """``"drawer-open-v3 gap 0.5"`` (``"..., lighting"`` for a kind of shift other than all)."""
    where = row["task"] if row["world"] != "demo" else "demo"
    shift = "" if row.get("shift", "all") == "all" else f", {row['shift']}"
    gap = "" if row.get("gap") is None else f" gap {float(row['gap']):g}"
    return f"{where}{gap}{shift}"


def evidence_rows(evidence: Mapping[str, Any], outcome: str = "success", *,
                  real_looks_only: bool = True) -> pd.DataFrame:
    """One row per score and task-gap (``outcome`` only): ``score``, ``title``, ``place``,
    ``spearman`` with ``low``/``high``, ``n_ranked``, ``n_tied``, ``verdict``, ``world``,
    ``task``, ``shift``, ``gap``. ``real_looks_only`` leaves out gap 0 (the sim look's twin:
    it says how a score ranks in-domain success, not transfer)."""
    titles = catalogue.titles()
    rows = [{"score": r["score"], "title": titles.get(r["score"], r["score"]),
             "place": _place(r), "spearman": r["spearman"], "low": r["spearman_ci_low"],
             "high": r["spearman_ci_high"], "n_ranked": r["n_ranked"], "n_tied": r["n_tied"],
             "verdict": r["verdict"], "world": r["world"], "task": r["task"],
             "shift": r.get("shift", "all"), "gap": r.get("gap")}
            for r in evidence["rows"] if r["outcome"] == outcome
            and not (real_looks_only and r.get("gap") is not None and float(r["gap"]) == 0.0)]
    frame = pd.DataFrame(rows, columns=["score", "title", "place", "spearman", "low", "high",
                                        "n_ranked", "n_tied", "verdict", "world", "task",
                                        "shift", "gap"])
    return frame.sort_values(["world", "task", "shift", "gap"], kind="stable",
                             ignore_index=True)


def _combined(evidence: Mapping[str, Any], outcome: str) -> dict:
    return {c["score"]: c for c in evidence["combined"] if c["outcome"] == outcome}


def _cell(rho, low, high, verdict: str, tied: str = "") -> str:
    if rho is None:
        return "undefined"
    return f"{rho:+.2f} [{low:+.2f}, {high:+.2f}] {verdict}{tied}"


def _tied(r) -> str:
    """`` (k tied of n)`` where a row's score left encoders tied, else nothing."""
    return f" ({r.n_tied} tied of {r.n_ranked})" if r.n_tied else ""


def _row_cell(r) -> str:
    """One row of :func:`evidence_rows` as ``rho [low, high] verdict (k tied of n)``."""
    return _cell(None if pd.isna(r.spearman) else r.spearman, r.low, r.high, r.verdict,
                 _tied(r))


def _combined_cell(c: Mapping[str, Any] | None) -> str:
    """A combined entry as ``mean [low, high] verdict; m of N above chance``."""
    if c is None:
        return ""
    return _cell(c["mean_rho"], c["ci_low"], c["ci_high"], c["verdict"],
                 f"; {c['n_above_chance']} of {c['n_task_gaps']} above chance")


def evidence_table(evidence: Mapping[str, Any], outcome: str = "success", *,
                   shift: Optional[str] = None) -> pd.DataFrame:
    """Scores x task-gaps: ``rho [low, high] verdict`` with ``(k tied of n)`` where the score
    left encoders tied, then the combined estimate (``mean [low, high] verdict``, ``m of N
    above chance``) last; scores in the catalogue's order.

    ``shift`` keeps the task-gaps of one kind of shift as columns (``"all"``: the tasks at
    their full shift; None: every task-gap). The last column is always the evidence's own
    combined estimate, over every real look: where ``shift`` left some out, its title says
    over how many task-gaps and that the kinds of shift are in it."""
    every = evidence_rows(evidence, outcome)
    rows = every if shift is None else every[every["shift"] == shift]
    combined = _combined(evidence, outcome)
    places = list(dict.fromkeys(rows["place"]))
    column = COMBINED
    if len(rows) < len(every):
        column = (f"{COMBINED} (all {every['place'].nunique()} task-gaps, each kind of shift "
                  f"included)")
    table = {}
    for score in (k for k in evidence["scores"] if k in set(rows["score"]) | set(combined)):
        mine = rows[rows["score"] == score].set_index("place")
        cells = {p: _row_cell(mine.loc[p]) if p in mine.index else "" for p in places}
        cells[column] = _combined_cell(combined.get(score))
        table[catalogue.titles().get(score, score)] = cells
    return pd.DataFrame.from_dict(table, orient="index").rename_axis("score")


def shift_table(evidence: Mapping[str, Any], outcome: str = "success", *,
                sep: str = "; ") -> pd.DataFrame:
    """Scores x kinds of shift alone (every kind but ``all``, in the evidence's order): per
    kind, its combined estimate (:func:`s2r.evidence.shifts.combined_by_shift`: ``combined
    mean [low, high] verdict``), then each of its task-gaps' ``task rho [low, high]
    verdict`` (the gap named where the kind has several), joined by ``sep`` (``"<br>"`` in
    the docs). Empty (no column) when the evidence has no kind of shift alone."""
    rows = evidence_rows(evidence, outcome)
    rows = rows[rows["shift"] != ALL_SHIFTS]
    by_kind = {(c["shift"], c["score"]): c for c in combined_by_shift(evidence, outcome)}
    titles = catalogue.titles()
    table: dict = {}
    for kind in (k for k in evidence_shifts(evidence) if k != ALL_SHIFTS):
        mine = rows[rows["shift"] == kind]
        several = mine["gap"].nunique() > 1
        for score in (k for k in evidence["scores"] if (kind, k) in by_kind):
            c = by_kind[(kind, score)]
            parts = [f"{COMBINED} " + _cell(c["mean_rho"], c["ci_low"], c["ci_high"],
                                            c["verdict"])]
            parts += [f"{r.task}{f' gap {r.gap:g}' if several else ''} {_row_cell(r)}"
                      for r in mine[mine["score"] == score].itertuples()]
            table.setdefault(titles.get(score, score), {})[kind] = sep.join(parts)
    return pd.DataFrame.from_dict(table, orient="index").rename_axis("score")


def _widths(row: Mapping[str, Any]) -> str:
    """``"1.17 / 0.50 (7 cells)"``: the per-task-gap and the combined width at one ``k``."""
    if not row["n_cells"]:
        return f"no cell ({row['n_left_out']} have fewer encoders)"

    def width(w) -> str:
        return "undefined" if w is None else f"{w:.2f}"

    short = f", {row['n_left_out']} left out" if row["n_left_out"] else ""
    return (f"{width(row['task_gap_width'])} / {width(row['combined_width'])} "
            f"({row['n_cells']} cell{'s' * (row['n_cells'] != 1)}{short})")


def narrowing_table(evidence: Mapping[str, Any], outcome: str = "success", *,
                    ks=ENCODER_COUNTS, n_boot: int = 1000, n_subsets: int = 20) -> pd.DataFrame:
    """Scores x encoder counts: ``task-gap width / combined width (n cells)`` when every
    task-gap keeps ``k`` of its image encoders (:mod:`s2r.evidence.narrowing`; the
    per-task-gap width is the median encoder-bootstrap interval's, the combined the median
    hierarchical interval's); scores in the evidence's order, columns ``k = 5`` ... and
    ``all``."""
    table: dict = {}
    titles = catalogue.titles()
    for row in evidence_narrowing(evidence, outcome, ks=ks, n_boot=n_boot,
                                  n_subsets=n_subsets):
        column = "all" if row["k"] == ALL else f"k = {row['k']}"
        table.setdefault(titles.get(row["score"], row["score"]), {})[column] = _widths(row)
    return pd.DataFrame.from_dict(table, orient="index").rename_axis("score")


def difference_table(evidence: Mapping[str, Any], leader: str,
                     outcomes=("success", "progress")) -> pd.DataFrame:
    """Each other score x outcome: ``leader``'s mean Spearman minus that score's over the
    task-gaps both have, ``+0.12 [-0.05, +0.30] not told apart (18 task-gaps)``
    (:func:`s2r.evidence.compare.score_differences`: a paired bootstrap)."""
    from s2r.evidence.compare import score_differences

    titles = catalogue.titles()
    table: dict = {}
    for outcome in outcomes:
        for d in score_differences(evidence, leader, outcome=outcome):
            text = "undefined" if d["verdict"] is None else (
                f"{d['mean_difference']:+.2f} [{d['ci_low']:+.2f}, {d['ci_high']:+.2f}] "
                f"{d['verdict']} ({d['n_task_gaps']} task-gaps)")
            table.setdefault(titles.get(d["b"], d["b"]), {})[f"real {outcome}"] = text
    return pd.DataFrame.from_dict(table, orient="index").rename_axis(
        f"{titles.get(leader, leader)} minus")


def markdown(table: pd.DataFrame) -> str:
    """``table`` as a Markdown pipe table, the index first (what the docs' tables are)."""
    header = [table.index.name or "", *map(str, table.columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, row in table.iterrows():
        lines.append("| " + " | ".join([str(name), *(str(v) for v in row)]) + " |")
    return "\n".join(lines) + "\n"


def _slots(evidence: Mapping[str, Any], outcome: str) -> list:
    """The places of a score's band, top to bottom: the task-gaps of shift ``all``, then each
    kind of shift's (the evidence's order), each by task and gap; the combined estimate
    last."""
    rows = evidence_rows(evidence, outcome).dropna(subset=["spearman"])
    kinds = evidence_shifts(evidence)
    rows = rows.assign(kind=[kinds.index(k) if k in kinds else len(kinds)
                             for k in rows["shift"]])
    ordered = rows.sort_values(["kind", "task", "gap"], kind="stable")
    return [*dict.fromkeys(ordered["place"]), COMBINED]


def forest_height(evidence: Mapping[str, Any], outcome: str = "success", *,
                  per_slot: float = FOREST_STEP, least: float = 170) -> float:
    """The forest plot's height (pixels): ``per_slot`` for each line a score's band holds
    (every task-gap with a rho, and the combined estimate) times the scores, at least
    ``least``; it grows with the task-gaps, so 18 of them read as well as 7."""
    n_scores = len({c["score"] for c in evidence["combined"] if c["outcome"] == outcome}
                   | set(evidence_rows(evidence, outcome)["score"]))
    return max(least, per_slot * len(_slots(evidence, outcome)) * n_scores)


def forest_plot(evidence: Mapping[str, Any], outcome: str = "success") -> alt.LayerChart:
    """A band per score: its Spearman with real ``outcome`` at each task-gap (a point with its
    95% interval, one colour per task, one shape per kind of shift; the tasks at their full
    shift first, then each kind of shift alone) and the combined estimate last, on a line of
    its own (a black diamond with its interval); a dashed rule at rho = 0 marks chance. The
    height grows with the task-gaps (:func:`forest_height`)."""
    rows = evidence_rows(evidence, outcome).dropna(subset=["spearman"])
    combined = pd.DataFrame([{"title": catalogue.titles().get(s, s), "spearman": c["mean_rho"],
                              "low": c["ci_low"], "high": c["ci_high"], "label": c["label"],
                              "place": COMBINED}
                             for s, c in _combined(evidence, outcome).items()
                             if c["mean_rho"] is not None])
    order = [catalogue.titles().get(s, s) for s in evidence["scores"]]
    y = alt.Y("title:N", sort=order, title=None, scale=alt.Scale(paddingInner=0.15),
              axis=alt.Axis(labelLimit=LABEL_LIMIT))   # a score's whole title, never cut
    y_off = alt.YOffset("place:N", title=None, sort=_slots(evidence, outcome))
    x = alt.X("spearman:Q", scale=alt.Scale(domain=[-1, 1]),
              title=f"Spearman rho with real {outcome} over the image encoders")
    task = alt.Color("task:N", title="task", scale=alt.Scale(scheme=TASK_COLOURS))
    shift = alt.Shape("shift:N", title="kind of shift",
                      sort=[k for k in evidence_shifts(evidence) if k in set(rows["shift"])])
    tips = ["title:N", "place:N", alt.Tooltip("spearman:Q", format="+.2f"),
            alt.Tooltip("low:Q", format="+.2f"), alt.Tooltip("high:Q", format="+.2f")]
    base = alt.Chart(rows)
    bars = base.mark_rule(opacity=0.9, strokeWidth=1.5).encode(
        y=y, yOffset=y_off, x="low:Q", x2="high:Q", color=task)
    points = base.mark_point(filled=True, size=70).encode(
        y=y, yOffset=y_off, x=x, color=task, shape=shift,
        tooltip=[*tips, "n_ranked:Q", "n_tied:Q", "verdict:N"])
    chance = alt.Chart(pd.DataFrame({"spearman": [0.0], "what": ["chance (rho = 0)"]})).mark_rule(
        strokeDash=[4, 3], color="#555").encode(x="spearman:Q", tooltip=["what:N"])
    layers = [chance, bars, points]
    if len(combined):
        c = alt.Chart(combined)
        # black on a white halo: black on a light theme, its halo outlines it on a dark one
        layers += [c.mark_rule(color="white", strokeWidth=5, opacity=0.8).encode(
                       y=y, yOffset=y_off, x="low:Q", x2="high:Q"),
                   c.mark_rule(color="black", strokeWidth=2.5).encode(
                       y=y, yOffset=y_off, x="low:Q", x2="high:Q"),
                   c.mark_point(shape="diamond", filled=True, size=140, color="black",
                                stroke="white", strokeWidth=1.5, opacity=1).encode(
                       y=y, yOffset=y_off, x=x, tooltip=[*tips, "label:N"])]
    return alt.layer(*layers).properties(
        title=alt.TitleParams(f"Which score ranked encoders as deployment did (real {outcome})",
                              subtitle="each task-gap with its 95% interval; black diamond: "
                                       "combined estimate (mean rho, hierarchical bootstrap)"),
        width=520, height=forest_height(evidence, outcome))
