"""Geometry of the demo scene: camera, solids, the one-leg assembly layout and the arm.

World frame (metres): the work table's top is the plane ``z = 0``, ``x`` points to the
camera's right, ``y`` away from the camera (towards the robot), ``z`` up. The robot stands at
the back edge of the table; a fixed front camera looks at it across the table, like the front
camera of FurnitureBench's ``one_leg`` task.

Everything here is pure numpy: no drawing (see :mod:`.render`), no randomness except through
an explicitly passed ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

# ---------------------------------------------------------------------------- dimensions
TABLE_X = (-0.95, 0.95)          # work-table top extent along x (m)
TABLE_Y = (-0.14, 0.78)          # ... along y
TABLE_THICKNESS = 0.04
TABLE_HEIGHT = 0.75              # floor is at z = -TABLE_HEIGHT
WALL_Y = 1.25                    # the back wall plane

ROBOT_BASE = np.array([0.0, 0.62, 0.0])
SHOULDER_HEIGHT = 0.20
UPPER_ARM = 0.37                 # shoulder -> elbow
FOREARM = 0.37                   # elbow -> wrist joint
WRIST_DROP = 0.08                # wrist joint -> flange (vertical when the gripper points down)
FLANGE_TO_TIP = 0.11             # flange -> fingertip centre (the end-effector point)

LEG_HALF = np.array([0.015, 0.015, 0.06])       # a furniture leg (square section)
TABLETOP_HALF = np.array([0.085, 0.085, 0.0125])  # the furniture tabletop part
FIXTURE_HEIGHT = 0.015                            # the plate the tabletop rests on
HOLE_INSET = 0.022                                # hole centre inset from the tabletop corner
GRIPPER_OPEN = 0.08                               # finger gap when open (m)
GRASP_BELOW_TOP = 0.025                           # fingertips this far below the leg's top


# ---------------------------------------------------------------------------- rotations
def rot_z(angle: float) -> np.ndarray:
    """Rotation matrix ``(3, 3)`` about the world z axis by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_x(angle: float) -> np.ndarray:
    """Rotation matrix ``(3, 3)`` about the x axis by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(angle: float) -> np.ndarray:
    """Rotation matrix ``(3, 3)`` about the y axis by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def gripper_rotation(yaw: float, tilt_x: float = 0.0, tilt_y: float = 0.0) -> np.ndarray:
    """Orientation ``(3, 3)`` of a top-down gripper: its z axis points down, turned by ``yaw``.

    ``tilt_x``/``tilt_y`` (radians) tip the approach axis slightly off vertical.
    """
    return rot_x(tilt_x) @ rot_y(tilt_y) @ rot_z(yaw) @ rot_x(math.pi)


def rot6d(rot: np.ndarray) -> np.ndarray:
    """The 6-D rotation representation: first two columns of ``rot``, shape ``(6,)``.

    This is FurnitureBench's ``rot_6d`` (Zhou et al. 2019): ``[r00, r10, r20, r01, r11, r21]``.
    """
    return np.concatenate([rot[:, 0], rot[:, 1]])


def _unit(v) -> tuple:
    """``v / |v|`` for a 3-vector, as a tuple of floats (plain math: called per frame)."""
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return (v[0] / n, v[1] / n, v[2] / n)


def _cross(a, b) -> tuple:
    """Cross product of two 3-vectors, as a tuple of floats."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def rot_from_6d(r6: np.ndarray) -> np.ndarray:
    """Inverse of :func:`rot6d` by Gram-Schmidt: ``(6,)`` -> rotation matrix ``(3, 3)``."""
    a = [float(v) for v in r6[:3]]
    b = [float(v) for v in r6[3:6]]
    x = _unit(a)
    d = x[0] * b[0] + x[1] * b[1] + x[2] * b[2]
    y = _unit([b[k] - d * x[k] for k in range(3)])
    return np.array([x, y, _cross(x, y)]).T


# ---------------------------------------------------------------------------- camera
@dataclass(frozen=True)
class Camera:
    """A pinhole camera. Pixel ``(u, v)``: ``u`` to the right, ``v`` down, integer = centre.

    Attributes
    ----------
    position : ndarray (3,)
        Optical centre in world metres.
    world_to_cam : ndarray (3, 3)
        Rows are the camera's right, down and forward axes in world coordinates.
    focal : float
        Focal length in pixels (square pixels).
    height, width : int
        Image size in pixels.
    """

    position: np.ndarray
    world_to_cam: np.ndarray
    focal: float
    height: int
    width: int

    @property
    def center(self) -> tuple[float, float]:
        """Principal point ``(cu, cv)`` in pixels."""
        return (self.width - 1) / 2.0, (self.height - 1) / 2.0

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project world points ``(..., 3)`` to pixels ``(..., 2)`` and depths ``(...,)`` (m)."""
        cam = (np.asarray(points, dtype=np.float64) - self.position) @ self.world_to_cam.T
        depth = np.maximum(cam[..., 2], 1e-6)
        uv = cam[..., :2] * (self.focal / depth)[..., None] + self.center
        return uv, depth

    def rays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World-frame direction ``(dx, dy, dz)`` of the ray through every pixel centre.

        Each component is ``(H, W)`` float64 (not normalised: unit depth along the axis).
        """
        cu, cv = self.center
        u = (np.arange(self.width) - cu) / self.focal
        v = (np.arange(self.height) - cv) / self.focal
        r = self.world_to_cam            # d = u * right + v * down + forward
        return tuple(u[None, :] * r[0, k] + v[:, None] * r[1, k] + r[2, k] for k in range(3))

    def plane_hits(self, axis: int, value: float) -> tuple[np.ndarray, np.ndarray]:
        """Where each pixel's ray meets the plane ``world[axis] = value``.

        Returns
        -------
        points : tuple of 3 ndarray (H, W)
            World ``x, y, z`` of the hit (meaningless where ``hit`` is False).
        hit : ndarray (H, W) bool
            True where the ray reaches the plane in front of the camera.
        """
        d = self.rays()
        toward = (value - self.position[axis]) * d[axis]
        hit = toward > 1e-9
        t = (value - self.position[axis]) / np.where(hit, d[axis], 1.0)
        t = np.where(hit, t, 0.0)
        return tuple(self.position[k] + t * d[k] for k in range(3)), hit

    def table_coordinates(self, z: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World ``(x, y)`` where each pixel's ray meets the plane ``z``, and a hit mask.

        Returns
        -------
        x, y : ndarray (H, W) float32
            Plane coordinates in metres (undefined where ``hit`` is False).
        hit : ndarray (H, W) bool
            True where the ray goes down towards the plane.
        """
        (x, y, _), hit = self.plane_hits(2, z)
        return x.astype(np.float32), y.astype(np.float32), hit


# the reference front camera: where it stands, where it looks, its field of view on 320x240
CAMERA_POSITION = np.array([0.0, -0.62, 0.78])
CAMERA_TARGET = np.array([0.0, 0.32, 0.24])
CAMERA_HFOV_DEG = 56.0


def look_at(position: np.ndarray, target: np.ndarray) -> np.ndarray:
    """World-to-camera rotation ``(3, 3)`` (rows right, down, forward) looking at ``target``."""
    fwd = np.asarray(target, float) - np.asarray(position, float)
    fwd = fwd / np.linalg.norm(fwd)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right = right / np.linalg.norm(right)
    down = np.cross(fwd, right)
    return np.stack([right, down, fwd])


def make_camera(height: int, width: int, *, shift: np.ndarray | None = None,
                turn: np.ndarray | None = None) -> Camera:
    """The fixed front camera for an ``height x width`` image.

    The field of view of a 4:3 image is fitted inside any aspect ratio, so the whole scene
    stays visible (other ratios see more wall or table at the sides).

    Parameters
    ----------
    shift : ndarray (3,), optional
        Offset of the camera position in metres (the real camera's mounting error).
    turn : ndarray (3,), optional
        Small (yaw, pitch, roll) in radians applied after looking at the scene.
    """
    position = CAMERA_POSITION + (0.0 if shift is None else np.asarray(shift, float))
    rot = look_at(position, CAMERA_TARGET)
    if turn is not None:
        yaw, pitch, roll = (float(a) for a in turn)
        # in camera axes: yaw about "down", pitch about "right", roll about "forward"
        rot = rot_z(roll) @ rot_x(pitch) @ rot_y(yaw) @ rot
    tan_h = math.tan(math.radians(CAMERA_HFOV_DEG) / 2.0)
    focal = min((width / 2.0) / tan_h, (height / 2.0) / (tan_h * 0.75))
    return Camera(position=position, world_to_cam=rot, focal=float(focal),
                  height=int(height), width=int(width))


# ---------------------------------------------------------------------------- meshes
@dataclass(frozen=True)
class Mesh:
    """A convex polyhedron in local coordinates (unit size; scaled per solid).

    Attributes
    ----------
    vertices : ndarray (V, 3)
    faces : tuple of tuple of int
        Vertex indices of each face, in order around the face.
    normals : ndarray (F, 3)
        Outward unit normal of each face (local frame).
    """

    vertices: np.ndarray
    faces: tuple
    normals: np.ndarray

    @cached_property
    def first(self) -> np.ndarray:
        """Index of one vertex of each face (a point on the face's plane), ``(F,)``."""
        return np.array([f[0] for f in self.faces])


def prism_mesh(sides: int, phase: float = 0.0) -> Mesh:
    """A right prism over a regular ``sides``-gon of circumradius 1, ``z`` in ``[-1, 1]``.

    ``prism_mesh(4, pi/4)`` scaled by ``half * sqrt(2)`` in x, y is a box; larger ``sides``
    approximate a cylinder.
    """
    ang = phase + 2.0 * np.pi * np.arange(sides) / sides
    ring = np.stack([np.cos(ang), np.sin(ang)], axis=1)
    verts = np.concatenate([np.c_[ring, -np.ones(sides)], np.c_[ring, np.ones(sides)]])
    faces = [(i, (i + 1) % sides, sides + (i + 1) % sides, sides + i) for i in range(sides)]
    mid = phase + 2.0 * np.pi * (np.arange(sides) + 0.5) / sides
    normals = [np.array([math.cos(a), math.sin(a), 0.0]) for a in mid]
    faces.append(tuple(range(sides, 2 * sides)))    # top
    normals.append(np.array([0.0, 0.0, 1.0]))
    faces.append(tuple(range(sides)))               # bottom
    normals.append(np.array([0.0, 0.0, -1.0]))
    return Mesh(vertices=verts, faces=tuple(faces), normals=np.array(normals))


_SQUARE = prism_mesh(4, math.pi / 4)
BOX = Mesh(vertices=_SQUARE.vertices * [math.sqrt(2), math.sqrt(2), 1.0], faces=_SQUARE.faces,
           normals=_SQUARE.normals)   # unit cube [-1, 1]^3
CYLINDER = prism_mesh(10)


@dataclass
class Solid:
    """One coloured convex object: ``world = center + rot @ (half * local_vertex)``.

    Attributes
    ----------
    mesh : Mesh
    center : ndarray (3,)
    rot : ndarray (3, 3)
    half : ndarray (3,)
        Half extents along the local axes (m).
    color : tuple of 3 int
        Base RGB colour (0..255), shaded per face by the renderer.
    task : bool
        Whether its pixels belong to the task-relevant mask (arm, gripper, parts).
    """

    mesh: Mesh
    center: np.ndarray
    rot: np.ndarray
    half: np.ndarray
    color: tuple
    task: bool = False

    @cached_property
    def world_vertices(self) -> np.ndarray:
        """Vertices in world coordinates, ``(V, 3)`` (computed once; do not move a Solid)."""
        return self.center + (self.mesh.vertices * self.half) @ self.rot.T

    @cached_property
    def world_normals(self) -> np.ndarray:
        """Outward unit face normals in world coordinates, ``(F, 3)``."""
        n = (self.mesh.normals / self.half) @ self.rot.T
        return n / np.sqrt(np.einsum("ij,ij->i", n, n))[:, None]


def box(center, half, color, *, rot=None, task=False) -> Solid:
    """A box solid with half extents ``half`` (m)."""
    return Solid(BOX, np.asarray(center, float), np.eye(3) if rot is None else rot,
                 np.asarray(half, float), color, task)


def cylinder(center, radius, half_height, color, *, rot=None, task=False) -> Solid:
    """A (10-sided) cylinder solid standing along its local z axis."""
    return Solid(CYLINDER, np.asarray(center, float), np.eye(3) if rot is None else rot,
                 np.array([radius, radius, half_height], float), color, task)


def segment_box(a: np.ndarray, b: np.ndarray, half_width: float, color, *, task=True,
                extend: float = 0.0) -> Solid:
    """A box from point ``a`` to ``b`` with a square cross-section (an arm link)."""
    axis = [float(bk - ak) for ak, bk in zip(a, b)]
    length = math.sqrt(sum(v * v for v in axis))
    z = _unit(axis) if length > 1e-9 else (0.0, 0.0, 1.0)
    x = (z[1], -z[0], 0.0)                       # z x (0, 0, 1): horizontal, across the link
    x = _unit(x) if abs(x[0]) + abs(x[1]) > 1e-6 else (1.0, 0.0, 0.0)
    rot = np.array([x, _cross(z, x), z]).T
    return box((a + b) / 2.0, [half_width, half_width, length / 2.0 + extend], color,
               rot=rot, task=task)


# ---------------------------------------------------------------------------- palette (sim)
COLORS = {
    "wall": (196, 201, 208),
    "floor": (92, 94, 98),
    "table": (150, 153, 158),
    "table_side": (112, 114, 119),
    "table_leg": (80, 82, 86),
    "fixture": (44, 46, 52),
    "part": (226, 208, 172),       # tabletop part and legs (light 3D-printed plastic)
    "hole": (70, 60, 50),
    "link": (232, 233, 236),       # robot links (white)
    "joint": (62, 64, 70),         # robot joints (dark grey)
    "hand": (200, 202, 206),
    "finger": (48, 50, 56),
}


# ---------------------------------------------------------------------------- task layout
@dataclass
class Layout:
    """Where one episode's parts are (sampled once per episode).

    Attributes
    ----------
    top_xy : ndarray (2,)
        Tabletop part centre on its fixture (m).
    top_yaw : float
        Tabletop rotation about z (rad).
    hole_xy : ndarray (2,)
        Centre of the hole the leg goes into (one corner of the tabletop).
    leg_xy : ndarray (2,)
        Where the leg to insert stands at the start.
    leg_yaw : float
    spare_legs : ndarray (k, 3)
        ``(x, y, yaw)`` of the other (static) legs.
    """

    top_xy: np.ndarray
    top_yaw: float
    hole_xy: np.ndarray
    leg_xy: np.ndarray
    leg_yaw: float
    spare_legs: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    @property
    def top_z(self) -> float:
        """Height of the tabletop part's upper surface (m)."""
        return FIXTURE_HEIGHT + 2.0 * TABLETOP_HALF[2]


def hole_positions(top_xy: np.ndarray, top_yaw: float) -> np.ndarray:
    """The four corner holes of the tabletop part, world ``(4, 2)``."""
    d = TABLETOP_HALF[0] - HOLE_INSET
    local = np.array([[d, d], [-d, d], [-d, -d], [d, -d]])
    return top_xy + local @ rot_z(top_yaw)[:2, :2].T


def sample_layout(rng: np.random.Generator) -> Layout:
    """Draw one episode's layout: tabletop on the fixture (right), legs (left), a target hole."""
    top_xy = np.array([rng.uniform(0.08, 0.20), rng.uniform(0.12, 0.24)])
    top_yaw = float(rng.uniform(-0.25, 0.25))
    holes = hole_positions(top_xy, top_yaw)
    hole_xy = holes[int(rng.integers(4))]
    leg_xy = np.array([rng.uniform(-0.30, -0.08), rng.uniform(0.06, 0.32)])
    leg_yaw = float(rng.uniform(-0.6, 0.6))
    n_spare = int(rng.integers(1, 4))
    spare = []
    for k in range(n_spare):  # a loose row of spare legs behind, at the left
        spare.append([-0.42 + 0.07 * k + rng.uniform(-0.015, 0.015),
                      0.44 + rng.uniform(-0.03, 0.05), rng.uniform(-0.6, 0.6)])
    return Layout(top_xy=top_xy, top_yaw=top_yaw, hole_xy=hole_xy, leg_xy=leg_xy,
                  leg_yaw=leg_yaw, spare_legs=np.array(spare, float).reshape(-1, 3))


def leg_solid(center: np.ndarray, rot: np.ndarray) -> Solid:
    """A furniture leg at ``center`` with orientation ``rot`` (long axis = local z)."""
    return box(center, LEG_HALF, COLORS["part"], rot=rot, task=True)


def static_solids(layout: Layout) -> list[Solid]:
    """Solids that do not move during an episode: fixture, tabletop part, spare legs, base."""
    c = COLORS
    top_rot = rot_z(layout.top_yaw)
    tx, ty = layout.top_xy
    solids = []
    # the fixture: a black plate under the tabletop and an L-shaped bracket (back + right)
    plate_half = np.array([TABLETOP_HALF[0] + 0.03, TABLETOP_HALF[1] + 0.03, FIXTURE_HEIGHT / 2])
    solids.append(box([tx, ty, FIXTURE_HEIGHT / 2], plate_half, c["fixture"], rot=top_rot))
    back = top_rot @ np.array([0.0, plate_half[1] - 0.01, 0.0])
    right = top_rot @ np.array([plate_half[0] - 0.01, 0.0, 0.0])
    solids.append(box([tx + back[0], ty + back[1], 0.03], [plate_half[0], 0.01, 0.03],
                      c["fixture"], rot=top_rot))
    solids.append(box([tx + right[0], ty + right[1], 0.03], [0.01, plate_half[1] - 0.02, 0.03],
                      c["fixture"], rot=top_rot))
    # the tabletop part and its four holes
    solids.append(box([tx, ty, FIXTURE_HEIGHT + TABLETOP_HALF[2]], TABLETOP_HALF, c["part"],
                      rot=top_rot, task=True))
    for hx, hy in hole_positions(layout.top_xy, layout.top_yaw):
        solids.append(cylinder([hx, hy, layout.top_z + 0.0005], 0.011, 0.0005, c["hole"],
                               rot=top_rot, task=True))
    for x, y, yaw in layout.spare_legs:
        solids.append(leg_solid(np.array([x, y, LEG_HALF[2]]), rot_z(yaw)))
    # the robot's pedestal (does not move; its turning shoulder is drawn with the arm)
    bx, by, _ = ROBOT_BASE
    solids.append(cylinder([bx, by, 0.02], 0.11, 0.02, c["joint"], task=True))
    solids.append(cylinder([bx, by, SHOULDER_HEIGHT / 2], 0.065, SHOULDER_HEIGHT / 2 - 0.02,
                           c["link"], task=True))
    return solids


# ---------------------------------------------------------------------------- the arm
def arm_joints(ee_pos: np.ndarray, ee_rot: np.ndarray) -> dict:
    """Joint positions of the arm for a fingertip point ``ee_pos`` and gripper ``ee_rot``.

    Analytic inverse kinematics of a base-yaw + two-link planar arm (elbow up) to the wrist
    joint; the wrist then drops to the flange along the gripper's axis.

    Returns
    -------
    dict of ndarray (3,)
        ``shoulder``, ``elbow``, ``wrist``, ``flange`` in world metres.
    """
    approach = ee_rot[:, 2]                      # gripper z axis: from flange to fingertips
    flange = ee_pos - FLANGE_TO_TIP * approach
    wrist = flange - WRIST_DROP * approach
    shoulder = ROBOT_BASE + np.array([0.0, 0.0, SHOULDER_HEIGHT])
    d = wrist - shoulder
    horiz = float(np.hypot(d[0], d[1]))
    reach = min(float(np.hypot(horiz, d[2])), UPPER_ARM + FOREARM - 1e-3)
    # law of cosines: angle at the shoulder between the shoulder->wrist line and the upper arm
    cos_a = (UPPER_ARM ** 2 + reach ** 2 - FOREARM ** 2) / (2 * UPPER_ARM * reach)
    alpha = math.acos(max(-1.0, min(1.0, cos_a)))
    elev = math.atan2(d[2], horiz)
    heading = d[:2] / max(horiz, 1e-9)
    up = elev + alpha                            # elbow up
    elbow = shoulder + UPPER_ARM * np.array([heading[0] * math.cos(up),
                                             heading[1] * math.cos(up), math.sin(up)])
    return {"shoulder": shoulder, "elbow": elbow, "wrist": wrist, "flange": flange}


def arm_solids(ee_pos: np.ndarray, ee_rot: np.ndarray, gripper_width: float) -> list[Solid]:
    """The moving arm: shoulder, links, wrist, hand and two fingers (all task-relevant)."""
    c = COLORS
    j = arm_joints(ee_pos, ee_rot)
    heading = math.atan2(j["wrist"][1] - j["shoulder"][1], j["wrist"][0] - j["shoulder"][0])
    # pitch joints turn about the horizontal axis across the arm's vertical plane
    across = rot_z(heading) @ rot_x(math.pi / 2)
    approach = ee_rot[:, 2]
    open_axis = ee_rot[:, 1]
    solids = [
        cylinder(j["shoulder"], 0.058, 0.06, c["joint"], rot=across, task=True),
        segment_box(j["shoulder"], j["elbow"], 0.04, c["link"]),
        cylinder(j["elbow"], 0.05, 0.052, c["joint"], rot=across, task=True),
        segment_box(j["elbow"], j["wrist"], 0.034, c["link"]),
        cylinder(j["wrist"], 0.04, 0.045, c["joint"], rot=across, task=True),
        segment_box(j["wrist"], j["flange"], 0.028, c["link"]),
        box(j["flange"] + 0.035 * approach, [0.022, 0.07, 0.02], c["hand"], rot=ee_rot,
            task=True),
    ]
    for sign in (-1.0, 1.0):
        centre = ee_pos - 0.005 * approach + sign * (gripper_width / 2 + 0.007) * open_axis
        solids.append(box(centre, [0.011, 0.007, 0.03], c["finger"], rot=ee_rot, task=True))
    return solids


def hand_point(ee_pos: np.ndarray, ee_rot: np.ndarray) -> np.ndarray:
    """World point at the centre of the gripper's hand (always covered by the hand), ``(3,)``."""
    return ee_pos - (FLANGE_TO_TIP - 0.035) * ee_rot[:, 2]


# ---------------------------------------------------------------------------- the room
def room_quads() -> dict:
    """World corners ``(4, 3)`` of the big flat surfaces (drawn before any solid)."""
    x0, x1 = TABLE_X
    y0, y1 = TABLE_Y
    t = TABLE_THICKNESS
    return {
        "floor": np.array([[-4, -0.6, -TABLE_HEIGHT], [4, -0.6, -TABLE_HEIGHT],
                           [4, WALL_Y, -TABLE_HEIGHT], [-4, WALL_Y, -TABLE_HEIGHT]], float),
        "table": np.array([[x0, y0, 0], [x1, y0, 0], [x1, y1, 0], [x0, y1, 0]], float),
        "table_front": np.array([[x0, y0, 0], [x1, y0, 0], [x1, y0, -t], [x0, y0, -t]], float),
    }


def table_leg_solids() -> list[Solid]:
    """The work table's own four legs (seen below its front edge)."""
    x0, x1 = TABLE_X
    y0, y1 = TABLE_Y
    h = (TABLE_HEIGHT - TABLE_THICKNESS) / 2
    out = []
    for x in (x0 + 0.04, x1 - 0.04):
        for y in (y1 - 0.04, y0 + 0.04):
            out.append(box([x, y, -TABLE_THICKNESS - h], [0.03, 0.03, h], COLORS["table_leg"]))
    return out
