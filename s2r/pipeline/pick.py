"""Which encoder should I pick? The leader on the score the evidence trusts most, and how sure.

:func:`pick_encoder` joins the two confidences a reader needs:

- **the score**: which score to rank by is the evidence's answer
  (:func:`s2r.evidence.strongest_score`: the strongest record of ranking encoders as
  closed-loop deployment did), with that record's phrase;
- **the encoders**: the leader on that score, and whether the data resolve it from the
  runner-up (:mod:`s2r.metrics.pairwise`: ``P(leader beats runner-up)`` over paired
  episode-bootstrap replicates; resolved when the paired difference's 95% interval excludes
  0).

and says what would change the answer: more frames or episodes where the leader is not
resolved, the other score's leader where the evidence does not single the score out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Mapping, Optional, Sequence

from s2r.errors import MetricError
from s2r.evidence import Choice, strongest_score
from s2r.metrics import catalogue, pairwise
from s2r.metrics.bootstrap import DEFAULT_CI

__all__ = ["PICK_TITLE", "Pick", "pick_encoder", "leader_on", "reference_ids", "world_of"]

#: The heading of the answer (CLI block, Scores page box).
PICK_TITLE = "Which encoder should I pick?"


@dataclass(frozen=True)
class Pick:
    """The answer of :func:`pick_encoder`.

    ``encoder`` (label of the leader on ``choice.score``; None when no encoder holds a value
    of it) and its ``estimate``; ``runner_up`` (the next encoder on that score) and
    ``p_beats_runner_up``; ``resolved`` (True/False; None when there are no paired
    replicates to tell); ``n_encoders`` ranked and ``n_frames`` scored; ``other_leader``:
    ``(score, encoder)``, the leader on the runner-up score when the evidence does not single
    the chosen score out; ``changes``: what would change the answer, one phrase each.
    """

    encoder: Optional[str]
    estimate: Optional[float]
    choice: Choice
    runner_up: Optional[str]
    p_beats_runner_up: Optional[float]
    resolved: Optional[bool]
    n_encoders: int
    n_frames: Optional[int]
    other_leader: Optional[tuple[str, Optional[str]]]
    changes: tuple[str, ...]

    @property
    def score(self) -> str:
        """The score the pick is ranked by."""
        return self.choice.score

    def headline(self) -> str:
        """``efficientnet-lite0, the leader on the Held-out skill (0.412), resolved from
        pixels``."""
        title = catalogue.get(self.score).title
        if self.encoder is None:
            return f"no encoder holds a value of the {title}: nothing to pick"
        head = f"{self.encoder}, the leader on the {title} ({self.estimate:.3f})"
        if self.runner_up is None:
            return f"{head}, the only encoder ranked"
        if self.resolved is None:
            return f"{head}; no paired replicates to tell it from {self.runner_up}"
        p = f"P(beats {self.runner_up}) = {self.p_beats_runner_up:.2f}"
        return f"{head}, {'resolved' if self.resolved else 'not resolved'} from " \
               f"{self.runner_up} at 95% ({p})"

    def rests_on(self) -> str:
        """What the pick rests on: the score's record and the data scored."""
        frames = "" if self.n_frames is None else f", {self.n_frames:,} frames"
        return (f"rests on: the {catalogue.get(self.score).title}, which "
                f"{self.choice.record.phrase}; {self.n_encoders} encoders{frames}")

    def lines(self) -> list[str]:
        """The block ``s2r score`` prints at its end: a heading, the pick, what it rests on
        and what would change it."""
        out = [PICK_TITLE, f"  {self.headline()}", f"  {self.rests_on()}"]
        out += [f"  would change it: {c}" for c in self.changes]
        return out


def leader_on(records: Sequence[dict], key: str) -> tuple:
    """``(label, estimate)`` of the best record on ``key`` (the catalogue's direction;
    the earlier record on a tie), ``(None, None)`` when none holds a value of it."""
    sign = pairwise.better_sign(key)
    held = [(pairwise.record_label(r), float(r[key])) for r in records
            if r.get(key) is not None]
    if not held:
        return None, None
    return max(held, key=lambda row: sign * row[1])


def _second(records: Sequence[dict], key: str, leader: str) -> Optional[str]:
    sign = pairwise.better_sign(key)
    rest = [r for r in records if r.get(key) is not None and pairwise.record_label(r) != leader]
    return pairwise.record_label(max(rest, key=lambda r: sign * float(r[key]))) if rest else None


def _comparison(records: Sequence[dict], key: str, a: str, b: str) -> Optional[dict]:
    """The pairwise row of ``a`` against ``b`` on ``key``, or None without paired
    replicates."""
    try:
        rows = pairwise.pairwise_comparisons(records, [key], ci=DEFAULT_CI)
    except MetricError:
        return None
    return next((r for r in rows if r["encoder_a"] == a and r["encoder_b"] == b), None)


def _frames(records: Sequence[dict]) -> Optional[int]:
    counts = (records[0].get("n_frames") or {}) if records else {}
    values = [v for v in counts.values() if isinstance(v, int)] if isinstance(counts,
                                                                              dict) else []
    return sum(values) if values else None


def pick_encoder(records: Sequence[dict], evidence: Mapping, *, world: Optional[str] = None,
                 n_frames: Optional[int] = None, reference: Collection[str] = ()) -> Pick:
    """Which encoder to pick, on the score the evidence trusts most.

    Parameters
    ----------
    records : sequence of dict
        Score records of one dataset and parameters (:func:`s2r.pipeline.score_encoders`).
    evidence : mapping
        The evidence in effect (:func:`s2r.evidence.evidence_in_effect`).
    world : str, optional
        The dataset's world (``"demo"``, ``"metaworld"``): that world's records in the
        evidence where it has rows of it.
    n_frames : int, optional
        Frames scored (default: the records' ``n_frames``, summed over the domains).
    reference : collection of str
        Encoder ids ranked beside the others but never picked (the robot-state reference:
        it is the action scores' ceiling, not a candidate).

    Returns
    -------
    Pick
    """
    choice = strongest_score(evidence, world=world)
    ranked = [r for r in records if str(r["encoder"]["id"]) not in set(reference)]
    key = choice.score
    leader, estimate = leader_on(ranked, key)
    second = _second(ranked, key, leader) if leader is not None else None
    row = _comparison(ranked, key, leader, second) if second is not None else None
    resolved = None if row is None else bool(row["resolved"])
    changes = []
    if second is None and leader is not None:
        changes.append("score more encoders: one alone is not ranked")
    elif resolved is False:
        changes.append(f"not resolved from {second}: more frames or episodes would tell them "
                       "apart (or not)")
    elif resolved is None and second is not None:
        changes.append("score with bootstrap intervals (--n-boot > 0) to tell the leader from "
                       f"{second}")
    other = None
    if not choice.singled_out and choice.runner_up is not None:
        other = (choice.runner_up, leader_on(ranked, choice.runner_up)[0])
        title = catalogue.get(choice.runner_up).title
        same = " too" if other[1] == leader else ""
        changes.append(f"the evidence does not single out the {catalogue.get(key).title}: the "
                       f"leader on the {title} is {other[1] or 'none'}{same}")
    return Pick(leader, estimate, choice, second,
                None if row is None else float(row["p_a_beats_b"]), resolved,
                sum(r.get(key) is not None for r in ranked),
                n_frames if n_frames is not None else _frames(ranked), other, tuple(changes))


def world_of(frameset) -> Optional[str]:
    """The world a FrameSet was drawn in (``"demo"``, ``"metaworld"``: its source's
    ``kind`` when that names a world), else None (your own data)."""
    from s2r.worlds import WORLDS

    source = getattr(frameset, "source", None)
    kind = source.get("kind") if isinstance(source, dict) else None
    return kind if kind in WORLDS else None


def reference_ids(ids: Sequence[str], settings) -> list[str]:
    """The encoders of ``ids`` without an image model (the robot-state reference): ranked
    beside the others, never picked."""
    from s2r.encoders import get_spec

    return [i for i in ids if not get_spec(i, settings=settings).has_image_model]
