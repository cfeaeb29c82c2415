"""A batch of Meta-World rollouts spread over the worker processes (a
:class:`~s2r.worlds.base.RolloutBatch`).

Rollout ``k`` lives in worker ``k mod n`` (:mod:`.pool`): its environment steps there and its
frames are drawn there, so one closed-loop step -- frames of the rollouts still running, the
policy, their actions -- keeps every core busy in the two phases that cost (rendering in the
workers, the encoder here). :meth:`MetaWorldBatch.step` answers every rollout's state, success
and stage in the same round trip; :meth:`~MetaWorldBatch.states`, ``success`` and ``stage``
read them here.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["MetaWorldBatch"]


class MetaWorldBatch:
    """``n`` rollouts of a task in a look (see the module).

    Parameters
    ----------
    pool : Pool
    key : tuple
        ``(task, camera, height, width)``.
    repeat : int
        Meta-World steps a world step.
    layouts : list of ndarray
        Rollout ``k``'s layout (its random reset vector).
    looks : list of LookDraw or None
        Rollout ``k``'s look draw (None: the sim look).
    gap : float
    textures : TextureDraw or None
    """

    def __init__(self, pool, key: tuple, repeat: int, layouts: list, looks: list, gap: float,
                 textures):
        self.pool, self.n = pool, len(layouts)
        self.workers = min(pool.n, max(1, self.n))
        self.id = pool.batch_id()
        rows = {w: [(k, layouts[k], looks[k], float(gap)) for k in range(self.n)
                    if k % self.workers == w] for w in range(self.workers)}
        answers = pool.call({w: ("open", self.id, key, int(repeat), textures, r)
                             for w, r in rows.items()})
        self._state: dict = {}
        self._success = np.zeros(self.n, dtype=bool)
        self._stage = np.zeros(self.n, dtype=np.int64)
        for w, r in rows.items():
            self._keep([k for k, *_ in r], answers[w])
        self._open = True

    def _keep(self, rows, outcomes) -> None:
        for k, (state, success, stage) in zip(rows, outcomes):
            self._state[k] = state
            self._success[k] = success
            self._stage[k] = stage

    def _split(self, rows: Sequence[int]) -> dict:
        by: dict = {}
        for i, k in enumerate(rows):
            by.setdefault(int(k) % self.workers, []).append((i, int(k)))
        return by

    def frames(self, rows: Sequence[int]) -> np.ndarray:
        by = self._split(rows)
        answers = self.pool.call({w: ("frames", self.id, [k for _, k in items])
                                  for w, items in by.items()})
        out = None
        for w, items in by.items():
            got = answers[w]
            if out is None:
                out = np.empty((len(rows),) + got.shape[1:], dtype=np.uint8)
            out[[i for i, _ in items]] = got
        return out

    def states(self, rows: Sequence[int]) -> np.ndarray:
        return np.stack([self._state[int(k)] for k in rows])

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None:
        actions = np.asarray(actions, dtype=np.float64)
        by = self._split(rows)
        answers = self.pool.call({w: ("step", self.id, [k for _, k in items],
                                      actions[[i for i, _ in items]])
                                  for w, items in by.items()})
        for w, items in by.items():
            self._keep([k for _, k in items], answers[w])

    def success(self, rows: Sequence[int]) -> np.ndarray:
        return self._success[np.asarray(rows, dtype=np.int64)].copy()

    def stage(self, rows: Sequence[int]) -> np.ndarray:
        return self._stage[np.asarray(rows, dtype=np.int64)].copy()

    def close(self) -> None:
        """Release the rollouts' environments in the workers (kept there for the next
        batch); the workers and their renderers stay for the process's next batch and are
        closed at exit (:func:`.pool.close_pool`)."""
        if self._open:
            self._open = False
            self.pool.call({w: ("close", self.id) for w in range(self.workers)})
