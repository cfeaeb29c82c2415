"""Meta-World's built-in ``simcnn`` controls and their training frames.

``mw-simcnn-dr0`` and ``mw-simcnn-dr1``: the small CNN of :mod:`s2r.encoders.simcnn`, trained
(on first use, by :mod:`s2r.encoders.backends.simcnn`) on Meta-World sim frames of the default
validation's two tasks, button-press-topdown-v3 and assembly-v3 (half of the episodes each),
to predict each frame's task state: the object's pose and the goal (10 columns in both tasks:
position, quaternion, goal position; :data:`CONTROL_STATE_COLUMNS`). ``dr0`` sees the sim look
only; ``dr1`` sees every episode in a real look (:mod:`.look`) at a gap drawn from [0, 1] with
density ``2g`` (weighted toward the full gap: three episodes in four above 0.5), from look
seeds far from validation's (:data:`TRAINING_LOOK_SEED`): its sim-to-real gap is smaller by
construction.

Frames: every other world step of each expert episode (consecutive frames differ by a
centimetre of arm motion; the layouts are what the data must cover), half of the episodes
driven with DART noise (1 cm a world step, every other step on average) so the frames also
show states a slightly wrong policy visits; the label of a frame is the state it shows.
Textures are switched per episode from :data:`TEXTURE_SETS` sets (uploading one costs ~0.3 s
on the CPU renderer).

``dr0`` trains on 200 episodes x 12 epochs in the sim look; ``dr1`` on 600 episodes x 16
epochs, gaps weighted toward 1 and 48 texture sets (a uniform gap and fewer episodes left its
probe reading the button at gap 1 hardly better than ``dr0``'s: docs/validation.md).

``dr0.25``, ``dr0.5`` and ``dr0.75`` (the study's controls, :attr:`Control.default` False:
not in ``validate``'s default set) share the recipe at those strengths, their episodes and
epochs on the straight line between ``dr0``'s and ``dr1``'s (300 x 13, 400 x 14, 500 x 15): a
wider range of looks needs more frames to cover it, as ``dr1`` did, and both grow with the
strength, so the order by construction (more randomisation, smaller gap) is not undone by
less training. Their ``minutes`` are estimates, the measured ``dr0`` (3) and ``dr1`` (12)
scaled by episodes x epochs (both measured 1.25 minutes per 1,000 episode-epochs).

Each control's :attr:`~s2r.worlds.base.Control.version` is part of its weights file's name:
bump it with any change to how that control is trained.
"""

from __future__ import annotations

import numpy as np

from s2r.worlds.base import Control

__all__ = ["CONTROLS", "CONTROL_STATE_COLUMNS", "CONTROL_TASKS", "TRAINING_LOOK_SEED",
           "randomised_frames"]

#: The tasks the controls are trained on (the default validation's).
CONTROL_TASKS = ("button-press-topdown-v3", "assembly-v3")
#: The columns the controls predict: the task state (object pose and goal) of both tasks.
CONTROL_STATE_COLUMNS = (4, 14)
#: Look seeds of training episodes start here (validation uses small seeds).
TRAINING_LOOK_SEED = 1_000_003
#: Texture sets the randomised episodes cycle through.
TEXTURE_SETS = 48
_EVERY = 2


def _control(cid: str, strength: float, episodes: int, epochs: int, version: int,
             minutes: int, study: bool = False) -> Control:
    """One control's row; ``study``: one of the study's controls (not in validate's default
    set; its ``minutes`` an estimate, not yet measured)."""
    s = strength
    return Control(
        id=cid, strength=s, version=version, episodes=episodes, steps=60, epochs=epochs, seed=0,
        state_columns=CONTROL_STATE_COLUMNS, default=not study, minutes_estimated=study,
        task=(("task", CONTROL_TASKS), ("camera", "corner"), ("repeat", 2)),
        height=96, width=128, minutes=minutes,
        name=f"Meta-World sim CNN, randomisation {s:g}",
        pretraining_data=f"Meta-World sim frames (button press, assembly), appearance "
                         f"randomisation {s:g}",
        notes=f"A control, not a pretrained encoder: a small CNN trained on Meta-World's "
              f"scripted expert episodes of button-press-topdown-v3 and assembly-v3 (corner "
              f"camera) to predict the object's pose and the goal, rendered with the real "
              f"look's appearance randomised at strength {s:g} (gaps drawn from [0, {s:g}], "
              f"other seeds than validation's). More randomisation: smaller gap, by "
              f"construction. Trained once on first use, then kept in the weights folder.",
        dataset=f"metaworld expert episodes (button-press-topdown-v3, assembly-v3), "
                f"appearance randomisation {s:g}",
        targets_names="Meta-World task state (object position and quaternion, goal: 10)")


#: Meta-World's controls: id -> Control, sized to train in minutes on first use (dr0: 6,000
#: frames x 12 epochs; dr1: 18,000 frames x 16 epochs; measured minutes). The study's three
#: between them: episodes and epochs interpolated, minutes estimated (module docstring).
CONTROLS = {c.id: c for c in (_control("mw-simcnn-dr0", 0.0, 200, 12, 2, 3),
                              _control("mw-simcnn-dr1", 1.0, 600, 16, 3, 12),
                              _control("mw-simcnn-dr0.25", 0.25, 300, 13, 1, 5, study=True),
                              _control("mw-simcnn-dr0.5", 0.5, 400, 14, 1, 7, study=True),
                              _control("mw-simcnn-dr0.75", 0.75, 500, 15, 1, 9, study=True))}


def _gap(rng: np.random.Generator, strength: float) -> float:
    """A training gap in [0, strength] with density ``2g / strength**2`` (the square root of a
    uniform draw): weighted toward the full gap, where validation's hardest looks are."""
    return float(strength) * float(np.sqrt(rng.uniform(0.0, 1.0)))


def randomised_frames(task, n: int, steps: int, *, strength: float, seed: int,
                      height: int, width: int, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` expert episodes of ``task`` (a :class:`~.world.MetaWorldTask`), every other world
    step of at most ``steps``, drawn with appearance randomisation ``strength`` in [0, 1].

    Returns
    -------
    frames : ndarray (N, height, width, 3) uint8
    states : ndarray (N, S) float32
        The state each frame shows.
    """
    from s2r.worlds.metaworld import sim
    from s2r.worlds.metaworld.look import draw_look, draw_textures
    from s2r.worlds.metaworld.pool import shared_pool

    if not 0.0 <= float(strength) <= 1.0:
        raise ValueError(f"strength must be in [0, 1], got {strength!r}")
    key = task._key(height, width)
    jobs, states = [], []
    for e in range(int(n)):
        rng = np.random.default_rng([int(seed), sim.STREAMS["training"], e])
        ep = sim.expert_episode(task.spec, task.repeat,
                                sim.layout(task.spec, seed, "training", e), steps,
                                noise=0.01 if e % 2 else 0.0, rng=rng)
        keep = slice(0, len(ep.states), _EVERY)
        gap = _gap(np.random.default_rng([int(seed), sim.STREAMS["training"], e, 1]), strength)
        look_seed = TRAINING_LOOK_SEED + int(seed) * 100_000
        j = e % TEXTURE_SETS                  # the texture set, at a gap of its own
        set_gap = _gap(np.random.default_rng([int(seed), sim.STREAMS["training"], j, 2]),
                       strength)
        textures = draw_textures(look_seed + j, set_gap) if strength > 0 else None
        look = draw_look(look_seed, e) if strength > 0 else None
        jobs.append((e % TEXTURE_SETS, (key, textures, look, gap, ep.snapshots[keep])))
        states.append(ep.states[keep])
    order = sorted(range(len(jobs)), key=lambda i: jobs[i][0])   # one upload per texture set
    frames = shared_pool().paint([jobs[i][1] for i in order], progress)
    back = np.empty(len(order), dtype=np.int64)
    back[order] = np.arange(len(order))
    return (np.concatenate([frames[back[i]] for i in range(len(jobs))]),
            np.concatenate(states).astype(np.float32))
