"""Metrics: pure functions of ``(Z (N, D), domain (N,), actions (N, A), episode (N,))``.

- :mod:`.dis` -- domain invariance score (the paper's eq. 1, PCA + min-max + centroids);
- :mod:`.probes` -- action probe (eq. 2) train / held-out / transfer scores, domain probe,
  the paper's Adam protocol as an option;
- :mod:`.bootstrap` -- stratified episode bootstrap and percentile intervals;
- :mod:`.scoring` -- :func:`score_embeddings` (one record with every score and its interval),
  the Sim2Real score, and the encoder/dataset wrappers (cached);
- :mod:`.leaderboard` -- records as tables, JSON/CSV files, merging runs.

Every entry validates its inputs with one checker and raises
:class:`s2r.errors.MetricError` naming the problem.
"""

from s2r.metrics.bootstrap import (  # noqa: F401
    DEFAULT_CI, DEFAULT_N_BOOT, bootstrap_ci, group_bootstrap_weights, percentile_ci)
from s2r.metrics.dis import (  # noqa: F401
    DEFAULT_PCA_DIM, DISResult, dis_from_centroids, domain_invariance_score, fit_dis_space)
from s2r.metrics.probes import (  # noqa: F401
    ALPHA_GRID, DEFAULT_RIDGE_ALPHA, ActionProbe, ActionScoreResult, AlphaSelection,
    DomainProbe, DomainProbeResult, Folds, action_score, domain_probe_accuracy, episode_folds,
    heldout_action_score, select_ridge_alpha, transfer_score)
from s2r.metrics.scoring import (  # noqa: F401
    SCORE_KEYS, SCORE_VERSION, ScoreParams, score_embeddings, score_encoder, score_encoders,
    sim2real_score)

__all__ = [
    "DEFAULT_CI", "DEFAULT_N_BOOT", "bootstrap_ci", "group_bootstrap_weights", "percentile_ci",
    "DEFAULT_PCA_DIM", "DISResult", "dis_from_centroids", "domain_invariance_score",
    "fit_dis_space", "ALPHA_GRID", "DEFAULT_RIDGE_ALPHA", "ActionProbe", "ActionScoreResult",
    "AlphaSelection", "DomainProbe", "DomainProbeResult", "Folds", "action_score",
    "domain_probe_accuracy", "episode_folds", "heldout_action_score", "select_ridge_alpha",
    "transfer_score", "SCORE_KEYS", "SCORE_VERSION", "ScoreParams", "score_embeddings",
    "score_encoder", "score_encoders", "sim2real_score",
]
