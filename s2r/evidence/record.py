"""A score's record: what the evidence says of one score, as numbers and in one phrase.

The record of a score is read from an evidence document (docs/evidence.md) at one scope:

- ``"combined"``: the evidence's own ``combined`` entry (every world's real looks);
- a world (``"metaworld"``, ``"demo"``, ...): where the evidence holds real-look rows of the
  user's world, the mean Spearman of that world's real-look rows only, with the same
  hierarchical interval over its task-gaps and encoders recomputed from the evidence's cells
  (:func:`s2r.evidence.combine.combined_row`), so a user of Meta-World reads Meta-World's
  record, not one diluted by another world (where every real-look row of the score is that
  world's, the combined estimate is that world's, and is read as it is).

Besides the mean rho and its interval, a record keeps the share of encoders its rows leave
tied (``tied_share``, the median over its real-look rows of ``n_tied / n_ranked``): a score
clipped to its floor at large gaps (the Sim2Real score) ranks fewer encoders than it seems.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Mapping, Optional

import numpy as np

from s2r.evidence.build import is_real_look
from s2r.evidence.cells import OUTCOMES, ranked_pairs
from s2r.evidence.combine import combined_row
from s2r.evidence.verdicts import UNDEFINED
from s2r.metrics import catalogue

__all__ = ["COMBINED", "Record", "record_scope", "score_record"]

#: The scope of a record read from the evidence's combined estimate.
COMBINED = "combined"


@dataclass(frozen=True)
class Record:
    """What the evidence says of one score, for one outcome, at one scope.

    ``mean_rho``, ``ci_low``, ``ci_high`` are None where no real-look row has a rho;
    ``tied_share`` is None where the score has no real-look row at all.
    """

    score: str
    outcome: str
    scope: str
    mean_rho: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    n_task_gaps: int
    n_rows: int
    n_above_chance: int
    tied_share: Optional[float]
    verdict: str

    @property
    def validated(self) -> bool:
        """Whether the evidence gives this score a mean rho with an interval."""
        return self.mean_rho is not None and self.ci_low is not None

    @property
    def where(self) -> str:
        """What the rho is, in words: ``combined rho`` or ``rho over metaworld only``."""
        return f"{COMBINED} rho" if self.scope == COMBINED else f"rho over {self.scope} only"

    @property
    def phrase(self) -> str:
        """The record in one phrase: ``ranked encoders as deployment did in 3 of 8 task-gaps
        (combined rho +0.71 [+0.40, +0.88])`` (``... did at none of 7 task-gaps (...)``);
        ``never validated against closed-loop success`` for a score the evidence holds no
        defined rho of."""
        if not self.validated:
            return f"never validated against closed-loop {self.outcome}" + (
                f" ({self.n_rows} task-gaps measured, the rho undefined at every one)"
                if self.n_rows else "")
        numbers = f"({self.where} {self.mean_rho:+.2f} [{self.ci_low:+.2f}, {self.ci_high:+.2f}])"
        if not self.n_above_chance:
            return (f"ranked encoders as deployment did at none of {self.n_rows} task-gaps "
                    f"{numbers}")
        return (f"ranked encoders as deployment did in {self.n_above_chance} of {self.n_rows} "
                f"task-gaps {numbers}")

    @property
    def short(self) -> str:
        """The record in a few words, for a tooltip or a column's help: ``rho +0.61 [+0.31,
        +0.79], above chance at 1 of 7 task-gaps``; ``never validated``."""
        if not self.validated:
            return "never validated"
        return (f"rho {self.mean_rho:+.2f} [{self.ci_low:+.2f}, {self.ci_high:+.2f}], "
                f"above chance at {self.n_above_chance} of {self.n_rows} "
                "task-gaps")


def _real_rows(evidence: Mapping, score: Optional[str], outcome: str,
               world: Optional[str]) -> list:
    """The evidence's real-look rows of ``score`` (any score when None) and ``outcome``, of
    ``world`` (any world when None)."""
    return [r for r in evidence["rows"] if is_real_look(r["gap"]) and r["outcome"] == outcome
            and (score is None or r["score"] == score) and (world is None or r["world"] == world)]


def record_scope(evidence: Mapping, world: Optional[str] = None, outcome: str = "success") -> str:
    """``world`` when the evidence holds real-look rows of it for ``outcome``, else
    :data:`COMBINED`: one scope for every score, so their records compare."""
    if world is not None and world != COMBINED and _real_rows(evidence, None, outcome, world):
        return world
    return COMBINED


def _tied_share(rows: list) -> Optional[float]:
    """Median of ``n_tied / n_ranked`` over ``rows`` that ranked any encoder."""
    shares = [r["n_tied"] / r["n_ranked"] for r in rows if r["n_ranked"]]
    return float(np.median(shares)) if shares else None


def _world_estimate(evidence: Mapping, rows: list, score: str, outcome: str,
                    world: str) -> dict:
    """:func:`combined_row` over one world's real-look ``rows``, the encoders' values read
    from the evidence's cells; the seed is the evidence's, one stream per score, outcome and
    world (so the same evidence always gives the same interval)."""
    cells = {(c["report"], c["world"], c["task"], c["shift"], c["gap"]): c
             for c in evidence["cells"]}
    task_gaps = []
    for r in rows:
        cell = cells.get((r["report"], r["world"], r["task"], r["shift"], r["gap"]))
        x, y = ranked_pairs(cell, score, outcome) if cell else (np.zeros(0), np.zeros(0))
        defined = r["spearman"] is not None and x.size >= 3
        task_gaps.append({"key": (r["world"], r["task"], r["shift"], r["gap"]),
                          "world": r["world"], "spearman": r["spearman"] if defined else None,
                          "verdict": r["verdict"], "x": x, "y": y})
    boot = evidence["bootstrap"]
    keys = catalogue.keys()
    position = keys.index(score) if score in keys else len(keys)
    rng = np.random.default_rng([boot["seed"], position, OUTCOMES.index(outcome),
                                 zlib.crc32(world.encode())])
    return combined_row(score, outcome, task_gaps, n_boot=max(1, boot["n_boot"]), rng=rng)


def score_record(evidence: Mapping, score: str, *, outcome: str = "success",
                 world: Optional[str] = None) -> Record:
    """The record of ``score`` in ``evidence`` (a checked evidence document,
    :func:`s2r.evidence.read_evidence`).

    Parameters
    ----------
    evidence : mapping
    score : str
        A score key.
    outcome : str
        ``"success"`` or ``"progress"``.
    world : str, optional
        The user's world: when the evidence holds real-look rows of it
        (:func:`record_scope`), the record is that world's; else the combined one.

    Returns
    -------
    Record
        A score the evidence never correlated has no rho (``validated`` False).
    """
    scope = record_scope(evidence, world, outcome)
    rows = _real_rows(evidence, score, outcome, None if scope == COMBINED else scope)
    if scope == COMBINED or len(rows) == len(_real_rows(evidence, score, outcome, None)):
        row = next((c for c in evidence["combined"] if c["score"] == score
                    and c["outcome"] == outcome), None)
    else:       # the world's rows are some of the evidence's: their own estimate
        row = _world_estimate(evidence, rows, score, outcome, scope) if rows else None
    if row is None:
        return Record(score, outcome, scope, None, None, None, 0, 0, 0, None, UNDEFINED)
    return Record(score, outcome, scope, row["mean_rho"], row["ci_low"], row["ci_high"],
                  row["n_task_gaps"], row["n_rows"], row["n_above_chance"], _tied_share(rows),
                  row["verdict"])
