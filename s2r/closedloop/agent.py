"""An encoder's deployed policy: the encoder as an embedder, the policy's fit on the expert
demonstrations' embeddings, and the agent :func:`~s2r.closedloop.rollout.run_rollouts` steps.

Two process-wide memos (:class:`~s2r.closedloop.memo.Memo`) spare work between the encoders of
one validation: :data:`DEMOS` holds the last task's rendered demonstrations (every encoder is
trained on the same ones; ~20 s an encoder on Meta-World, ~130 MB held), :data:`CONTROLS`
every shared control fitted (small arrays).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

import numpy as np

from s2r.closedloop.keys import control_key, demo_key, embedding_runtime, layer_tap
from s2r.closedloop.memo import Memo
from s2r.closedloop.params import RolloutParams
from s2r.embed import embed_frames
from s2r.embed.keys import get_or_compute
from s2r.embed.resolve import build, spec_of
from s2r.progress import ProgressCallback, report
from s2r.worlds import SimTask

__all__ = ["CONTROLS", "DEMOS", "Agent", "Embedder", "Once", "demonstrations", "fit",
           "shared_control"]

#: The last (task, demonstrations) asked for: its rendered demonstrations, read-only.
DEMOS = Memo(size=1)
#: Every shared control fitted in this process, by its key.
CONTROLS = Memo()


class Embedder:
    """``embed(frames, states) -> Z``: the encoder on rendered frames (the state reference
    encoder: the state itself), at ``layer`` when one is named
    (:class:`s2r.encoders.taps.LayerEmbedder`). The encoder is built on first use."""

    def __init__(self, encoder_id: str, device=None, settings=None,
                 layer: Optional[str] = None):
        self.spec, _ = spec_of(encoder_id, settings)
        self.device, self.settings, self.layer = device, settings, layer
        self.tap = layer_tap(self.spec, layer, settings)
        self._encoder = Once(self._build)

    def _build(self):
        encoder = build(self.spec, self.device, self.settings,
                        embedding_runtime(self.spec, self.settings, self.device))
        if self.tap is not None and not self.tap.final:
            from s2r.encoders.taps import LayerEmbedder

            encoder = LayerEmbedder(encoder, [self.tap])
        return encoder

    @property
    def encoder(self):
        """The built encoder (built on first use, once, whichever thread asks first)."""
        return self._encoder()

    def __call__(self, frames: np.ndarray, states: np.ndarray) -> np.ndarray:
        if self.spec.build.backend == "state":
            return np.asarray(states, dtype=np.float32)
        return embed_frames(self.encoder, frames)


class Once:
    """``make()``'s value, made on the first call and shared by every later one (threads
    included: the first caller makes it while the others wait)."""

    def __init__(self, make: Callable[[], Any]):
        self._make, self._lock, self._made = make, threading.Lock(), False
        self._value: Any = None

    def __call__(self) -> Any:
        with self._lock:
            if not self._made:
                self._value, self._made = self._make(), True
            return self._value


def demonstrations(task: SimTask, params: RolloutParams,
                   progress: Optional[ProgressCallback] = None) -> tuple:
    """The task's expert demonstrations in the sim look (read-only arrays), drawn once per
    process for the last (task, demonstrations) asked for (:data:`DEMOS`): every encoder of a
    validation is trained on the same ones."""
    key = (task.sim_identity(), params.demos, params.demo_steps, params.seed, params.height,
           params.width)

    def draw() -> tuple:
        size = dict(seed=params.seed, height=params.height, width=params.width)
        out = []
        for e, demo in enumerate(task.demonstrations(params.demos, params.demo_steps, **size)):
            for array in (demo.frames, demo.states, demo.actions):
                array.setflags(write=False)
            out.append(demo)
            report(progress, e + 1, params.demos, f"demonstration {e + 1}/{params.demos}")
        return tuple(out)

    return DEMOS.get(key, draw)


def demonstration_data(task: SimTask, embedder: Embedder, params: RolloutParams, cache,
                       progress: Optional[ProgressCallback] = None) -> tuple:
    """``(Z, states, actions, episode)`` of the demonstrations, rows stacked; Z cached."""
    demos = demonstrations(task, params, progress)
    states = [d.states for d in demos]
    actions = [d.actions for d in demos]

    def compute() -> np.ndarray:
        return np.concatenate([embedder(d.frames, d.states) for d in demos]).astype(np.float32)

    Z = get_or_compute(cache, "array",
                       lambda: demo_key(task, embedder.spec.id, params, embedder.settings,
                                        embedder.layer, embedder.device),
                       compute, encoder=embedder.spec, settings=embedder.settings)
    episode = np.repeat(np.arange(len(states)), [len(s) for s in states])
    return np.asarray(Z), np.concatenate(states), np.concatenate(actions), episode


def shared_control(task: SimTask, params: RolloutParams, cache):
    """The two-stage policies' shared control in ``task`` (``params.control_members`` MLPs
    fitted on exact states of ``params.control_demos`` expert episodes), cached as one array
    and held in :data:`CONTROLS`."""
    from s2r.closedloop.policy.bc import policy_from_array
    from s2r.closedloop.policy.two_stage import fit_state_control

    key = control_key(task, params)

    def load():
        def compute() -> np.ndarray:
            return fit_state_control(task, params.control_demos, steps=params.demo_steps,
                                     seed=params.seed,
                                     members=params.control_members).to_array()

        return policy_from_array(cache.get_or_compute_array(key, compute))

    return CONTROLS.get(repr(sorted(key.items())), load)


def fit(task: SimTask, embedder: Embedder, params: RolloutParams, cache,
        progress: Optional[ProgressCallback] = None):
    """The encoder's policy, fitted on its embeddings of the sim-look demonstrations
    (``params.policy``: a two-stage policy, or behaviour cloning end to end)."""
    from s2r.closedloop.policy.bc import fit_policy
    from s2r.closedloop.policy.two_stage import fit_two_stage

    Z, states, actions, episode = demonstration_data(task, embedder, params, cache, progress)
    report(progress, 0, 1, f"fitting the {params.policy} policy on {len(Z)} sim frames")
    proprio = task.columns.proprio_of(states)
    if params.policy == "two-stage":
        control = shared_control(task, params, cache) if params.control_demos else None
        return fit_two_stage(Z, proprio, task.columns.task_of(states), actions, episode,
                             seed=params.seed, control=control)
    return fit_policy(Z, proprio, actions, episode, kind=params.policy, seed=params.seed)


class Agent:
    """The encoder's policy as :func:`~s2r.closedloop.rollout.run_rollouts`' ``act``.

    Parameters
    ----------
    fit : callable
        ``fit() -> policy``, called on first use (a run whose outcomes are all cached fits
        nothing).
    embedder : Embedder
    task : SimTask
    params : RolloutParams
        Two-stage policies with ``memory`` > 0 remember the static scene
        (:meth:`~s2r.worlds.base.SimTask.memory`), reset at every run.
    """

    def __init__(self, fit: Callable, embedder: Embedder, task: SimTask,
                 params: RolloutParams):
        self._fit, self._embedder, self._policy = fit, embedder, None
        self.columns = task.columns
        self.memory = (task.memory(params.memory)
                       if params.policy == "two-stage" and params.memory else None)

    def reset(self, n_rollouts: int) -> None:
        if self.memory is not None:
            self.memory.reset(n_rollouts)

    def __call__(self, frames: np.ndarray, states: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if self._policy is None:
            self._policy = self._fit()
        Z, proprio = self._embedder(frames, states), self.columns.proprio_of(states)
        if self.memory is None:
            return self._policy.predict(Z, proprio)
        task = self.memory(self._policy.decode(Z), proprio, rows)
        return self._policy.control.predict(task, proprio)
