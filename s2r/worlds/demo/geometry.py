"""Rotation and leg geometry helpers of the demo's task simulator (:mod:`.task`)."""

from __future__ import annotations

import math

import numpy as np

from s2r.worlds.demo.scene import GRASP_BELOW_TOP, LEG_HALF


def yaw_of(rot: np.ndarray) -> float:
    """Heading of a rotation's x axis about world z."""
    return math.atan2(rot[1, 0], rot[0, 0])


def wrap(a: float) -> float:
    """Angle in [-pi, pi)."""
    return (a + math.pi) % (2 * math.pi) - math.pi


def tilt_of(rot: np.ndarray) -> float:
    """Angle of a leg's long axis (local z) from vertical (either way up)."""
    return math.acos(min(1.0, abs(float(rot[2, 2]))))


def _axis_angle(rot: np.ndarray) -> tuple[np.ndarray, float]:
    """Axis (3,) and angle of a rotation matrix (angle in [0, pi])."""
    c = (np.trace(rot) - 1.0) / 2.0
    angle = math.acos(max(-1.0, min(1.0, c)))
    v = np.array([rot[2, 1] - rot[1, 2], rot[0, 2] - rot[2, 0], rot[1, 0] - rot[0, 1]])
    n = np.linalg.norm(v)
    if n > 1e-9:
        return v / n, angle
    if angle < 1e-6:
        return np.array([0.0, 0.0, 1.0]), 0.0
    # angle ~ pi: the axis is the column of (R + I) with the largest norm
    m = rot + np.eye(3)
    k = int(np.argmax(np.linalg.norm(m, axis=0)))
    return m[:, k] / np.linalg.norm(m[:, k]), angle


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: rotation by ``angle`` about unit ``axis``."""
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def turn_toward(current: np.ndarray, target: np.ndarray, max_angle: float) -> np.ndarray:
    """``current`` rotated toward ``target`` along the geodesic by at most ``max_angle``."""
    axis, angle = _axis_angle(target @ current.T)
    if angle <= max_angle:
        return target.copy()
    return _rotation(axis, max_angle) @ current


def leg_foot(leg_pos: np.ndarray, leg_rot: np.ndarray) -> np.ndarray:
    """The lower end (centre of the lower face) of a leg, ``(3,)``."""
    axis = leg_rot[:, 2] * LEG_HALF[2]
    return leg_pos - axis if axis[2] >= 0 else leg_pos + axis


def grasp_point(leg_pos: np.ndarray, leg_rot: np.ndarray) -> np.ndarray:
    """Where the fingertip point sits when the scripted policy grasps a leg, ``(3,)``."""
    up = leg_rot[:, 2] if leg_rot[2, 2] >= 0 else -leg_rot[:, 2]
    return leg_pos + (LEG_HALF[2] - GRASP_BELOW_TOP) * up
