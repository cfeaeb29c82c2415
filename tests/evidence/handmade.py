"""Hand-made evidence documents whose answer is known: each cell's encoders, their success and
score values; each row's rho is computed from them; each score's combined estimate is given."""

from __future__ import annotations

import json
from pathlib import Path

from s2r.evidence import check_evidence, verdict_of
from s2r.evidence.cells import n_tied, spearman_rows

ENCODERS = ["a", "b", "c", "d", "e"]
SUCCESS = [0.1, 0.3, 0.5, 0.7, 0.9]
#: Score values that rank the five encoders as SUCCESS does (rho +1), against it (-1), and a
#: clipped score (four of five tied at 0).
UP, DOWN, TIED = [1, 2, 3, 4, 5], [5, 4, 3, 2, 1], [0, 0, 0, 0, 0.5]


def rho_of(values) -> float:
    return float(spearman_rows(values, SUCCESS)[0])


def make_evidence(cells: list, combined: dict) -> dict:
    """An evidence document (checked).

    cells : list of (world, task, gap, {score: values of the five encoders})
    combined : {score: (mean_rho, ci_low, ci_high)}
    """
    scores = list(combined)
    rows, out_cells = [], []
    for world, task, gap, values in cells:
        out_cells.append({"report": 0, "world": world, "task": task, "shift": "all", "gap": gap,
                          "encoders": ENCODERS, "outcomes": {"success": SUCCESS},
                          "scores": {k: values.get(k, [None] * 5) for k in scores}})
        for k, v in values.items():
            rho = rho_of(v)
            low, high = max(-1.0, rho - 0.3), min(1.0, rho + 0.3)
            rows.append({"report": 0, "score": k, "world": world, "task": task, "shift": "all",
                         "gap": gap, "outcome": "success", "spearman": rho,
                         "spearman_ci_low": low, "spearman_ci_high": high, "n_ranked": 5,
                         "n_tied": n_tied(v), "verdict": verdict_of(rho, low, high)})
    comb = []
    for k, (mean, low, high) in combined.items():
        mine = [r for r in rows if r["score"] == k and r["gap"] > 0]
        comb.append({"score": k, "outcome": "success", "mean_rho": mean, "ci_low": low,
                     "ci_high": high, "verdict": verdict_of(mean, low, high),
                     "n_task_gaps": len(mine), "n_rows": len(mine), "n_defined": len(mine),
                     "n_above_chance": sum(r["verdict"] == "above chance" for r in mine),
                     "worlds": sorted({r["world"] for r in mine}), "label": "hand-made"})
    doc = {"evidence_version": 1, "provenance": {"reports": [{"kind": "closed-loop"}]},
           "bootstrap": {"n_boot": 200, "seed": 0}, "scores": scores, "rows": rows,
           "combined": comb, "cells": out_cells}
    return check_evidence(doc, source="hand-made evidence")


def write_evidence(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def dis_strongest() -> dict:
    """Evidence where DIS has the strongest record, singled out; the transfer skill ranks
    against deployment; the held-out skill is weak but positive."""
    return make_evidence(
        [("metaworld", "hammer-v3", 0.5, {"dis": UP, "transfer_score_skill": DOWN,
                                         "action_score_heldout_skill": UP}),
         ("metaworld", "drawer-open-v3", 0.5, {"dis": UP, "transfer_score_skill": DOWN,
                                              "action_score_heldout_skill": DOWN})],
        {"dis": (0.9, 0.6, 1.0), "transfer_score_skill": (-0.8, -1.0, -0.5),
         "action_score_heldout_skill": (0.1, -0.4, 0.6)})
