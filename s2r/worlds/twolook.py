"""The FrameSet every world's dataset is: sim episodes, then the same kind of episodes in the
real look.

A world's dataset (:meth:`s2r.worlds.base.World.dataset`) holds ``episodes`` episodes of
``steps`` frames in each look: sim episodes ``0..E-1`` first, real episodes ``E..2E-1`` after,
every episode the same length. :func:`two_look_index` numbers those frames (what a renderer
needs before any pixel exists) and :func:`two_look_frameset` assembles the FrameSet, so the
worlds agree on the layout the scores read (``domain``, ``episode``, ``step``).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from s2r.frameset import FrameSet

__all__ = ["two_look_frameset", "two_look_index"]


def two_look_index(episodes: int, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The look, episode and step of each of the ``2 * episodes * steps`` frames.

    Parameters
    ----------
    episodes : int
        Episodes per look.
    steps : int
        Frames per episode.

    Returns
    -------
    domain : ndarray (N,) of str
        ``"sim"`` for the first half, ``"real"`` for the second.
    episode : ndarray (N,) of int
        Global episode ids, ``0..2E-1`` (real episode ``E + e`` after sim episode ``e``).
    step : ndarray (N,) of int
        The frame's step within its episode.
    """
    e, s = int(episodes), int(steps)
    domain = np.repeat(np.array(["sim", "real"]), e * s)
    return domain, np.repeat(np.arange(2 * e), s), np.tile(np.arange(s), 2 * e)


def two_look_frameset(images, *, actions: np.ndarray, state: np.ndarray, episodes: int,
                      steps: int, action_names, name: str, source: dict,
                      masks: Optional[object] = None) -> FrameSet:
    """A world's two-look dataset as a FrameSet.

    Parameters
    ----------
    images : image source or ndarray (N, H, W, 3) uint8
        The frames, sim episodes then real ones (``N = 2 * episodes * steps``).
    actions : ndarray (N, A)
    state : ndarray (N, S)
        The action and state of every frame, in the same order.
    episodes, steps : int
        Episodes per look, frames per episode (:func:`two_look_index`).
    action_names : sequence of str
    name : str
        The FrameSet's name (the world's).
    source : dict
        What made it (the world's kind and options).
    masks : image source, optional
        Per-pixel masks of the task-relevant pixels, where the world draws them.
    """
    domain, episode, step = two_look_index(episodes, steps)
    return FrameSet(images=images, actions=actions, domain=domain, episode=episode, step=step,
                    masks=masks, state=state, action_names=list(action_names), name=name,
                    source=source)
