"""Linear probes on frozen embeddings, in one place: the action probe and the domain probe.

- :mod:`s2r.metrics.action_probe` -- :class:`ActionProbe` (eq. 2: embeddings to the full,
  z-scored action vector; closed-form ridge, or the paper's Adam protocol from
  :mod:`s2r.metrics.adam`) and :func:`action_score`, the paper's training AS;
- :mod:`s2r.metrics.domain_probe` -- :class:`DomainProbe`, sim vs real;
- :mod:`s2r.metrics.results` -- what the probe scores return.

The cross-validated scores built from these probes (held-out, transfer, their floors, the
domain probe's held-out accuracy and separability) live in :mod:`s2r.metrics.crossval`.
"""

from s2r.metrics.action_probe import (  # noqa: F401
    ALPHA_GRID, DEFAULT_PROBE_ALPHA, DEFAULT_RIDGE_ALPHA, PAPER_TRAIN_ALPHA, SOLVERS,
    ActionProbe, action_score)
from s2r.metrics.adam import (  # noqa: F401
    PAPER_BATCH_SIZE, PAPER_EPOCHS, PAPER_LR, PAPER_SCORE_LAST)
from s2r.metrics.domain_probe import DEFAULT_DOMAIN_C, DomainProbe  # noqa: F401
from s2r.metrics.results import ActionScoreResult, DomainProbeResult  # noqa: F401

__all__ = [
    "ALPHA_GRID", "DEFAULT_PROBE_ALPHA", "DEFAULT_RIDGE_ALPHA", "PAPER_TRAIN_ALPHA", "SOLVERS",
    "ActionProbe", "action_score", "PAPER_BATCH_SIZE", "PAPER_EPOCHS", "PAPER_LR",
    "PAPER_SCORE_LAST", "DEFAULT_DOMAIN_C", "DomainProbe", "ActionScoreResult",
    "DomainProbeResult",
]
