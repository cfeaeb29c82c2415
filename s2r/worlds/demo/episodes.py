"""The demo dataset's scripted episodes: the one-leg assembly plan (approach a leg, grasp,
lift, carry, insert, twist) sampled into states and actions (their columns: :mod:`.schema`).

Each episode draws its own layout (:func:`.scene.sample_layout`), timing (how long each phase
takes) and small noise (a slow wobble of the gripper axis, a few millimetres of tracking
jitter), then samples the plan at ``steps + 1`` instants. The state of frame ``t`` is where the
robot and the leg *are*; the action of frame ``t`` is the absolute target pose commanded for
``t + 1`` (FurnitureBench's 10-D ``action/pos``: position 3, 6-D rotation 6, gripper +-1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from s2r.worlds.demo.scene import (GRASP_BELOW_TOP, GRIPPER_OPEN, LEG_HALF, Layout,
                                     gripper_rotation, rot6d, rot_z, sample_layout)
from s2r.worlds.demo.schema import (ACTION_NAMES, GRIP_CLOSE, GRIP_OPEN, INSERT_DEPTH,
                                    LEG_WIDTH, STATE_NAMES)

# (phase name, relative duration) of the plan; durations are jittered per episode
PHASES = (("approach", 1.0), ("descend", 0.6), ("close", 0.35), ("lift", 0.6),
          ("carry", 1.0), ("insert", 0.55), ("twist", 0.5), ("release", 0.3), ("retreat", 0.45))


@dataclass
class Episode:
    """One scripted episode.

    Attributes
    ----------
    layout : Layout
    states : ndarray (steps, 22) float32
        Robot and part state per frame, columns :data:`STATE_NAMES`.
    actions : ndarray (steps, 10) float32
        Commanded target per frame, columns :data:`ACTION_NAMES`.
    """

    layout: Layout
    states: np.ndarray
    actions: np.ndarray


def _nearest_grasp_yaw(leg_yaw: float, reference: float) -> float:
    """The yaw (leg yaw + k pi/2) closest to ``reference``: a square leg has four grasps."""
    k = round((reference - leg_yaw) / (math.pi / 2))
    return leg_yaw + k * math.pi / 2


def waypoints(layout: Layout, rng: np.random.Generator) -> list[tuple[np.ndarray, float, float]]:
    """Targets ``(position (3,), yaw, gripper command)`` at the end of each phase, plus home."""
    home = np.array([rng.uniform(-0.08, 0.08), rng.uniform(0.22, 0.32), rng.uniform(0.22, 0.30)])
    home_yaw = float(rng.uniform(-0.4, 0.4))
    lx, ly = layout.leg_xy
    hx, hy = layout.hole_xy
    grasp_z = 2 * LEG_HALF[2] - GRASP_BELOW_TOP
    # with the leg hanging straight from the gripper, the fingertips sit this far above its foot
    tip_above_foot = 2 * LEG_HALF[2] - GRASP_BELOW_TOP
    insert_z = layout.top_z - INSERT_DEPTH + tip_above_foot
    yaw = _nearest_grasp_yaw(layout.leg_yaw, home_yaw)
    carry_z = float(rng.uniform(0.26, 0.34))
    twist = float(rng.uniform(0.6, 1.4))
    return [
        (home, home_yaw, GRIP_OPEN),
        (np.array([lx, ly, grasp_z + rng.uniform(0.07, 0.11)]), yaw, GRIP_OPEN),   # approach
        (np.array([lx, ly, grasp_z]), yaw, GRIP_OPEN),                             # descend
        (np.array([lx, ly, grasp_z]), yaw, GRIP_CLOSE),                            # close
        (np.array([lx, ly, carry_z]), yaw, GRIP_CLOSE),                            # lift
        (np.array([hx, hy, insert_z + rng.uniform(0.05, 0.09)]), yaw, GRIP_CLOSE),  # carry
        (np.array([hx, hy, insert_z]), yaw, GRIP_CLOSE),                           # insert
        (np.array([hx, hy, insert_z - 0.003]), yaw + twist, GRIP_CLOSE),           # twist
        (np.array([hx, hy, insert_z - 0.003]), yaw + twist, GRIP_OPEN),            # release
        (np.array([hx, hy, insert_z + rng.uniform(0.08, 0.14)]), yaw + twist, GRIP_OPEN),
    ]


def _ease(u: np.ndarray) -> np.ndarray:
    """Smooth start and stop within a phase: 0 -> 0, 1 -> 1, zero slope at both ends."""
    return 0.5 - 0.5 * np.cos(np.pi * u)


def run_episode(rng: np.random.Generator, steps: int) -> Episode:
    """Draw a layout and run the scripted policy for ``steps`` frames.

    Parameters
    ----------
    rng : numpy.random.Generator
        The episode's own generator (layout, timing and noise all come from it).
    steps : int
        Number of frames (>= 2).

    Returns
    -------
    Episode
    """
    layout = sample_layout(rng)
    wps = waypoints(layout, rng)
    weights = np.array([w for _, w in PHASES]) * rng.uniform(0.75, 1.3, len(PHASES))
    ends = np.concatenate([[0.0], np.cumsum(weights) / weights.sum()])
    wobble_amp = rng.uniform(0.01, 0.05, 2)
    wobble_freq = rng.uniform(0.5, 2.0, 2)
    wobble_phase = rng.uniform(0, 2 * np.pi, 2)

    s = np.arange(steps + 1) / steps                          # plan time of each instant
    phase = np.clip(np.searchsorted(ends, s, side="right") - 1, 0, len(PHASES) - 1)
    u = _ease(np.clip((s - ends[phase]) / (ends[phase + 1] - ends[phase]), 0.0, 1.0))
    pos_a = np.array([wps[p][0] for p in phase])
    pos_b = np.array([wps[p + 1][0] for p in phase])
    pos = pos_a + u[:, None] * (pos_b - pos_a) + rng.normal(0.0, 0.0015, (steps + 1, 3))
    yaw = np.array([wps[p][1] + ui * (wps[p + 1][1] - wps[p][1]) for p, ui in zip(phase, u)])
    cmd = np.array([wps[p + 1][2] for p in phase])
    tilt = wobble_amp * np.sin(2 * np.pi * wobble_freq * s[:, None] + wobble_phase)
    rots = [gripper_rotation(y, tx, ty) for y, (tx, ty) in zip(yaw, tilt)]

    # gripper width: closes during "close", opens during "release" (in proportion to progress)
    names = [name for name, _ in PHASES]
    close, release = names.index("close"), names.index("release")
    closing = phase == close
    opening = phase == release
    closed = (phase > close) & (phase < release)
    width = np.full(steps + 1, GRIPPER_OPEN)
    width[closed] = LEG_WIDTH
    width[closing] = GRIPPER_OPEN + u[closing] * (LEG_WIDTH - GRIPPER_OPEN)
    width[opening] = LEG_WIDTH + u[opening] * (GRIPPER_OPEN - LEG_WIDTH)

    # the leg: standing at its start until grasped, then rigidly held, then left in the hole
    leg_pos = np.array([layout.leg_xy[0], layout.leg_xy[1], LEG_HALF[2]])
    leg_rot = rot_z(layout.leg_yaw)
    rel_pos = rel_rot = None
    states = np.zeros((steps, len(STATE_NAMES)))
    actions = np.zeros((steps, len(ACTION_NAMES)))
    for t in range(steps + 1):
        if closed[t]:
            if rel_pos is None:   # first instant with a closed gripper: fix the grasp
                rel_rot = rots[t].T @ leg_rot
                rel_pos = rots[t].T @ (leg_pos - pos[t])
            leg_pos = pos[t] + rots[t] @ rel_pos
            leg_rot = rots[t] @ rel_rot
        if t < steps:
            states[t] = np.concatenate([pos[t], rot6d(rots[t]), [width[t]], leg_pos,
                                        rot6d(leg_rot), layout.top_xy, [layout.top_yaw]])
        if t > 0:
            actions[t - 1] = np.concatenate([pos[t], rot6d(rots[t]), [cmd[t]]])
    return Episode(layout=layout, states=states.astype(np.float32),
                   actions=actions.astype(np.float32))
