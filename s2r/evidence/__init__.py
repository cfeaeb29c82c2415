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
- :func:`verdict_of` / :func:`correlation_verdict` (the one place a verdict is decided).
"""

from s2r.evidence.build import build_evidence, evidence_scores, is_real_look
from s2r.evidence.schema import (EVIDENCE_VERSION, MAX_EVIDENCE_BYTES, MAX_EVIDENCE_ROWS,
                                 check_evidence, read_evidence)
from s2r.evidence.situation import REAL_WORLD, situation_of
from s2r.evidence.verdicts import VERDICTS, correlation_verdict, verdict_of

__all__ = ["EVIDENCE_VERSION", "MAX_EVIDENCE_BYTES", "MAX_EVIDENCE_ROWS", "REAL_WORLD",
           "VERDICTS", "build_evidence", "check_evidence", "correlation_verdict",
           "evidence_scores", "is_real_look", "read_evidence", "situation_of", "verdict_of"]
