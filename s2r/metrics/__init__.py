"""Metrics: pure functions of ``(Z (N, D), domain (N,), actions (N, A), episode (N,))``.

- :mod:`.validation` -- the one input check of every entry point;
- :mod:`.dis` -- domain invariance score (the paper's eq. 1, PCA + min-max + centroids);
- :mod:`.folds` -- episode-grouped, domain-stratified cross-validation folds;
- :mod:`.action_probe` -- the action probe (eq. 2, closed-form ridge, or the paper's Adam
  protocol from :mod:`.adam`) and the training AS; :mod:`.domain_probe` -- the domain probe;
  :mod:`.probes` gathers both; :mod:`.results` -- what the probe scores return;
- :mod:`.probe_data` -- per-episode statistics computed once per embedding matrix (penalty
  selection, per-episode test errors, out-of-fold domain-probe outputs), on the closed-form
  ridge engine of :mod:`._moments`;
- :mod:`.crossval` -- held-out and transfer scores with their floors, nested penalty
  selection, the domain probe's held-out accuracy and separability;
- :mod:`.baselines` -- floors, ceilings, skills, the Sim2Real score, estimability;
- :mod:`.retrieval` -- paired retrieval of a sim frame's real partner;
- :mod:`.bootstrap` -- stratified episode bootstrap and BCa intervals;
- :mod:`.pairwise` -- P(encoder A beats B) from paired replicates, resolved groups;
- :mod:`.params` -- :class:`ScoreParams`, the settings of a record, and the null control;
- :mod:`.scoring` -- :func:`score_embeddings` (one record with every score, its floor,
  ceiling and interval);
- :mod:`.leaderboard` -- records as tables, JSON/CSV files, merging runs.

Every entry validates its inputs with one checker (:mod:`.validation`) and raises
:class:`s2r.errors.MetricError` naming the problem. Nothing here embeds, reads the encoder
registry or the cache: scoring encoders on a FrameSet is :mod:`s2r.pipeline`'s job.
"""

from s2r.metrics.action_probe import (
    ALPHA_GRID, DEFAULT_RIDGE_ALPHA, PAPER_TRAIN_ALPHA, ActionProbe, action_score)
from s2r.metrics.baselines import (
    MIN_CEILING_GAIN, MIN_EPISODES, SIM2REAL_FORMULA, sim2real_score, skill)
from s2r.metrics.bootstrap import (
    DEFAULT_CI, DEFAULT_N_BOOT, bca_interval, bootstrap_ci, group_bootstrap_weights,
    percentile_ci)
from s2r.metrics.crossval import (
    domain_probe_accuracy, heldout_action_score, select_ridge_alpha, transfer_score)
from s2r.metrics.dis import (
    DEFAULT_PCA_DIM, DISResult, dis_from_centroids, domain_invariance_score, fit_dis_space)
from s2r.metrics.domain_probe import DomainProbe
from s2r.metrics.folds import Folds, episode_folds
from s2r.metrics.params import ScoreParams
from s2r.metrics.probe_data import ProbeData
from s2r.metrics.results import (
    ActionScoreResult, AlphaSelection, DomainProbeResult)
from s2r.metrics.scoring import SCORE_VERSION, score_embeddings

__all__ = [
    "MIN_CEILING_GAIN", "MIN_EPISODES", "SIM2REAL_FORMULA", "sim2real_score", "skill",
    "DEFAULT_CI", "DEFAULT_N_BOOT", "bca_interval", "bootstrap_ci", "group_bootstrap_weights",
    "percentile_ci", "AlphaSelection", "ProbeData", "domain_probe_accuracy",
    "heldout_action_score", "select_ridge_alpha", "transfer_score", "DEFAULT_PCA_DIM",
    "DISResult", "dis_from_centroids", "domain_invariance_score", "fit_dis_space", "Folds",
    "episode_folds", "ALPHA_GRID", "DEFAULT_RIDGE_ALPHA", "PAPER_TRAIN_ALPHA", "ActionProbe",
    "ActionScoreResult", "DomainProbe", "DomainProbeResult", "action_score",
    "SCORE_VERSION", "ScoreParams", "score_embeddings",
]
