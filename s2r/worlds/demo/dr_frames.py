"""Training frames for the demo's ``simcnn`` controls: expert episodes of the evaluation task
rendered with the demo's own renderer, its appearance parameters randomised (domain
randomisation).

At randomisation ``strength`` 0 every frame is the plain sim look. At ``strength`` s > 0 each
episode is rendered in the renderer's *real* look at a gap drawn uniformly from [0, s], from a
look seed of its own (``TRAINING_LOOK_SEED + ...``, far from the small seeds validation uses):
each episode gets its own room textures, lighting, colour temperature, camera offset, clutter
and sensor noise, scaled by its gap (:mod:`.realism`). So the sim-to-real gap a control must
cross shrinks as ``strength`` grows, by construction: at ``strength`` 1 the validation's real
looks are draws from the training distribution (other rooms, other seeds), at 0 every one of
them is unseen.

Half of the episodes are driven with noise on the expert's moves (DART-style: 1 cm / 0.05 rad,
every other step on average) so the frames also cover states a slightly wrong policy visits;
the label of every frame is the state it shows, so the noise costs no correctness.
"""

from __future__ import annotations

import numpy as np

from s2r.worlds.demo.scene import gripper_rotation, rot6d, rot_from_6d
from s2r.worlds.demo.task import TaskConfig, TaskSim
from s2r.worlds.demo.expert import ReactiveExpert, eval_layout
from s2r.worlds.demo.geometry import yaw_of

__all__ = ["randomised_frames", "TRAINING_LOOK_SEED"]

#: Look seeds of training episodes start here (validation uses small seeds).
TRAINING_LOOK_SEED = 1_000_003
_STREAM = 4


def randomised_frames(n_episodes: int, steps: int, *, strength: float, seed: int = 0,
                      height: int = 96, width: int = 128,
                      config: TaskConfig | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Render ``n_episodes`` expert episodes (at most ``steps`` frames each) with appearance
    randomisation ``strength`` in [0, 1].

    Returns
    -------
    frames : ndarray (N, height, width, 3) uint8
    states : ndarray (N, 22) float32
        The state every frame shows (:data:`.policy.STATE_NAMES`).
    """
    if not 0.0 <= float(strength) <= 1.0:
        raise ValueError(f"strength must be in [0, 1], got {strength!r}")
    config = config or TaskConfig.compliant()
    expert = ReactiveExpert()
    frames, states = [], []
    for e in range(int(n_episodes)):
        rng = np.random.default_rng([int(seed), _STREAM, e])
        sim = TaskSim(config)
        sim.reset(eval_layout(rng), rng=rng)
        # the look from a stream of its own: the episode is the same at every strength
        gap = float(np.random.default_rng([int(seed), _STREAM, e, 1]).uniform(0.0, strength))
        look = "real" if strength > 0 else "sim"
        look_seed = TRAINING_LOOK_SEED + int(seed) * 100_000 + e
        noisy = e % 2 == 1
        for _ in range(int(steps)):
            frames.append(sim.render(look, gap=gap, seed=look_seed, episode=0, height=height,
                                     width=width)[0])
            states.append(sim.state)
            action = expert.act(states[-1]).astype(np.float64)
            if noisy and rng.random() < 0.5:
                action[:3] += rng.normal(0.0, 0.01, 3)
                yaw = yaw_of(rot_from_6d(action[3:9])) + rng.normal(0.0, 0.05)
                action[3:9] = rot6d(gripper_rotation(yaw))
            sim.step(action)
            if sim.success():
                break
    return np.stack(frames), np.stack(states).astype(np.float32)
