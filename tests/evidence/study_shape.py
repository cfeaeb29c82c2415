"""A synthetic evidence of the study's shape (docs/study.md), built through the real path:
hand-made validation reports (:func:`tests.evidence.reports.make_report`) into
:func:`s2r.evidence.build_evidence`.

Five Meta-World tasks at their gaps in shift ``all`` and the four kinds of shift alone at gaps
0 and 1 on two tasks: 13 reports, 18 real-look task-gaps, 19 image encoders each. Each encoder
has a latent quality; real success at a gap is that quality plus noise that grows with the
gap, and each score is the quality times its signal plus noise: DIS and the held-out action
scores follow deployment, the transfer scores weakly, the Sim2Real score is clipped to 0 (ties),
the retrieval MRR is unrelated.
"""

from __future__ import annotations

import copy
import functools

import numpy as np

from s2r.closedloop.study import SHIFT_GAPS, SHIFT_TASKS, STUDY_SHIFTS
from s2r.evidence import build_evidence
from tests.evidence.reports import make_report

#: The study's tasks at their real-look gaps in shift ``all`` (gap 0 is added to each).
STUDY_TASKS = {"assembly-v3": (0.1, 0.25), "bin-picking-v3": (0.5, 1.0),
               "button-press-topdown-v3": (0.5, 1.0), "drawer-open-v3": (0.5, 1.0),
               "hammer-v3": (0.05, 0.1)}
N_ENCODERS = 19
ROLLOUTS = 8
#: Each score's signal (how strongly it follows an encoder's quality); None: clipped at 0.
SIGNALS = {"dis": 2.0, "action_score_heldout_skill": 1.0, "action_score_heldout": 0.8,
           "transfer_score_skill": 0.3, "transfer_score": 0.3, "paired_retrieval_mrr": 0.0,
           "sim2real_score": None}


def _report(task: str, shift: str, gaps, quality: np.ndarray, rng: np.random.Generator,
            n_boot: int):
    """One cell's report: ``quality`` (n_encoders,) drives success and the scores."""
    scores = {}
    for key, signal in SIGNALS.items():
        noise = rng.normal(size=quality.size)
        scores[key] = (np.maximum(0.0, quality + noise - 0.5) if signal is None
                       else signal * quality + noise)
    table = {}
    for gap in (0.0, *gaps):
        rate = 1 / (1 + np.exp(-(quality * (1 - 0.3 * gap) + 0.5 * (1 + gap) * rng.normal(
            size=quality.size))))
        table[gap] = {}
        for j, p in enumerate(rate):
            successes = list(rng.random(ROLLOUTS) < p)
            progress = [min(1.0, float(s) + 0.5 * rng.random()) for s in successes]
            table[gap][f"enc{j:02d}"] = (successes, progress,
                                         {k: float(v[j]) for k, v in scores.items()})
    dataset = f"metaworld:task={task},episodes=2,height=64,width=64,shift={shift}"
    return make_report(table, dataset=dataset, n_boot=n_boot)


def study_reports(*, seed: int = 0, n_boot: int = 20, shifts=STUDY_SHIFTS,
                  shift_tasks=SHIFT_TASKS) -> list:
    """The study's reports: each task in shift ``all``, then each kind of ``shifts`` on each
    of ``shift_tasks`` at :data:`~s2r.closedloop.study.SHIFT_GAPS` (seeded)."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=N_ENCODERS)
    cells = [(task, "all", gaps) for task, gaps in STUDY_TASKS.items()]
    cells += [(task, shift, SHIFT_GAPS[1:]) for shift in shifts for task in shift_tasks]
    return [_report(task, shift, gaps, quality, rng, n_boot) for task, shift, gaps in cells]


@functools.lru_cache(maxsize=4)
def _built(seed: int, n_boot: int) -> dict:
    return build_evidence(study_reports(seed=seed), n_boot=n_boot, seed=seed)


def study_evidence(*, seed: int = 0, n_boot: int = 200) -> dict:
    """The evidence of :func:`study_reports`, its combined intervals of ``n_boot`` replicates
    (built once a session: a few seconds; each call gets its own copy)."""
    return copy.deepcopy(_built(seed, n_boot))
