"""The demo's built-in ``simcnn`` controls and how they are trained (data only; the backend that
trains and loads them is :mod:`s2r.encoders.backends.simcnn`, their frames
:func:`.dr_frames.randomised_frames`).

Each control's :attr:`~s2r.worlds.base.Control.version` is part of its weights file's name:
bump it with any change here to that control's training, so a file trained the old way is
never reused (``tests/encoders/test_simcnn.py`` records every version's recipe). The file's
metadata stores the whole recipe as well, checked on every load.
"""

from __future__ import annotations

from s2r.worlds.base import Control

__all__ = ["CONTROLS", "CONTROL_EPISODES", "RANDOMISED_EPISODES", "CONTROL_STEPS",
           "CONTROL_EPOCHS", "CONTROL_SEED"]

#: The plain-look control's episodes (~12,700 frames): enough for simcnn-dr0 to read the
#: leg's position to a few millimetres, which the policy needs to grasp it
#: (docs/validation.md). ~12-20 CPU-minutes on a 2-core machine.
CONTROL_EPISODES = 750
#: The randomised controls' episodes (strength > 0): reading the leg independently of the look
#: (camera mounting included) needs more data than the plain look (docs/validation.md).
#: ~25 CPU-minutes.
RANDOMISED_EPISODES = 1500
CONTROL_STEPS = 24
CONTROL_EPOCHS = 20
CONTROL_SEED = 0
#: What the controls predict: the task state (leg and tabletop pose), columns 10:22 of the
#: demo's state; the camera must supply it (the robot's own state is proprioception).
CONTROL_STATE_COLUMNS = (10, 22)


def _control(cid: str, strength: float, version: int) -> Control:
    s = strength
    episodes = CONTROL_EPISODES if s == 0.0 else RANDOMISED_EPISODES
    return Control(
        id=cid, strength=s, version=version, episodes=episodes, steps=CONTROL_STEPS,
        epochs=CONTROL_EPOCHS, seed=CONTROL_SEED, state_columns=CONTROL_STATE_COLUMNS,
        height=96, width=128, minutes=15 if episodes == CONTROL_EPISODES else 25,
        name=f"Sim CNN, randomisation {s:g}",
        pretraining_data=f"Demo sim frames, appearance randomisation {s:g}",
        notes=f"A control, not a pretrained encoder: a small CNN trained on the demo's "
              f"expert episodes to predict the state, rendered with the demo "
              f"renderer's appearance parameters randomised at strength {s:g} (real "
              f"looks at gaps drawn from [0, {s:g}] with other seeds than "
              f"validation's). More randomisation: smaller gap, by construction. "
              f"Trained once on first use, then kept in the weights folder.",
        dataset=f"demo expert episodes, appearance randomisation {s:g}",
        targets_names="demo task state (leg and tabletop pose, 12)",
        recognise_unrecorded=True)


#: The demo's controls: id -> Control (their versions name their weights files).
CONTROLS = {c.id: c for c in (_control("simcnn-dr0", 0.0, 2), _control("simcnn-dr0.5", 0.5, 3),
                              _control("simcnn-dr1", 1.0, 3))}
