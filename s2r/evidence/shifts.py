"""The combined estimate of each kind of shift: which score ranked the image encoders as
deployment did under lighting alone, texture alone, the camera alone, distractors alone.

The evidence's own ``combined`` entry of a score is the mean Spearman over every real-look
task-gap, whatever its kind of shift. :func:`combined_by_shift` is the same estimate
(:func:`~s2r.evidence.combine.combined_row`: the mean rho and its hierarchical bootstrap
interval over task-gaps and encoders) over the task-gaps of one kind of shift at a time, drawn
with the evidence's own bootstrap replicates and seed; an evidence of one kind of shift gives
its ``combined`` entries again.
"""

from __future__ import annotations

from typing import Any, Mapping

from s2r.evidence.build import combined_stream, is_real_look, real_look_task_gaps
from s2r.evidence.combine import combined_row

__all__ = ["combined_by_shift", "evidence_shifts"]


def evidence_shifts(evidence: Mapping[str, Any]) -> list:
    """The kinds of shift of the evidence's real-look rows, in the rows' order
    (``["all", "lighting", ...]``)."""
    return list(dict.fromkeys(r["shift"] for r in evidence["rows"] if is_real_look(r["gap"])))


def combined_by_shift(evidence: Mapping[str, Any], outcome: str = "success") -> list:
    """Per kind of shift and score, the combined estimate over that kind's real looks.

    Parameters
    ----------
    evidence : mapping
        A checked evidence document (:func:`~s2r.evidence.read_evidence`).
    outcome : str
        ``"success"`` or ``"progress"``.

    Returns
    -------
    list of dict
        One per kind of shift (:func:`evidence_shifts`' order) and score with a real look
        there (the evidence's order): :func:`~s2r.evidence.combine.combined_row`'s fields and
        ``shift``. Each draws the stream of the evidence's own combined entry
        (:func:`~s2r.evidence.build.combined_stream`, the evidence's ``bootstrap`` seed and
        ``n_boot``).
    """
    task_gaps = real_look_task_gaps(evidence["rows"], evidence["cells"])
    boot = evidence["bootstrap"]
    out = []
    for shift in evidence_shifts(evidence):
        for score in evidence["scores"]:
            mine = [t for t in task_gaps.get((score, outcome), ()) if t["key"][2] == shift]
            if mine:
                out.append({"shift": shift, **combined_row(
                    score, outcome, mine, n_boot=boot["n_boot"],
                    rng=combined_stream(boot["seed"], score, outcome))})
    return out
