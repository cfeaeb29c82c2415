"""Saliency of a closed-loop rollout's frame: what the deployed policy saw, beside the same
state in the look it was trained on.

The Validation page's rollout viewer asks it for one step of an encoder's recorded real-look
rollout (:func:`s2r.closedloop.encoder_rollouts.recorded_rollout`, in the disk cache after
``python -m s2r validate`` or the page's run): the recorded frame, the same robot and task
state rendered in the **sim** look (:func:`s2r.closedloop.rollout.render_rollout_frame`: the
rollout's layout and sensor noise), and the two maps of the embedding toward the same target,
through :func:`s2r.pipeline.saliency.explain_pairs` (the step the CLI's frame pairs end with
too), so the agreement is the one ``python -m s2r saliency`` reports.
"""

from __future__ import annotations

import numpy as np

from s2r.closedloop.encoder_rollouts import (RolloutParams, recorded_rollout, rollout_key,
                                             task_of)
from s2r.errors import S2RError
from s2r.pipeline.saliency import PairSaliency, explain_pairs
from s2r.saliency import as_target

__all__ = ["rollout_saliency", "rollout_step_frames"]


def rollout_step_frames(encoder_id: str, spec, params: RolloutParams, gap: float, step: int,
                        *, cache=None, settings=None) -> tuple[np.ndarray, np.ndarray]:
    """Step ``step`` of ``encoder_id``'s recorded real-look rollout at ``gap`` in both looks:
    ``(real, sim)``, each ``(H, W, 3) uint8``: the recorded frame the policy saw, and the same
    state drawn in the sim look (:func:`s2r.closedloop.rollout.render_rollout_frame`: the
    rollout's layout and sensor noise). A one-line :class:`~s2r.errors.S2RError` when the
    rollout is not recorded in ``cache`` or ``step`` is not one of its steps. ``settings``
    (:class:`s2r.settings.Settings`): where a weights-folder encoder's file is (its
    fingerprint is part of the rollout's key); needed for such encoders only."""
    from s2r.cache import as_cache
    from s2r.closedloop.rollout import render_rollout_frame

    task = task_of(spec)
    cache, params = as_cache(cache), params.for_task(task)
    frames = recorded_rollout(encoder_id, params, "real", gap, cache, spec=spec,
                              settings=settings)
    key = rollout_key(encoder_id, params, "real", gap, spec=spec, settings=settings)
    record = (cache.get_json(key, {}) or {}).get("record") or {}
    if frames is None or not record.get("states"):
        raise S2RError(f"the recorded rollout of {encoder_id} at gap {gap:g} is not in the "
                       "cache: run the validation first")
    if not 0 <= int(step) < min(len(frames), len(record["states"])):
        raise S2RError(f"step {step} is not a step of the recorded rollout of {encoder_id} at "
                       f"gap {gap:g} (0..{len(frames) - 1})")
    step = int(step)
    sim = render_rollout_frame(task, record["states"][step], k=record["index"], look="sim",
                               seed=params.seed, height=params.height, width=params.width,
                               step=step)
    return np.asarray(frames[step]), np.asarray(sim)


def rollout_saliency(encoder, spec, params: RolloutParams, gap: float, step: int, *,
                     method: str = "gradcam", cache=None, settings=None) -> PairSaliency:
    """Saliency maps of step ``step`` of ``encoder``'s recorded real-look rollout at ``gap``
    and of the same state rendered in the sim look.

    Parameters
    ----------
    encoder : Encoder
        The built encoder the policy embedded with (its ``spec.id`` names the rollout).
    spec : str
        The world's dataset spec the validation ran on (``"demo:..."``): its task renders
        the sim look.
    params : RolloutParams
        The rollouts' parameters, frame size included (the dataset's).
    gap : float
        The sim-to-real gap of the real look.
    step : int
        ``0 <= step < T``, the rollout's length.
    method : {"gradcam", "ig", "occlusion"}
    cache : Cache, optional
        Where the rollout was recorded (read only).
    settings : Settings, optional
        Where a weights-folder encoder's file is (:func:`rollout_step_frames`).

    Returns
    -------
    PairSaliency
        One pair: the sim-look rendering (``sim_frames[0]``, ``sim.maps[0]``) and the recorded
        real-look frame (``real_frames[0]``, ``real.maps[0]``), both explained toward the
        embedding's norm; ``sim_indices == real_indices == [step]``; ``measures()[0]
        ["agreement"]`` is their sim/real agreement.

    Raises
    ------
    S2RError
        The rollout is not recorded in ``cache``, or ``step`` is not one of its steps.
    """
    real, sim = rollout_step_frames(encoder.spec.id, spec, params, gap, step, cache=cache,
                                    settings=settings)
    target = as_target("embedding")
    return explain_pairs(encoder, sim[None], real[None], (target, target),
                         sim_indices=[int(step)], real_indices=[int(step)], kind="embedding",
                         method=method)
