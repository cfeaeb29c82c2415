"""Which score to trust: the one with the strongest record in the evidence, and every default
score of the product read from it.

**The rule** (:func:`strongest_score`). Among the candidate scores (the catalogue's ranked,
validated scores: those a reader ranks encoders by), the one whose record's interval has the
highest lower bound wins: the score the evidence most surely says ranks encoders as
deployment did. Two kinds of candidates are left out first:

- a score without a record (no defined rho with an interval at the scope);
- a score that leaves most encoders tied: the median, over its real-look rows, of
  ``n_tied / n_ranked`` above :data:`TIE_LIMIT` (0.5). The Sim2Real score is clipped to 0
  for most encoders at large gaps; its rho then orders two or three encoders, whatever the
  rest do, and it would pick an encoder among tied ones by chance.

The winner is **singled out** when its interval's lower bound is above 0 and above the
runner-up's mean rho: the evidence then says it ranks better than the next score on average.
Otherwise the two best-recorded scores cannot be told apart, and a reader is shown the
leaders of both.

**Default scores** (:func:`default_score`) are written only here: every page, command and
chart asks this function which score it opens on, so the evidence, not a literal, decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from s2r.evidence.record import Record, score_record
from s2r.metrics import catalogue

__all__ = ["TIE_LIMIT", "DEFAULT_VIEWS", "PAPER_X", "PAPER_Y", "Choice", "candidate_scores",
           "strongest_score", "default_score"]

#: Largest median share of tied encoders a chosen score may leave.
TIE_LIMIT = 0.5
#: The views :func:`default_score` answers: ``ranking`` (what encoders are sorted and picked
#: by), ``y`` (the score scatter's action score), ``x`` (its x axis: the paper's DIS) and
#: ``validation`` (the Validation pages' score axis).
DEFAULT_VIEWS = ("ranking", "y", "x", "validation")
#: The paper's x axis (its Fig. 5: DIS against the action score).
PAPER_X = "dis"
#: The paper's y axis of its Fig. 5: the transfer skill (a chart of DIS against another
#: action score is not the paper's figure).
PAPER_Y = "transfer_score_skill"


@dataclass(frozen=True)
class Choice:
    """The score to pick encoders by (:func:`strongest_score`).

    ``score`` and its ``record``; ``runner_up`` (the next-best recorded score, or None) and
    its record; ``singled_out`` (the rule in the module docstring); ``tie_heavy``: the
    candidates left out because they leave most encoders tied.
    """

    score: str
    record: Record
    runner_up: Optional[str]
    runner_up_record: Optional[Record]
    singled_out: bool
    tie_heavy: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """Why this score, in a line or two."""
        title = catalogue.titles()
        out = [f"{title[self.score]} {self.record.phrase}"]
        if self.runner_up is not None and not self.singled_out:
            out.append(f"the evidence does not single it out from {title[self.runner_up]}, "
                       f"which {self.runner_up_record.phrase}")
        for key in self.tie_heavy:
            out.append(f"{title[key]} left out: it leaves most encoders tied")
        return out


def candidate_scores(view: str = "ranking") -> list[str]:
    """The scores :func:`strongest_score` chooses among for ``view``: the catalogue's ranked,
    validated scores (``ranking``, ``validation``), of them the action scores (``y``). The
    raw action scores rank encoders exactly as their skills do on one dataset (the same
    floor and ceiling for every encoder), so the skill stands for both."""
    if view not in ("ranking", "validation", "y"):
        raise ValueError(f"unknown view {view!r}; expected one of {DEFAULT_VIEWS}")
    ranked = set(catalogue.ranked_keys())
    keys = [k for k in catalogue.keys("validation") if k in ranked]
    return [k for k in keys if k in catalogue.keys("y")] if view == "y" else keys


def _strength(r: Record) -> tuple:
    return (r.ci_low, r.mean_rho)


def strongest_score(evidence: Mapping, *, world: Optional[str] = None,
                    outcome: str = "success",
                    candidates: Optional[Sequence[str]] = None) -> Choice:
    """The score with the strongest record in ``evidence`` (the module docstring's rule).

    Parameters
    ----------
    evidence : mapping
        A checked evidence document (:func:`s2r.evidence.read_evidence`).
    world : str, optional
        The user's world: records of that world where the evidence has its rows
        (:func:`s2r.evidence.record.record_scope`).
    outcome : str
    candidates : sequence of str, optional
        The scores to choose among, in the catalogue's order (default
        :func:`candidate_scores`); ties of strength go to the earlier one.

    Returns
    -------
    Choice
        Where no candidate has a usable record, the first candidate, not singled out.
    """
    keys = list(candidates if candidates is not None else candidate_scores())
    records = {k: score_record(evidence, k, outcome=outcome, world=world) for k in keys}
    tie_heavy = tuple(k for k, r in records.items() if r.validated
                      and r.tied_share is not None and r.tied_share > TIE_LIMIT)
    usable = sorted((k for k, r in records.items() if r.validated and k not in tie_heavy),
                    key=lambda k: _strength(records[k]), reverse=True)   # stable: catalogue order
    if not usable:
        return Choice(keys[0], records[keys[0]], None, None, False, tie_heavy)
    best, rest = usable[0], usable[1:]
    runner = rest[0] if rest else None
    lead = records[best]
    singled = lead.ci_low > 0 and (runner is None or lead.ci_low > records[runner].mean_rho)
    return Choice(best, lead, runner, records[runner] if runner else None, singled, tie_heavy)


def default_score(view: str, evidence: Optional[Mapping] = None, *,
                  world: Optional[str] = None) -> str:
    """The score a table, chart or command opens on (the only place a default is written).

    Parameters
    ----------
    view : str
        ``"ranking"`` and ``"validation"``: the score with the strongest record
        (:func:`strongest_score`); ``"y"``: the action score with the strongest record;
        ``"x"``: the paper's DIS (its Fig. 5 stays one click away).
    evidence : mapping, optional
        The evidence in effect (:func:`s2r.evidence.evidence_in_effect`); default: the
        evidence shipped with s2r.
    world : str, optional
        The user's world (:func:`strongest_score`).
    """
    if view == "x":
        return PAPER_X
    if evidence is None:
        from s2r.evidence.published import shipped_evidence

        evidence = shipped_evidence()
    return strongest_score(evidence, world=world, candidates=candidate_scores(view)).score
