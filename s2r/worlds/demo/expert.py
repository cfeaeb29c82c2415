"""The demonstrator of closed-loop evaluation: a reactive expert whose action is a function of
the state it sees, and the evaluation task it solves.

The scripted policy of the demo dataset (:mod:`s2r.worlds.demo.episodes`,
:class:`.scripted.ScriptedController`)
keeps an internal phase counter and draws a random twist, so its next action is not a function
of what a camera can see; behaviour cloning from it learns a blur of phases. This expert decides
every step from the current state only (where the gripper, its fingers and the leg are, and the
layout's target hole), so a policy that perceives the state well can imitate it exactly:

* fingers closed on nothing: open them where they are;
* leg free, gripper not above its grasp point: rise to the approach height (when low and far),
  then move above the grasp point with the yaw of the nearest face; then descend; then close;
* leg held, not above the target hole: rise to the carry height (when low and far), then carry
  it above the hole; then lower it into the hole;
* leg seated in the target hole: open the fingers (release), then retreat upward.

The evaluation task (:func:`eval_layout`): the demo's layouts with the target hole fixed to the
tabletop's back-right corner (next to the fixture's walls, so the camera can tell which corner
it is; the demo dataset's target is one of the four at random, which no policy could see) and
the leg starting in a 10 cm square (:data:`LEG_BOX`).
Success is judged with :meth:`.task.TaskConfig.compliant` (no twist required).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from s2r.worlds.demo.schema import (EE_POS, EE_ROT, GRIP, GRIP_CLOSE, GRIP_OPEN, INSERT_DEPTH,
                                      LEG_POS, LEG_ROT, LEG_WIDTH, TOP)
from s2r.worlds.demo.scene import (FIXTURE_HEIGHT, GRASP_BELOW_TOP, LEG_HALF,
                                     TABLETOP_HALF, Layout, gripper_rotation, hole_positions,
                                     rot6d, rot_from_6d, sample_layout)
from s2r.worlds.demo.geometry import grasp_point, leg_foot, tilt_of, wrap, yaw_of

__all__ = ["ReactiveExpert", "eval_layout", "TARGET_CORNER"]

#: Index of the target hole in :func:`.scene.hole_positions` (the back-right corner).
TARGET_CORNER = 0
APPROACH_ABOVE = 0.08     # approach height above the grasp point (m)
CARRY_Z = 0.30            # fingertip height while carrying (m)
RETREAT_Z = 0.30          # fingertip height after the release (m)
#: Where the leg starts (x range, y range; m): a 10 cm square, narrower than the demo
#: dataset's 22 x 26 cm, so that pooled image features can place it within the gripper's
#: capture (25 mm); a policy that does not look still misses most layouts.
LEG_BOX = ((-0.24, -0.14), (0.14, 0.24))


def eval_layout(rng: np.random.Generator) -> Layout:
    """A demo layout (:func:`.scene.sample_layout`) with the target hole at
    :data:`TARGET_CORNER` of the tabletop and the leg inside :data:`LEG_BOX`."""
    layout = sample_layout(rng)
    hole = hole_positions(layout.top_xy, layout.top_yaw)[TARGET_CORNER]
    leg = np.array([rng.uniform(*LEG_BOX[0]), rng.uniform(*LEG_BOX[1])])
    return dataclasses.replace(layout, hole_xy=np.asarray(hole, dtype=np.float64), leg_xy=leg)


def _nearest_face_yaw(leg_yaw: float, yaw: float) -> float:
    """The grasp yaw (leg yaw + k pi/2) closest to ``yaw`` (the expert uses 0: the face
    nearest the gripper's neutral yaw, a continuous function of the leg's yaw for the demo's
    legs, |yaw| < pi/4; nearest to the *current* yaw would jump by pi/2 between layouts)."""
    return leg_yaw + round((yaw - leg_yaw) / (math.pi / 2)) * (math.pi / 2)


class ReactiveExpert:
    """The evaluation task's demonstrator: ``act(state (22,)) -> action (10,)``.

    Everything it needs is in the state: the target hole is :data:`TARGET_CORNER` of the
    tabletop whose pose the state holds (:func:`eval_layout`).

    Parameters
    ----------
    tol : float
        Position tolerance of "there" (m).
    """

    #: Height of the tabletop's surface (the same in every layout).
    TOP_Z = FIXTURE_HEIGHT + 2.0 * TABLETOP_HALF[2]

    def __init__(self, *, tol: float = 0.004):
        self.tol = float(tol)
        # with the leg hanging straight from the gripper, the fingertips sit this far above
        # its foot; inserted, the foot is INSERT_DEPTH below the tabletop's surface
        self.insert_z = self.TOP_Z - INSERT_DEPTH + 2 * LEG_HALF[2] - GRASP_BELOW_TOP

    def act_batch(self, states) -> np.ndarray:
        """Actions ``(B, 10)`` for states ``(B, 22)``."""
        return np.stack([self.act(s) for s in np.asarray(states)])

    @staticmethod
    def _action(pos, yaw: float, grip: float) -> np.ndarray:
        return np.concatenate([pos, rot6d(gripper_rotation(yaw)), [grip]]).astype(np.float32)

    def _held(self, ee, width, leg_pos, leg_rot) -> bool:
        return (abs(width - LEG_WIDTH) < 1e-6
                and float(np.linalg.norm(grasp_point(leg_pos, leg_rot) - ee)) < 0.03)

    def _seated(self, foot, leg_rot, hole) -> bool:
        depth = self.TOP_Z - INSERT_DEPTH
        return (float(np.linalg.norm(foot[:2] - hole)) < 0.02
                and abs(float(foot[2]) - depth) < 0.006 and tilt_of(leg_rot) < 0.25)

    def act(self, state) -> np.ndarray:
        """The action for ``state`` (22,) (:data:`.policy.STATE_NAMES`)."""
        s = np.asarray(state, dtype=np.float64)
        ee, width = s[EE_POS], float(s[GRIP])
        yaw = yaw_of(rot_from_6d(s[EE_ROT]))
        leg_pos, leg_rot = s[LEG_POS], rot_from_6d(s[LEG_ROT])
        foot = leg_foot(leg_pos, leg_rot)
        held = self._held(ee, width, leg_pos, leg_rot)
        hole = hole_positions(s[TOP][:2], float(s[TOP][2]))[TARGET_CORNER]
        if self._seated(foot, leg_rot, hole):
            if held:                                            # release
                return self._action(ee, yaw, GRIP_OPEN)
            return self._action([ee[0], ee[1], RETREAT_Z], yaw, GRIP_OPEN)   # retreat
        if held:
            goal = hole + (ee[:2] - foot[:2])             # the foot above the hole
            far = float(np.linalg.norm(goal - ee[:2]))
            if far > self.tol:
                if far > 0.02 and ee[2] < CARRY_Z - 0.02:
                    return self._action([ee[0], ee[1], CARRY_Z], yaw, GRIP_CLOSE)   # lift
                return self._action([goal[0], goal[1], CARRY_Z], yaw, GRIP_CLOSE)   # carry
            return self._action([goal[0], goal[1], self.insert_z], yaw, GRIP_CLOSE)  # insert
        if width < LEG_WIDTH - 1e-6:
            return self._action(ee, yaw, GRIP_OPEN)            # closed on nothing: open
        gp = grasp_point(leg_pos, leg_rot)
        grasp_yaw = _nearest_face_yaw(yaw_of(leg_rot), 0.0)   # continuous in the leg's yaw
        far = float(np.linalg.norm(gp[:2] - ee[:2]))
        if far > self.tol or abs(wrap(grasp_yaw - yaw)) > 0.05:
            if far > 0.02 and ee[2] < gp[2] + APPROACH_ABOVE - 0.02:
                return self._action([ee[0], ee[1], gp[2] + APPROACH_ABOVE], yaw, GRIP_OPEN)
            return self._action([gp[0], gp[1], gp[2] + APPROACH_ABOVE], grasp_yaw, GRIP_OPEN)
        if ee[2] > gp[2] + self.tol:
            return self._action(gp, grasp_yaw, GRIP_OPEN)      # descend
        return self._action(gp, grasp_yaw, GRIP_CLOSE)         # close
