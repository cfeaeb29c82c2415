"""The Meta-World dataset: a task's scripted expert episodes, drawn in the sim look and, the
same states, in the real look at ``gap`` (``metaworld:task=...,episodes=E,steps=S,gap=G``)
and of the kind ``shift`` (:data:`.look.SHIFTS`).

Episode ``e`` starts from layout ``e`` of the dataset stream of ``seed`` (:mod:`.sim`) and
runs the expert for exactly ``steps`` world steps (it keeps pressing or holding after its
success); sim episodes are ``0..E-1``, real episode ``E + e`` is sim episode ``e``'s states
in real look ``e`` of ``seed`` (:mod:`.look`, the look rollout ``e`` of a validation at this
seed gets too). The sim frames depend on neither the gap nor the kind of shift, and the real
ones at gap 0 are the sim ones pixel for pixel. The frames' identity is a hash of their pixels
(what the renderer drew here); one process keeps the last two datasets' episodes and sim
frames, so the gaps and kinds of a validation render the sim look once.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from s2r.frameset import FrameSet
from s2r.images import ArrayImages
from s2r.progress import report
from s2r.worlds.twolook import two_look_frameset

__all__ = ["make_dataset", "paint_key"]

_MEMO: OrderedDict = OrderedDict()


def paint_key(options: dict) -> tuple:
    """What a worker's renderer is made for: ``(task, camera, height, width)``."""
    return (options["task"], options["camera"], int(options["height"]), int(options["width"]))


def _episodes(options: dict) -> list:
    from s2r.worlds.metaworld import sim
    from s2r.worlds.metaworld.tasks import TASKS

    spec = TASKS[options["task"]]
    return [sim.expert_episode(spec, options["repeat"],
                               sim.layout(spec, options["seed"], "dataset", e),
                               options["steps"], until_success=False)
            for e in range(int(options["episodes"]))]


def _sim_part(options: dict, progress) -> tuple:
    """``(episodes, sim frames (E*S, H, W, 3))``, memoised for the last two option sets."""
    from s2r.worlds.metaworld.pool import shared_pool

    key = tuple(sorted((k, v) for k, v in options.items() if k not in ("gap", "shift")))
    if key in _MEMO:
        _MEMO.move_to_end(key)
        return _MEMO[key]
    episodes = _episodes(options)
    groups = [(paint_key(options), None, None, 0.0, ep.snapshots) for ep in episodes]
    frames = np.concatenate(shared_pool().paint(groups, progress))
    _MEMO[key] = (episodes, frames)
    while len(_MEMO) > 2:
        _MEMO.popitem(last=False)
    return episodes, frames


def real_frames(options: dict, episodes: list, progress=None) -> np.ndarray:
    """The real-look frames of ``episodes`` at ``options["gap"]``, in the kind of shift
    ``options["shift"]``."""
    from s2r.worlds.metaworld.look import draw_look, draw_textures
    from s2r.worlds.metaworld.pool import shared_pool

    gap, seed, shift = float(options["gap"]), int(options["seed"]), options["shift"]
    groups = [(paint_key(options), draw_textures(seed, gap, shift), draw_look(seed, e, shift),
               gap, ep.snapshots) for e, ep in enumerate(episodes)]
    return np.concatenate(shared_pool().paint(groups, progress))


def object_masks(options: dict, episodes: list, progress=None) -> np.ndarray:
    """The task objects' masks (:mod:`.masks`) of ``episodes`` in the sim look, then in the
    real look at ``options["gap"]`` (the sim ones again at gap 0): ``(2 * E * S, H, W)``."""
    from s2r.worlds.metaworld.look import draw_look
    from s2r.worlds.metaworld.pool import shared_pool

    gap, seed = float(options["gap"]), int(options["seed"])
    sim = [(paint_key(options), None, None, 0.0, ep.snapshots) for ep in episodes]
    sim_masks = np.concatenate(shared_pool().paint(sim, progress, request="segment"))
    if gap == 0.0:
        return np.concatenate([sim_masks, sim_masks])
    real = [(paint_key(options), None, draw_look(seed, e), gap, ep.snapshots)
            for e, ep in enumerate(episodes)]
    return np.concatenate([sim_masks, *shared_pool().paint(real, progress, request="segment")])


def _model_size(episodes: list, snapshot: int) -> tuple:
    """``(nq, nv)`` of the episodes' model (the snapshot holds nq + nv + 7 columns)."""
    nq = len(episodes[0].snapshots[0].qpos)
    return nq, snapshot - nq - 7


def make_dataset(options: dict, progress=None) -> FrameSet:
    """The FrameSet of checked ``options`` (:meth:`.world.MetaWorldWorld.check_options`).

    Returns
    -------
    FrameSet
        ``2 * episodes * steps`` frames, sim then real; ``actions (N, 4)`` (the expert's,
        :data:`.tasks.ACTION_NAMES`), ``state (N, K)`` (the named observation:
        :func:`.tasks.state_names`' first ``K``), ``episode``, ``step``; with
        ``masks=true``, the task objects' masks (:func:`object_masks`).
    """
    from s2r.worlds.metaworld.tasks import ACTION_NAMES, TASKS, named_width, state_names

    spec = TASKS[options["task"]]
    report(progress, 0, 1, f"running the {spec.name} expert")
    episodes, sim = _sim_part(options, progress)
    real = sim.copy() if float(options["gap"]) == 0.0 else real_frames(options, episodes,
                                                                        progress)
    states = np.concatenate([ep.states for ep in episodes])
    nq, nv = _model_size(episodes, states.shape[1] - named_width(spec))
    actions = np.concatenate([ep.actions for ep in episodes])
    masks = ArrayImages(object_masks(options, episodes, progress)) if options.get("masks") \
        else None
    return two_look_frameset(
        ArrayImages(np.concatenate([sim, real])), actions=np.concatenate([actions, actions]),
        state=np.concatenate([states, states]), episodes=options["episodes"],
        steps=options["steps"], action_names=ACTION_NAMES, name="metaworld", masks=masks,
        source={"kind": "metaworld", **options, "state_names": list(state_names(spec, nq, nv))})
