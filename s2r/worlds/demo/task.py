"""A small kinematic simulator of the demo's one-leg task: state + action -> next state.

The demo's frames are rendered from a 22-D state (:data:`.policy.STATE_NAMES`); this module
moves that state under the demo's 10-D absolute action (:data:`.policy.ACTION_NAMES`: target
fingertip position, 6-D rotation, gripper sign), so a policy can be run closed-loop and its
frames rendered in either look by the existing renderer (:meth:`TaskSim.render`).

Rules (kinematic, no contact dynamics; every tolerance is a :class:`TaskConfig` field):

* the end effector moves straight toward the commanded position by at most ``max_move``
  metres per step, and turns toward the commanded rotation (geodesic) by at most
  ``max_turn`` radians per step; it stays inside a workspace box;
* the gripper width moves toward open (command <= 0) or closed (> 0) by ``grip_speed`` per
  step; closing fingers stop on the leg (width = the leg's width) and grasp it when the
  fingertip point is within ``grasp_tol`` of the leg's grasp point (the point between the
  fingertips when the policy grasps it), the gripper points down the leg within
  ``grasp_tilt`` and its yaw matches one of the leg's four faces within ``grasp_yaw``;
  otherwise they close on nothing (width 0) and hold nothing until they open again;
* a grasped leg follows the gripper rigidly (the relative pose fixed when it was grasped);
* a released leg (the gripper opens) drops into a hole of the tabletop when its foot is within
  ``hole_tol`` of the hole's centre, at most ``drop_tol`` above the surface and upright within
  ``tilt_tol`` (it then stands in the hole, seated ``INSERT_DEPTH`` deep); otherwise it falls to
  the surface below it (the tabletop part or the table), standing when it was upright and
  low, else lying on its side;
* :meth:`TaskSim.success`: the leg, not held, is seated in the *target* hole (foot within
  ``hole_tol``, depth within ``-over_depth..depth_tol`` of the seat, upright within
  ``tilt_tol``) and was turned by at least ``min_turn`` radians about its axis while seated
  there (screwed in: the task's yaw criterion, as the scripted twist is random, not a fixed
  target yaw).

Not simulated: collisions (a held leg passes through the tabletop, the arm through the
parts), pushing a free leg, toppling over time, the fingers' own geometry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from s2r.worlds.demo.schema import (EE_POS, EE_ROT, GRIP, INSERT_DEPTH, LEG_WIDTH,
                                      STATE_NAMES)
from s2r.worlds.demo.scene import (GRIPPER_OPEN, LEG_HALF, TABLETOP_HALF, Layout,
                                     gripper_rotation, hole_positions, rot6d, rot_from_6d,
                                     rot_y, rot_z, sample_layout)
from s2r.worlds.demo.geometry import (grasp_point, leg_foot, tilt_of, turn_toward,
                                             wrap, yaw_of)

__all__ = ["TaskConfig", "TaskSim", "replay", "grasp_point", "leg_foot", "turn_toward",
           "LOOKS", "WORKSPACE"]

LOOKS = ("sim", "real")
# the workspace box the fingertip point stays in (m)
WORKSPACE = (np.array([-0.60, -0.10, 0.0]), np.array([0.60, 0.70, 0.60]))


@dataclass(frozen=True)
class TaskConfig:
    """Speed limits and tolerances of :class:`TaskSim` (metres, radians, per step)."""

    max_move: float = 0.12        # fingertip travel per step
    max_turn: float = 0.6         # gripper rotation per step
    grip_speed: float = 0.05      # finger-gap change per step
    grasp_tol: float = 0.015      # fingertip point to the leg's grasp point
    grasp_tilt: float = 0.35      # gripper axis vs the leg's axis
    grasp_yaw: float = 0.35       # gripper yaw vs the nearest face of the leg
    hole_tol: float = 0.013       # foot to hole centre (horizontal; the hole is 11 mm wide)
    drop_tol: float = 0.03        # highest foot above the surface that still drops into a hole
    depth_tol: float = 0.006      # a seated foot is at most this much above the seat depth ...
    over_depth: float = 0.012     # ... and at most this much below it (a held leg pushed in)
    tilt_tol: float = 0.25        # leg axis from vertical
    stand_drop: float = 0.05      # highest upright fall that leaves the leg standing
    min_turn: float = 0.3         # turn while seated in the target hole (screwed in)
    centre_grasp: bool = False    # closing fingers centre the leg and square it up

    @classmethod
    def compliant(cls) -> "TaskConfig":
        """Tolerances of a compliant gripper and a chamfered hole (closed-loop evaluation).

        The open fingers (80 mm apart) capture a 30 mm leg up to 25 mm off centre and turned
        up to 0.6 rad off a face, and pull it to their centre and square it up as they close
        (``centre_grasp``); the hole's chamfer guides a foot
        released up to 20 mm from its centre; a seated leg counts without the twist
        (``min_turn = 0``). Learned policies are judged on where they
        bring the leg, not on millimetre precision a real gripper does not need.
        """
        return cls(grasp_tol=0.025, grasp_yaw=0.6, hole_tol=0.02, centre_grasp=True,
                   min_turn=0.0)


class TaskSim:
    """The one-leg task, stepped kinematically (see the module's rules).

    Parameters
    ----------
    config : TaskConfig, optional

    Attributes
    ----------
    layout : Layout
        The episode's layout (set by :meth:`reset`).
    grasped : bool
        Whether the gripper holds the leg.
    turn : float
        Radians the leg turned about its axis while seated in the target hole (reset to 0
        when it leaves it).
    t : int
        Steps taken since the last reset.
    """

    def __init__(self, config: TaskConfig | None = None):
        self.config = config or TaskConfig()
        self.layout: Layout | None = None
        self._renderers: dict = {}

    # ------------------------------------------------------------------ reset / state
    def reset(self, layout: Layout, state: np.ndarray | None = None, *,
              rng: np.random.Generator | None = None) -> np.ndarray:
        """Start an episode on ``layout``.

        Parameters
        ----------
        layout : Layout
        state : ndarray (22,), optional
            Initial state (:data:`STATE_NAMES`); its robot part is used, the leg must be free
            (it is put standing at the layout's start). Default: the gripper open at a home
            pose drawn from ``rng`` (like the scripted policy's).
        rng : numpy.random.Generator, optional

        Returns
        -------
        ndarray (22,) float32
            The initial state.
        """
        self.layout = layout
        self._renderers = {}
        if state is None:
            rng = rng if rng is not None else np.random.default_rng(0)
            self.ee_pos = np.array([rng.uniform(-0.08, 0.08), rng.uniform(0.22, 0.32),
                                    rng.uniform(0.22, 0.30)])
            self.ee_rot = gripper_rotation(float(rng.uniform(-0.4, 0.4)))
            self.width = GRIPPER_OPEN
        else:
            s = np.asarray(state, dtype=np.float64)
            if s.shape != (len(STATE_NAMES),) or not np.all(np.isfinite(s)):
                raise ValueError(f"TaskSim.reset: state must be finite, shape (22,), "
                                 f"got {s.shape}")
            self.ee_pos = s[EE_POS].copy()
            self.ee_rot = rot_from_6d(s[EE_ROT])
            self.width = float(np.clip(s[GRIP], 0.0, GRIPPER_OPEN))
        self.leg_pos = np.array([layout.leg_xy[0], layout.leg_xy[1], LEG_HALF[2]])
        self.leg_rot = rot_z(layout.leg_yaw)
        self.grasped = False
        self._rel_pos = self._rel_rot = None
        self._closed_empty = False
        self.turn = 0.0
        self._last_yaw: float | None = None
        self.t = 0
        return self.state

    @classmethod
    def random(cls, seed, config: TaskConfig | None = None) -> "TaskSim":
        """A simulator reset on a layout and home pose drawn from ``seed`` (any
        ``numpy.random.default_rng`` seed)."""
        rng = np.random.default_rng(seed)
        sim = cls(config)
        sim.reset(sample_layout(rng), rng=rng)
        return sim

    @property
    def state(self) -> np.ndarray:
        """The current state ``(22,) float32`` (:data:`STATE_NAMES`)."""
        lay = self.layout
        return np.concatenate([self.ee_pos, rot6d(self.ee_rot), [self.width], self.leg_pos,
                               rot6d(self.leg_rot), lay.top_xy, [lay.top_yaw]]
                              ).astype(np.float32)

    @property
    def target_hole(self) -> np.ndarray:
        """The target hole's centre ``(2,)``."""
        return np.asarray(self.layout.hole_xy, dtype=np.float64)

    # ------------------------------------------------------------------ stepping
    def step(self, action) -> np.ndarray:
        """Apply one 10-D absolute action; returns the next state ``(22,) float32``."""
        if self.layout is None:
            raise RuntimeError("TaskSim.step: call reset first")
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (10,) or not np.all(np.isfinite(a)):
            raise ValueError(f"TaskSim.step: action must be 10 finite numbers, got {a.shape}")
        c = self.config
        # the end effector: position and rotation toward the target, within the limits
        delta = a[:3] - self.ee_pos
        dist = float(np.linalg.norm(delta))
        if dist > c.max_move:
            delta *= c.max_move / dist
        self.ee_pos = np.clip(self.ee_pos + delta, *WORKSPACE)
        r6 = a[3:9]
        if np.linalg.norm(r6[:3]) > 1e-6 and np.linalg.norm(np.cross(r6[:3], r6[3:])) > 1e-6:
            self.ee_rot = turn_toward(self.ee_rot, rot_from_6d(r6), c.max_turn)
        # the gripper
        if a[9] > 0:
            self._close()
        else:
            self._open()
        if self.grasped:
            self.leg_pos = self.ee_pos + self.ee_rot @ self._rel_pos
            self.leg_rot = self.ee_rot @ self._rel_rot
        self._track_turn()
        self.t += 1
        return self.state

    def _close(self) -> None:
        c = self.config
        if self.grasped:
            self.width = LEG_WIDTH
            return
        new = max(0.0, self.width - c.grip_speed)
        if self.width >= LEG_WIDTH >= new and not self._closed_empty and self._can_grasp():
            self.width = LEG_WIDTH
            self.grasped = True
            if self.config.centre_grasp:   # the fingers pull the leg to their centre and
                shift = self.ee_pos - grasp_point(self.leg_pos, self.leg_rot)  # square it up
                self.leg_pos = self.leg_pos + np.array([shift[0], shift[1], 0.0])
                d = yaw_of(self.ee_rot) - yaw_of(self.leg_rot)
                self.leg_rot = rot_z((d + math.pi / 4) % (math.pi / 2) - math.pi / 4
                                     ) @ self.leg_rot
            self._rel_rot = self.ee_rot.T @ self.leg_rot
            self._rel_pos = self.ee_rot.T @ (self.leg_pos - self.ee_pos)
            return
        if new < LEG_WIDTH:
            self._closed_empty = True
        self.width = new

    def _open(self) -> None:
        self.width = min(GRIPPER_OPEN, self.width + self.config.grip_speed)
        self._closed_empty = False
        if self.grasped and self.width > LEG_WIDTH:
            self.grasped = False
            self._rel_pos = self._rel_rot = None
            self._settle()

    def _can_grasp(self) -> bool:
        """Whether closing fingers would hold the leg now."""
        c = self.config
        if float(np.linalg.norm(grasp_point(self.leg_pos, self.leg_rot) - self.ee_pos)) \
                > c.grasp_tol:
            return False
        leg_up = self.leg_rot[:, 2] if self.leg_rot[2, 2] >= 0 else -self.leg_rot[:, 2]
        # the gripper's approach axis (its z) points down the leg
        if math.acos(max(-1.0, min(1.0, float(-self.ee_rot[:, 2] @ leg_up)))) > c.grasp_tilt:
            return False
        # the fingers close across a face: yaw difference modulo a quarter turn
        d = yaw_of(self.ee_rot) - yaw_of(self.leg_rot)
        d = (d + math.pi / 4) % (math.pi / 2) - math.pi / 4
        return abs(d) <= c.grasp_yaw

    def _settle(self) -> None:
        """Where a just-released leg comes to rest."""
        c = self.config
        foot = leg_foot(self.leg_pos, self.leg_rot)
        top_z = self.layout.top_z
        yaw = yaw_of(self.leg_rot)
        upright = tilt_of(self.leg_rot) <= c.tilt_tol
        if upright and foot[2] <= top_z + c.drop_tol:
            holes = hole_positions(self.layout.top_xy, self.layout.top_yaw)
            d = np.linalg.norm(holes - foot[:2], axis=1)
            k = int(np.argmin(d))
            if d[k] <= c.hole_tol:
                self.leg_pos = np.array([holes[k, 0], holes[k, 1],
                                         top_z - INSERT_DEPTH + LEG_HALF[2]])
                self.leg_rot = rot_z(yaw)
                return
        surface = top_z if self._over_top(foot[:2]) else 0.0
        if upright and foot[2] - surface <= c.stand_drop:
            self.leg_pos = np.array([foot[0], foot[1], surface + LEG_HALF[2]])
            self.leg_rot = rot_z(yaw)
            return
        axis = self.leg_rot[:, 2]
        heading = math.atan2(axis[1], axis[0]) if math.hypot(axis[0], axis[1]) > 1e-6 else yaw
        self.leg_pos = np.array([self.leg_pos[0], self.leg_pos[1], surface + LEG_HALF[0]])
        self.leg_rot = rot_z(heading) @ rot_y(math.pi / 2)

    def _over_top(self, xy: np.ndarray) -> bool:
        """Whether a table point lies over the tabletop part."""
        local = rot_z(self.layout.top_yaw)[:2, :2].T @ (np.asarray(xy) - self.layout.top_xy)
        return bool(np.all(np.abs(local) <= TABLETOP_HALF[:2]))

    def seated(self) -> bool:
        """Whether the leg stands in the target hole (held or not)."""
        c = self.config
        foot = leg_foot(self.leg_pos, self.leg_rot)
        depth = self.layout.top_z - INSERT_DEPTH
        return (float(np.linalg.norm(foot[:2] - self.target_hole)) <= c.hole_tol
                and -c.over_depth <= float(foot[2]) - depth <= c.depth_tol
                and tilt_of(self.leg_rot) <= c.tilt_tol)

    def _track_turn(self) -> None:
        yaw = yaw_of(self.leg_rot)
        if self.seated():
            if self._last_yaw is not None:
                self.turn += abs(wrap(yaw - self._last_yaw))
            self._last_yaw = yaw
        else:
            self.turn = 0.0
            self._last_yaw = None

    def success(self) -> bool:
        """The leg, released, seated in the target hole and turned by ``min_turn`` there."""
        return (not self.grasped and self.seated()
                and self.turn >= self.config.min_turn)

    # ------------------------------------------------------------------ rendering
    def render(self, look: str = "sim", *, gap: float = 0.5, seed: int = 0, episode: int = 0,
               height: int = 240, width: int = 320, state: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """The current (or given) state as a demo frame in the ``sim`` or ``real`` look.

        Uses the demo's own :class:`.source.DemoRenderer` on this episode's layout; the real
        look is that of real episode ``episode`` of ``seed`` at ``gap``, the sensor noise
        that of step :attr:`t`.

        Returns
        -------
        image : ndarray (H, W, 3) uint8
        mask : ndarray (H, W) uint8 in {0, 1}
        """
        from s2r.worlds.demo.source import DemoRenderer

        if look not in LOOKS:
            raise ValueError(f"TaskSim.render: look must be 'sim' or 'real', got {look!r}")
        key = (look, float(gap), int(seed), int(episode), int(height), int(width))
        renderer = self._renderers.get(key)
        if renderer is None:
            renderer = DemoRenderer(
                states=np.zeros((1, len(STATE_NAMES)), np.float32), domain=np.array([look]),
                local_episode=np.array([int(episode)]), step=np.zeros(1, int),
                layouts={(look, int(episode)): self.layout}, seed=seed, gap=gap,
                height=height, width=width, cache_episodes=1)
            self._renderers[key] = renderer
        renderer.states[0] = self.state if state is None else state
        renderer.step[0] = self.t
        image, mask = renderer.render(0)
        return image.copy(), mask.copy()


def replay(episode, config: TaskConfig | None = None) -> tuple[TaskSim, np.ndarray]:
    """Run a scripted :class:`.policy.Episode`'s actions through a :class:`TaskSim`.

    The simulator starts from the episode's layout and first state; the actions are replayed
    open loop (the scripted policy plans its whole trajectory from the layout).

    Returns
    -------
    sim : TaskSim
        After the last action (``sim.success()`` tells the outcome).
    states : ndarray (steps, 22) float32
        The simulated state of every frame (row 0 is the start).
    """
    sim = TaskSim(config)
    states = [sim.reset(episode.layout, episode.states[0])]
    for action in episode.actions:
        states.append(sim.step(action))
    return sim, np.stack(states[:len(episode.actions)])
