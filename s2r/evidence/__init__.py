"""The evidence table: validation reports as data.

Every ``python -m s2r validate`` report says, for one world's task at a few gaps, how well
each score ranked the image encoders as closed-loop deployment did. The evidence table puts
many reports side by side: one row per score, world, task, shift, gap and outcome (the
report's own Spearman rho and interval, how many encoders it ranked, how many shared a score
value, the verdict), and per score the combined estimate over every real look (the mean rho
with a hierarchical bootstrap interval over task-gaps and encoders). docs/evidence.md is the
schema.

- :func:`build_evidence` (reports in, document out), :func:`situation_of`;
- :func:`read_evidence` (the one reader of a file), :func:`check_evidence`,
  :data:`EVIDENCE_VERSION`;
- :func:`verdict_of` / :func:`correlation_verdict` (the one place a verdict is decided);
- :func:`shipped_evidence`, :func:`evidence_in_effect` (the user's ``S2R_EVIDENCE``, else
  the shipped file with the reports you added: :mod:`s2r.evidence.mine`),
  :func:`evidence_label` (which, in words);
- :func:`score_record` (a score's :class:`Record`: its numbers and its phrase),
  :func:`strongest_score` (which score to trust: a :class:`Choice`) and
  :func:`default_score` (the one place a default score is written).
"""

from s2r.evidence.build import build_evidence, evidence_scores, is_real_look
from s2r.evidence.choice import TIE_LIMIT, Choice, default_score, strongest_score
from s2r.evidence.effect import evidence_in_effect, evidence_label, evidence_source
from s2r.evidence.published import shipped_evidence
from s2r.evidence.record import Record, score_record
from s2r.evidence.schema import (EVIDENCE_VERSION, MAX_EVIDENCE_BYTES, MAX_EVIDENCE_ROWS,
                                 check_evidence, read_evidence)
from s2r.evidence.situation import REAL_WORLD, situation_of
from s2r.evidence.verdicts import VERDICTS, correlation_verdict, verdict_of

__all__ = ["EVIDENCE_VERSION", "MAX_EVIDENCE_BYTES", "MAX_EVIDENCE_ROWS", "REAL_WORLD",
           "TIE_LIMIT", "VERDICTS", "Choice", "Record", "build_evidence", "check_evidence",
           "correlation_verdict", "default_score", "evidence_in_effect", "evidence_label",
           "evidence_scores",
           "evidence_source", "is_real_look", "read_evidence", "score_record",
           "shipped_evidence", "situation_of", "strongest_score", "verdict_of"]
