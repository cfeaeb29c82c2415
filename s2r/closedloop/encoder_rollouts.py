"""Ground truth for one encoder: train a policy on its sim embeddings, deploy it, count successes.

For a registry encoder and a world's task (named by its dataset spec,
:func:`s2r.datasets.world.task_of`), :func:`encoder_rollouts`

1. renders the task expert's demonstrations in the sim look
   (:meth:`~s2r.worlds.base.SimTask.demonstrations`) and embeds them (cached array);
2. fits a policy on ``[embedding, proprioception]`` -> action (:func:`s2r.closedloop.agent.fit`;
   proprioception is the robot part of the state, the task's
   :attr:`~s2r.worlds.base.TaskColumns.proprio`);
3. rolls it out closed loop in the sim look (the in-domain reference) and in the real look at
   every gap (:func:`s2r.closedloop.rollout.run_rollouts`, the encoder embedding each rendered
   frame), recording rollout 0 of each. The real look at gap 0 is the sim look pixel for
   pixel (a world's promise): its outcome is the sim look's, not run again.

Every (look, gap) :class:`~s2r.closedloop.outcome.Outcome` is a cached JSON record; its
recorded frames a cached array (keys: :mod:`s2r.closedloop.keys`). The policy is fitted only
when some outcome is missing.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from s2r.cache import as_cache
from s2r.checks import check_number
from s2r.closedloop import agent
from s2r.closedloop import keys as _keys
from s2r.closedloop.keys import ROLLOUT_VERSION
from s2r.closedloop.outcome import Outcome
from s2r.closedloop.overlap import run_overlapped
from s2r.closedloop.params import POLICIES, RolloutParams
from s2r.datasets.world import task_of, world_options
from s2r.embed.keys import get_or_compute
from s2r.progress import ProgressCallback

__all__ = ["POLICIES", "ROLLOUT_VERSION", "RolloutParams", "encoder_rollouts",
           "recorded_rollout", "rollout_key", "task_of", "world_options"]


def rollout_key(encoder_id: str, params: RolloutParams, look: str, gap: float, *,
                spec, settings=None, layer: Optional[str] = None, device=None) -> dict:
    """Cache key of one (encoder, look, gap) outcome record of the task of the world spec
    ``spec`` (the sim look ignores ``gap``); ``settings`` (handed down): where the encoder's
    weights file is (its fingerprint) and its runtime; ``layer``: the policy reads that layer
    of the encoder; ``device``: where it ran (default :func:`s2r.encoders.pick_device`)."""
    task = task_of(spec)
    return _keys.rollout_key(task, encoder_id, params.for_task(task), look, gap, settings,
                             layer, device)


def encoder_rollouts(encoder_id: str, gaps: Sequence[float], *, spec,
                     params: Optional[RolloutParams] = None, cache=None, device=None,
                     progress: Optional[ProgressCallback] = None, settings=None,
                     layer: Optional[str] = None) -> dict:
    """Closed-loop outcomes of ``encoder_id``'s sim-trained policy in the sim look and in the
    real look at every gap, in the task of the world spec ``spec``.

    Parameters
    ----------
    encoder_id : str
        Registry id (``"state"`` uses the state itself).
    gaps : sequence of float in [0, 1]
    spec : str
        A world's dataset spec (``"demo"``, ``"demo:height=96,width=128"``): its task
        (:func:`~s2r.datasets.world.task_of`); the frame size is ``params``'.
    params : RolloutParams, optional
        Its None horizon and demonstration length are the task's.
    cache : Cache, False or None
        None = the cache folder of ``settings`` (none without); False = no caching.
    device : str, optional
    progress : ProgressCallback, optional
    settings : s2r.settings.Settings, optional
        Handed down (never read here): where the encoder's weights file is, its runtime.
    layer : str, optional
        The policy reads this layer of the encoder (:mod:`s2r.encoders.taps`; its own keys);
        default, and the final layer, the encoder's embedding.

    Returns
    -------
    dict
        ``{"sim": Outcome, "real": {gap: Outcome}}``
        (:class:`~s2r.closedloop.outcome.Outcome`; the recorded rollout's frames:
        :func:`recorded_rollout`).
    """
    from s2r.closedloop.rollout import run_rollouts

    task = task_of(spec)
    params = (params or RolloutParams()).for_task(task)
    for g in gaps:
        check_number("gap", g, low=0, high=1)
    cache = as_cache(cache, settings)
    embedder = agent.Embedder(encoder_id, device, settings, layer)
    policy = agent.Once(lambda: agent.fit(task, embedder, params, cache, progress))

    def key(look: str, gap: float) -> dict:
        return _keys.rollout_key(task, encoder_id, params, look, gap, settings, layer, device)

    def run(look: str, gap: float) -> Callable[[Optional[ProgressCallback]], Outcome]:
        def compute(relayed: Optional[ProgressCallback]) -> dict:
            act = agent.Agent(policy, embedder, task, params)    # its own memory
            r = run_rollouts(act, task, look=look, gap=gap, n_rollouts=params.rollouts,
                             horizon=params.horizon, seed=params.seed, height=params.height,
                             width=params.width, record=0, progress=relayed)
            cache.get_or_compute_array({**key(look, gap), "kind": "rollout-frames"},
                                       lambda: r.record["frames"])
            return Outcome.from_rollouts(r).to_record()

        return lambda relayed: Outcome.from_record(get_or_compute(
            cache, "json", lambda: key(look, gap), lambda: compute(relayed),
            encoder=encoder_id, settings=settings))

    runs = [("sim", 0.0)] + [("real", float(g)) for g in dict.fromkeys(map(float, gaps))
                             if not _is_sim_look("real", g)]
    lanes = task.overlap      # runs at once (the outcomes are the same: .overlap)
    missing = [r for r in runs if not cache.contains(key(*r))]
    if len(missing) > 1 and lanes > 1:
        policy()            # fitted here, once, before the runs share it (progress is ours)
    done = dict(zip(runs, run_overlapped([run(*r) for r in runs], lanes, progress)))
    sim = done[("sim", 0.0)]

    def real(gap: float) -> Outcome:
        if not _is_sim_look("real", gap):
            return done[("real", gap)]
        record = get_or_compute(cache, "json", lambda: key("real", gap),   # the sim look's
                                lambda: {**sim.to_record(), "look": "real", "gap": gap},
                                encoder=encoder_id,       # kept under its own key for readers
                                settings=settings)
        return Outcome.from_record(record)

    return {"sim": sim, "real": {float(g): real(float(g)) for g in gaps}}


def _is_sim_look(look: str, gap: float) -> bool:
    """Whether ``look`` at ``gap`` is the real look at gap 0: every world draws it pixel for
    pixel as the sim look (:mod:`s2r.worlds.base`; tested per world), so its rollouts are the
    sim look's and are not run twice."""
    return look == "real" and float(gap) == 0.0


def recorded_rollout(encoder_id: str, params: RolloutParams, look: str, gap: float,
                     cache, *, spec, settings=None, layer: Optional[str] = None,
                     device=None) -> Optional[np.ndarray]:
    """The cached frames ``(T, H, W, 3) uint8`` of the recorded rollout in the task of the
    world spec ``spec`` (of the policy reading ``layer``, run on ``device``), or None."""
    if _is_sim_look(look, gap):
        look, gap = "sim", 0.0
    key = rollout_key(encoder_id, params, look, gap, spec=spec, settings=settings, layer=layer,
                      device=device)
    return cache.get_array({**key, "kind": "rollout-frames"})
