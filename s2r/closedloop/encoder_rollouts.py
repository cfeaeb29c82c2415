"""Ground truth for one encoder: train a policy on its sim embeddings, deploy it, count successes.

For a registry encoder and a world's task (named by its dataset spec, :func:`task_of`),
:func:`encoder_rollouts`

1. renders the task expert's demonstrations in the sim look
   (:meth:`~s2r.worlds.base.SimTask.demonstrations`) and embeds them (cached array);
2. fits a behaviour-cloning policy on ``[embedding, proprioception]`` -> action
   (:func:`s2r.closedloop.policy.bc.fit_policy`; proprioception is the robot part of the
   state, the task's :attr:`~s2r.worlds.base.TaskColumns.proprio`);
3. rolls it out closed loop in the sim look (the in-domain reference) and in the real look at
   every gap (:func:`s2r.closedloop.rollout.run_rollouts`, the encoder embedding each rendered
   frame), recording rollout 0 of each. The real look at gap 0 is the sim look pixel for
   pixel (a world's promise): its outcome is the sim look's, not run again.

Every (look, gap) outcome is a cached JSON record; its recorded frames a cached array. The
policy is fitted only when some outcome is missing. Keys hold the encoder's weights
fingerprint, every parameter, :data:`ROLLOUT_VERSION`, a digest of the closed loop's policy and
rollout code, and the task's identity (:meth:`~s2r.worlds.base.SimTask.identity`: what draws
its frames and the world's code), so a change to any of them is never served stale, and two
worlds' tasks never share an entry. (Issue 34 moved the demo's simulator into
:mod:`s2r.worlds.demo`: that changed the code digests, so rollouts cached before are
recomputed once; scores and embeddings are not.)
"""

from __future__ import annotations

import functools
import threading
from dataclasses import asdict, dataclass, replace
from typing import Optional, Sequence

import numpy as np

from s2r.cache import as_cache
from s2r.checks import check_choice, check_number
from s2r.embed import embed_frames
from s2r.embed.keys import get_or_compute
from s2r.embed.resolve import build, spec_of, weights_fingerprint
from s2r.errors import DataError, MetricError
from s2r.progress import ProgressCallback, report
from s2r.worlds import WORLDS, SimTask

__all__ = ["ROLLOUT_VERSION", "RolloutParams", "encoder_rollouts", "recorded_rollout",
           "rollout_key", "task_of", "world_options"]

#: Bump when what a rollout record holds or how it is computed changes.
ROLLOUT_VERSION = 3
POLICIES = ("two-stage", "mlp", "ridge")


@dataclass(frozen=True)
class RolloutParams:
    """How the ground truth is measured (every field is part of the cache keys).

    Attributes
    ----------
    rollouts : int
        Rollouts per look and gap (seeded layouts, the same in every look and gap).
    horizon : int, optional
        Most steps per rollout; None: the task's (:attr:`~s2r.worlds.base.SimTask.horizon`;
        the demo's 30, its expert needs <= 15). :meth:`for_task` fills it in.
    demos : int
        Expert demonstrations the policy is trained on (sim look).
    demo_steps : int, optional
        Most frames per demonstration (each ends at its success); None: the task's
        (:attr:`~s2r.worlds.base.SimTask.demo_steps`; the demo's 24).
    policy : {"two-stage", "mlp", "ridge"}
        ``"two-stage"``: :func:`s2r.closedloop.policy.two_stage.fit_two_stage` (a probe reads the
        task
        state from the embedding, an MLP acts on it; default); ``"mlp"``/``"ridge"``:
        :func:`s2r.closedloop.policy.bc.fit_policy` end to end.
    control_demos : int
        Two-stage only: the control MLP is fitted once, on the exact states of this many
        expert episodes (nothing rendered;
        :func:`s2r.closedloop.policy.two_stage.fit_state_control`),
        and shared by every encoder; 0 = fitted per encoder on its cross-fitted decoded
        states of the rendered demonstrations.
    control_members : int
        Two-stage with ``control_demos`` > 0: the shared control is the mean action of this
        many MLPs fitted on the same episodes from other seeds (default 5; one MLP's success
        varied 0.60-0.97 with its seed from the exact state, five reached 0.97-1.00:
        :func:`s2r.closedloop.policy.two_stage.fit_state_control`).
    memory : int
        Two-stage only: the deployed policy remembers the static scene, when the task has
        such a memory (:meth:`~s2r.worlds.base.SimTask.memory`; the demo's
        :class:`s2r.worlds.demo.memory.StaticMemory`: the tabletop's mean decoded pose, a
        free leg's mean pose over its first ``memory`` frames, a held leg's mean offset from
        the gripper; default 3: it helped every image policy measured, see that module);
        0 = every frame decoded afresh.
    seed : int
        Demonstrations, rollouts, the policy's fit.
    height, width : int
        Rendered frame size (the dataset's).
    """

    rollouts: int = 20
    horizon: Optional[int] = None
    demos: int = 60
    demo_steps: Optional[int] = None
    policy: str = "two-stage"
    control_demos: int = 300
    control_members: int = 5
    memory: int = 3
    seed: int = 0
    height: int = 96
    width: int = 128

    def validate(self) -> "RolloutParams":
        for name in ("rollouts", "horizon", "demos", "demo_steps"):
            if getattr(self, name) is None and name in ("horizon", "demo_steps"):
                continue                          # the task's, filled in by for_task
            check_number(name, getattr(self, name), low=1, integer=True)
        if self.demos < 2:
            raise MetricError(f"demos must be >= 2 (the policy holds out whole "
                              f"demonstrations), got {self.demos}")
        check_number("seed", self.seed, low=0, integer=True)
        check_number("control_demos", self.control_demos, low=0, integer=True)
        check_number("control_members", self.control_members, low=1, integer=True)
        check_number("memory", self.memory, low=0, integer=True)
        check_choice("policy", self.policy, POLICIES)
        return self

    def for_task(self, task: SimTask) -> "RolloutParams":
        """These parameters with the task's horizon and demonstration length where they are
        None, validated (what every cache key and report holds)."""
        return replace(self, horizon=task.horizon if self.horizon is None else self.horizon,
                       demo_steps=(task.demo_steps if self.demo_steps is None
                                   else self.demo_steps)).validate()

    def to_dict(self) -> dict:
        return asdict(self)


def task_of(spec) -> SimTask:
    """The task of a world's dataset spec (``"demo:..."``; only the options that choose a
    task matter); a one-line :class:`~s2r.errors.DataError` for any other dataset."""
    world, options = world_options(spec, "the closed loop")
    return world.task(options)


def world_options(spec, what: str = "validate") -> tuple:
    """``(world, options)`` of a world's dataset spec; a one-line
    :class:`~s2r.errors.DataError` for any other dataset (``what`` needs a world)."""
    from s2r.datasets import parse_spec
    from s2r.datasets.world import is_world

    parsed = parse_spec(spec)
    if not is_world(parsed.get("kind")):
        names = ", ".join(f"'{name}:...'" for name in WORLDS)
        raise DataError(f"{what} needs a simulated world's dataset spec ({names}): only a "
                        f"world's frames come from a simulator a policy can be deployed in; "
                        f"got {spec!r}")
    return WORLDS[parsed["kind"]], dict(parsed["options"])


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """Digest of the closed loop's own source (the policies, the rollout loop), read once per
    process: the code that runs here (part of every key, beside the task's identity)."""
    from pathlib import Path

    from s2r.identity import digest

    here = Path(__file__).resolve().parent
    files = sorted([*(here / "policy").glob("*.py"), here / "rollout.py"])
    return digest(*(f.read_bytes() for f in files)).hex()[:16]


def _loop_key(task: SimTask) -> dict:
    """What every key of this module holds of the code: the version, the closed loop's code and
    the task's identity."""
    return {"rollout_version": ROLLOUT_VERSION, "code": _code_digest(), "task": task.identity()}


def _tap(spec, layer: Optional[str], settings=None):
    """The tap of ``spec`` named ``layer`` (:mod:`s2r.encoders.taps`), or None."""
    if layer is None:
        return None
    from s2r.encoders.taps import layer_plan, select_layers

    return select_layers(layer_plan(spec, settings), [layer], encoder=spec.id)[0]


def _encoder_key(encoder_id: str, settings=None, layer: Optional[str] = None) -> dict:
    """The encoder's part of a key; a layer other than the final one adds ``layer`` and the
    taps' version (the final layer's keys are the encoder's own)."""
    spec, _ = spec_of(encoder_id, settings)
    out = {"encoder": spec.id, "weights": weights_fingerprint(spec, settings=settings)}
    tap = _tap(spec, layer, settings)
    if tap is not None and not tap.final:
        from s2r.encoders.taps import TAPS_VERSION

        out.update(layer=tap.name, taps_version=TAPS_VERSION)
    return out


def rollout_key(encoder_id: str, params: RolloutParams, look: str, gap: float, *,
                spec, settings=None, layer: Optional[str] = None) -> dict:
    """Cache key of one (encoder, look, gap) outcome record of the task of the world spec
    ``spec`` (the sim look ignores ``gap``); ``settings`` (handed down): where the encoder's
    weights file is (its fingerprint); ``layer``: the policy reads that layer of the encoder."""
    task = task_of(spec)
    return _rollout_key(task, encoder_id, params.for_task(task), look, gap, settings, layer)


def _rollout_key(task: SimTask, encoder_id: str, params: RolloutParams, look: str,
                 gap: float, settings=None, layer: Optional[str] = None) -> dict:
    return {"kind": "rollouts", **_loop_key(task), **_encoder_key(encoder_id, settings, layer),
            "params": params.to_dict(), "look": look,
            "gap": None if look == "sim" else float(gap)}


def _demo_key(task: SimTask, encoder_id: str, params: RolloutParams, settings=None,
              layer: Optional[str] = None) -> dict:
    p = params.to_dict()
    return {"kind": "demo-embeddings", **_loop_key(task),
            **_encoder_key(encoder_id, settings, layer),
            "demos": {k: p[k] for k in ("demos", "demo_steps", "seed", "height", "width")}}


class _Embedder:
    """``embed(frames, states) -> Z``: the encoder on rendered frames (the state reference
    encoder: the state itself), at ``layer`` when one is named
    (:class:`s2r.encoders.taps.LayerEmbedder`). Built on first use."""

    def __init__(self, encoder_id: str, device=None, settings=None,
                 layer: Optional[str] = None):
        self.spec, _ = spec_of(encoder_id, settings)
        self.device, self.settings, self.layer = device, settings, layer
        self.tap = _tap(self.spec, layer, settings)
        self._encoder = None

    def __call__(self, frames: np.ndarray, states: np.ndarray) -> np.ndarray:
        if self.spec.build.backend == "state":
            return np.asarray(states, dtype=np.float32)
        if self._encoder is None:
            self._encoder = build(self.spec, self.device, self.settings)
            if self.tap is not None and not self.tap.final:
                from s2r.encoders.taps import LayerEmbedder

                self._encoder = LayerEmbedder(self._encoder, [self.tap])
        return embed_frames(self._encoder, frames)


_DEMOS: dict = {}
_DEMOS_LOCK = threading.Lock()


def _demonstrations(task: SimTask, params: RolloutParams,
                    progress: Optional[ProgressCallback]) -> tuple:
    """The task's expert demonstrations in the sim look (read-only arrays), rendered once per
    process for the last (task, demonstrations) asked for: every encoder of a validation is
    trained on the same ones, so the next encoder reuses them instead of simulating and
    drawing them again (~20 s wall an encoder on Meta-World, 60 demonstrations of up to 60
    frames; ~130 MB held)."""
    key = (task.identity(), params.demos, params.demo_steps, params.seed, params.height,
           params.width)
    with _DEMOS_LOCK:
        if _DEMOS.get("key") != key:
            _DEMOS.clear()
            size = dict(seed=params.seed, height=params.height, width=params.width)
            demos = []
            for e, demo in enumerate(task.demonstrations(params.demos, params.demo_steps,
                                                         **size)):
                for array in (demo.frames, demo.states, demo.actions):
                    array.setflags(write=False)
                demos.append(demo)
                report(progress, e + 1, params.demos, f"demonstration {e + 1}/{params.demos}")
            _DEMOS.update(key=key, demos=tuple(demos))
        return _DEMOS["demos"]


def _demonstration_data(task: SimTask, embedder: _Embedder, params: RolloutParams, cache,
                        progress: Optional[ProgressCallback]):
    """``(Z, states, actions, episode)`` of the demonstrations; Z cached."""
    demos = _demonstrations(task, params, progress)
    states = [d.states for d in demos]
    actions = [d.actions for d in demos]

    def compute() -> np.ndarray:
        return np.concatenate([embedder(d.frames, d.states) for d in demos]).astype(np.float32)

    Z = get_or_compute(cache, "array",
                       lambda: _demo_key(task, embedder.spec.id, params, embedder.settings,
                                         embedder.layer),
                       compute, encoder=embedder.spec, settings=embedder.settings)
    episode = np.repeat(np.arange(len(states)), [len(s) for s in states])
    return np.asarray(Z), np.concatenate(states), np.concatenate(actions), episode


_CONTROLS: dict = {}


def shared_control(task: SimTask, params: RolloutParams, cache):
    """The two-stage policies' shared control in ``task`` (``params.control_members`` MLPs
    fitted on exact states of ``params.control_demos`` expert episodes), cached as one array;
    memoised per process."""
    from s2r.closedloop.policy.bc import policy_from_array
    from s2r.closedloop.policy.two_stage import fit_state_control

    key = {"kind": "state-control", **_loop_key(task),
           "control_demos": params.control_demos, "demo_steps": params.demo_steps,
           "seed": params.seed, "members": params.control_members}
    name = repr(sorted(key.items()))
    if name not in _CONTROLS:
        def compute() -> np.ndarray:
            return fit_state_control(task, params.control_demos, steps=params.demo_steps,
                                     seed=params.seed,
                                     members=params.control_members).to_array()

        vector = cache.get_or_compute_array(key, compute)
        _CONTROLS[name] = policy_from_array(vector)
    return _CONTROLS[name]


def _fit(task: SimTask, embedder: _Embedder, params: RolloutParams, cache, progress):
    from s2r.closedloop.policy.bc import fit_policy
    from s2r.closedloop.policy.two_stage import fit_two_stage

    Z, states, actions, episode = _demonstration_data(task, embedder, params, cache, progress)
    report(progress, 0, 1, f"fitting the {params.policy} policy on {len(Z)} sim frames")
    proprio = task.columns.proprio_of(states)
    if params.policy == "two-stage":
        control = shared_control(task, params, cache) if params.control_demos else None
        policy = fit_two_stage(Z, proprio, task.columns.task_of(states), actions, episode,
                               seed=params.seed, control=control)
    else:
        policy = fit_policy(Z, proprio, actions, episode, kind=params.policy, seed=params.seed)

    return policy


class _Act:
    """The encoder's policy as run_rollouts' ``act``: fitted on first use; with the static-scene
    memory (two-stage policies, ``params.memory`` > 0) reset at every run."""

    def __init__(self, fit, embedder: _Embedder, task: SimTask, params: RolloutParams):
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


def _outcome(rollouts) -> dict:
    low, high = rollouts.interval()
    p_low, p_high = rollouts.progress_interval()
    return {"look": rollouts.look, "gap": rollouts.gap, "success_rate": rollouts.rate,
            "ci_low": low, "ci_high": high, "successes": rollouts.success.tolist(),
            "progress": rollouts.progress, "progress_ci_low": p_low,
            "progress_ci_high": p_high, "stages": rollouts.stages.tolist(),
            "stage_rates": rollouts.stage_rates(),
            "steps": rollouts.steps.tolist(),
            "record": {"index": rollouts.record["index"],
                       "actions": rollouts.record["actions"].tolist(),
                       "states": rollouts.record["states"].tolist()}}


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
        (:func:`task_of`); the frame size is ``params``'.
    params : RolloutParams, optional
        Its None horizon and demonstration length are the task's.
    cache : Cache, False or None
        None = the cache folder of ``settings`` (none without); False = no caching.
    device : str, optional
    progress : ProgressCallback, optional
    settings : s2r.settings.Settings, optional
        Handed down (never read here): where the encoder's weights file is.
    layer : str, optional
        The policy reads this layer of the encoder (:mod:`s2r.encoders.taps`; its own keys);
        default, and the final layer, the encoder's embedding.

    Returns
    -------
    dict
        ``{"sim": outcome, "real": {gap: outcome}}``; an outcome holds ``success_rate``,
        its Wilson ``ci_low``/``ci_high``, ``progress`` (mean fraction of the task's stages
        reached) with ``progress_ci_low``/``progress_ci_high``, ``stage_rates`` (per stage of
        the task, :attr:`~s2r.worlds.base.SimTask.stages`), per-rollout ``successes``,
        ``stages`` (furthest stage, 0..len(stages)) and ``steps`` and the
        recorded rollout's ``actions``/``states`` (frames: :func:`recorded_rollout`).
    """
    from s2r.closedloop.rollout import run_rollouts

    task = task_of(spec)
    params = (params or RolloutParams()).for_task(task)
    for g in gaps:
        check_number("gap", g, low=0, high=1)
    cache = as_cache(cache, settings)
    embedder = _Embedder(encoder_id, device, settings, layer)
    act = _Act(lambda: _fit(task, embedder, params, cache, progress), embedder, task, params)

    def key(look: str, gap: float) -> dict:
        return _rollout_key(task, encoder_id, params, look, gap, settings, layer)

    def one(look: str, gap: float) -> dict:
        if _is_sim_look(look, gap):       # the same frames, so the same policy's same outcome
            return get_or_compute(cache, "json", lambda: key(look, gap),
                                  lambda: {**sim, "look": look, "gap": float(gap)},
                                  encoder=encoder_id,   # kept under its own key for readers
                                  settings=settings)

        def compute() -> dict:
            r = run_rollouts(act, task, look=look, gap=gap, n_rollouts=params.rollouts,
                             horizon=params.horizon, seed=params.seed, height=params.height,
                             width=params.width, record=0, progress=progress)
            cache.get_or_compute_array({**key(look, gap), "kind": "rollout-frames"},
                                       lambda: r.record["frames"])
            return _outcome(r)

        return get_or_compute(cache, "json", lambda: key(look, gap), compute,
                              encoder=encoder_id, settings=settings)

    sim = one("sim", 0.0)
    return {"sim": sim, "real": {float(g): one("real", float(g)) for g in gaps}}


def _is_sim_look(look: str, gap: float) -> bool:
    """Whether ``look`` at ``gap`` is the real look at gap 0: every world draws it pixel for
    pixel as the sim look (:mod:`s2r.worlds.base`; tested per world), so its rollouts are the
    sim look's and are not run twice."""
    return look == "real" and float(gap) == 0.0


def recorded_rollout(encoder_id: str, params: RolloutParams, look: str, gap: float,
                     cache, *, spec, settings=None,
                     layer: Optional[str] = None) -> Optional[np.ndarray]:
    """The cached frames ``(T, H, W, 3) uint8`` of the recorded rollout in the task of the
    world spec ``spec`` (of the policy reading ``layer``), or None."""
    if _is_sim_look(look, gap):
        look, gap = "sim", 0.0
    key = rollout_key(encoder_id, params, look, gap, spec=spec, settings=settings, layer=layer)
    return cache.get_array({**key, "kind": "rollout-frames"})
