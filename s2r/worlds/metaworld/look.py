"""The real look of Meta-World: appearance shifts of a MuJoCo model, growing with the gap.

A look changes only fields the physics never reads, and only on the renderer's own copy of
the model (:mod:`.paint`; the simulated environments are never touched):

* **colours** of five groups of geoms -- the robot, the table, the retaining walls, the floor,
  the task's objects -- each multiplied by its own RGB gain ``exp(gap * 0.5 * u)`` (``u``
  uniform in [-1, 1] per channel, a brightness term on top) and mixed toward a colour of its
  own by up to ``0.4 * gap``: ``geom_rgba``, and ``mat_rgba``
  for geoms drawn with a material (a geom whose rgba is MuJoCo's default ``(0.5, 0.5, 0.5, 1)``
  takes its material's colour, so its material is tinted instead);
* **lights**: every light's diffuse colour and intensity (``exp(gap * 0.5 * u)`` a channel),
  an ambient term (up to ``0.15 * gap``), its direction turned by up to ``30 * gap`` degrees,
  and the headlight's ambient and diffuse intensity (``exp(gap * 0.4 * u)``);
* **the camera**: moved by up to ``3 * gap`` cm, turned by up to ``2 * gap`` degrees about a
  random axis, its field of view scaled by ``exp(gap * 0.06 * u)``;
* **textures** (the table's wood, the floor, the walls, the objects', the sky): each one's
  contrast, colour balance and a low-frequency stain pattern, ``base + gap * (shifted -
  base)``.

Every shift is ``gap`` times a draw that does not depend on the gap, so one seed's looks at
gaps 0.5 and 1 differ only in size, and at gap 0 every field is its base value exactly (the
real look at gap 0 is the sim look pixel for pixel: tested).

Draws (:class:`LookDraw`): the colours, lights and camera of episode ``e`` of look seed ``s``
come from ``default_rng([s, 20, e])``; the textures of a whole set of episodes (a dataset's
real episodes, a batch of rollouts) from ``default_rng([s, 21])`` -- uploading a changed
texture costs ~30 ms per 512 x 512 texture, so textures change per seed, not per episode.

Kinds of shift (:data:`SHIFTS`, a spec's ``shift=``): ``all`` is every part above; ``lighting``
the lights alone, ``texture`` the colours and textures alone, ``camera`` the camera alone --
each exactly its part of ``all`` (the same draws, scaled by the gap the same way), the other
parts left at their base values. ``distractors`` adds objects to the scene and nothing else:
up to :data:`MAX_DISTRACTORS` boxes, spheres, cylinders and capsules standing on the table,
``round(gap * MAX_DISTRACTORS)`` of them, each ``0.4 + 0.6 * gap`` times its drawn size
(:func:`distractor_geoms`; drawn from ``default_rng([s, 22, e])``). They are added to the
renderer's scene after MuJoCo has built it from the model (:mod:`.paint`), so no model, and no
physics, ever holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

__all__ = ["DistractorDraw", "GROUPS", "LookDraw", "MAX_DISTRACTORS", "PARTS", "SHIFTS",
           "TextureDraw", "apply_look", "distractor_geoms", "draw_look", "draw_textures",
           "restore_look", "texture_data"]

#: Groups of geoms that share a colour shift.
GROUPS = ("robot", "table", "walls", "floor", "objects")
#: The kinds of shift a spec's ``shift=`` names, and the parts of the look each one applies.
PARTS = {"all": ("texture", "lighting", "camera"), "lighting": ("lighting",),
         "texture": ("texture",), "camera": ("camera",), "distractors": ("distractors",)}
SHIFTS = tuple(PARTS)
#: The most distractors a look draws (all of them at gap 1).
MAX_DISTRACTORS = 8
#: Where distractors stand: the table top inside its retaining walls (world x, y ranges, m).
_TABLE_X, _TABLE_Y = (-0.6, 0.6), (0.3, 0.95)
_LOOK_STREAM, _TEXTURE_STREAM, _DISTRACTOR_STREAM = 20, 21, 22
#: MuJoCo's geom types (``mjtGeom``) a distractor takes.
_SPHERE, _CAPSULE, _CYLINDER, _BOX = 2, 3, 5, 6
_DISTRACTOR_TYPES = (_BOX, _SPHERE, _CYLINDER, _CAPSULE)
_MAX_LIGHTS, _MAX_TEXTURES = 8, 16
_DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)


@dataclass(frozen=True)
class LookDraw:
    """The random part of one episode's look (scaled by the gap when applied)."""

    colour: np.ndarray          # (groups, 3) in [-1, 1]
    brightness: np.ndarray      # (groups,) in [-1, 1]
    paint: np.ndarray           # (groups, 3) in [0, 1]: a colour each group is mixed toward
    mix: np.ndarray             # (groups,) in [0, 1]: how much
    light: np.ndarray           # (lights, 3) in [-1, 1]
    ambient: np.ndarray         # (lights,) in [0, 1]
    light_axis: np.ndarray      # (lights, 3) unit vectors
    light_angle: np.ndarray     # (lights,) in [-1, 1]
    headlight: np.ndarray       # (2,) in [-1, 1]
    cam_shift: np.ndarray       # (3,) in the unit ball
    cam_axis: np.ndarray        # (3,) unit vector
    cam_angle: float            # in [-1, 1]
    fovy: float                 # in [-1, 1]
    parts: tuple = PARTS["all"]                     # the parts of the look applied
    distractors: Optional["DistractorDraw"] = None


@dataclass(frozen=True)
class DistractorDraw:
    """The random part of one episode's distractors (:data:`MAX_DISTRACTORS` of each)."""

    kind: np.ndarray            # (n,) index into _DISTRACTOR_TYPES
    xy: np.ndarray              # (n, 2) in [0, 1]: where on the table
    size: np.ndarray            # (n, 3) half sizes at gap 1 (m)
    yaw: np.ndarray             # (n,) radians
    rgb: np.ndarray             # (n, 3) in [0.1, 0.9]


@dataclass(frozen=True)
class TextureDraw:
    """The random part of one texture set (per look seed)."""

    seed: int
    strength: float             # the gap the textures are shifted by


def _unit(rng, n: int) -> np.ndarray:
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def draw_look(seed: int, episode: int, shift: str = "all") -> LookDraw:
    """Episode ``episode``'s look draws for look seed ``seed``, applying the parts of the
    kind of shift ``shift`` (:data:`PARTS`; every kind shares the draws of ``all``)."""
    draw = _draw_all(seed, episode)
    if shift == "all":
        return draw
    parts = PARTS[shift]
    return replace(draw, parts=parts, distractors=draw_distractors(seed, episode)
                   if "distractors" in parts else None)


def draw_distractors(seed: int, episode: int) -> DistractorDraw:
    """Episode ``episode``'s distractors for look seed ``seed``."""
    rng = np.random.default_rng([int(seed), _DISTRACTOR_STREAM, int(episode)])
    n = MAX_DISTRACTORS
    return DistractorDraw(kind=rng.integers(0, len(_DISTRACTOR_TYPES), n),
                          xy=rng.uniform(0, 1, (n, 2)), size=rng.uniform(0.03, 0.065, (n, 3)),
                          yaw=rng.uniform(0, np.pi, n), rgb=rng.uniform(0.1, 0.9, (n, 3)))


def _draw_all(seed: int, episode: int) -> LookDraw:
    rng = np.random.default_rng([int(seed), _LOOK_STREAM, int(episode)])
    g, n = len(GROUPS), _MAX_LIGHTS
    shift = _unit(rng, 1)[0] * rng.uniform() ** (1 / 3)
    return LookDraw(colour=rng.uniform(-1, 1, (g, 3)), brightness=rng.uniform(-1, 1, g),
                    paint=rng.uniform(0, 1, (g, 3)), mix=rng.uniform(0, 1, g),
                    light=rng.uniform(-1, 1, (n, 3)), ambient=rng.uniform(0, 1, n),
                    light_axis=_unit(rng, n), light_angle=rng.uniform(-1, 1, n),
                    headlight=rng.uniform(-1, 1, 2), cam_shift=shift,
                    cam_axis=_unit(rng, 1)[0], cam_angle=float(rng.uniform(-1, 1)),
                    fovy=float(rng.uniform(-1, 1)))


def draw_textures(seed: int, gap: float, shift: str = "all") -> Optional[TextureDraw]:
    """The texture set of look seed ``seed`` at ``gap``; None (the base textures) for a kind
    of shift that leaves textures alone."""
    if "texture" not in PARTS[shift]:
        return None
    return TextureDraw(seed=int(seed), strength=float(gap))


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix of ``angle`` radians about the unit ``axis`` (the identity, exactly,
    at angle 0)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


@dataclass
class Appearance:
    """A model's base appearance and which group every geom and material belongs to (read
    once from the untouched model)."""

    geom_rgba: np.ndarray
    mat_rgba: np.ndarray
    light_diffuse: np.ndarray
    light_ambient: np.ndarray
    light_dir: np.ndarray
    headlight: np.ndarray       # (2, 3): ambient, diffuse
    cam_pos: np.ndarray
    cam_quat: np.ndarray
    cam_fovy: np.ndarray
    tex_data: np.ndarray
    geom_group: np.ndarray      # (ngeom,) index into GROUPS, or -1: tint its material
    mat_group: np.ndarray       # (nmat,) index into GROUPS

    @classmethod
    def of(cls, model, body_names: list) -> "Appearance":
        """The base appearance of ``model`` (``body_names[i]``: the name of body ``i``)."""
        root = np.asarray(model.body_rootid)
        robot_root = root[body_names.index("base")] if "base" in body_names else -2
        by_root = {root[body_names.index(n)]: GROUPS.index(g)
                   for n, g in (("tablelink", "table"), ("RetainingWall", "walls"))
                   if n in body_names}
        body_group = np.array([0 if r == robot_root else by_root.get(r, 3 if b == 0 else 4)
                               for b, r in enumerate(root)])
        group = body_group[np.asarray(model.geom_bodyid)]
        mat_group = np.full(model.nmat, 4)
        geom_group = group.copy()
        for g in range(model.ngeom):
            mat = int(model.geom_matid[g])
            if mat >= 0:
                mat_group[mat] = group[g]
                if tuple(np.round(model.geom_rgba[g], 6)) == _DEFAULT_RGBA:
                    geom_group[g] = -1
        hl = model.vis.headlight
        return cls(geom_rgba=np.array(model.geom_rgba), mat_rgba=np.array(model.mat_rgba),
                   light_diffuse=np.array(model.light_diffuse),
                   light_ambient=np.array(model.light_ambient),
                   light_dir=np.array(model.light_dir),
                   headlight=np.array([hl.ambient, hl.diffuse], dtype=np.float64),
                   cam_pos=np.array(model.cam_pos), cam_quat=np.array(model.cam_quat),
                   cam_fovy=np.array(model.cam_fovy), tex_data=np.array(model.tex_data),
                   geom_group=geom_group, mat_group=mat_group)


def restore_look(model, base: Appearance) -> None:
    """Set ``model``'s colours, lights and cameras back to ``base`` (the sim look; textures:
    :func:`texture_data`)."""
    model.geom_rgba[:], model.mat_rgba[:] = base.geom_rgba, base.mat_rgba
    model.light_diffuse[:], model.light_ambient[:] = base.light_diffuse, base.light_ambient
    model.light_dir[:] = base.light_dir
    model.vis.headlight.ambient[:], model.vis.headlight.diffuse[:] = base.headlight
    model.cam_pos[:], model.cam_quat[:], model.cam_fovy[:] = (base.cam_pos, base.cam_quat,
                                                              base.cam_fovy)


def apply_look(model, base: Appearance, draw: LookDraw, gap: float, camera: int) -> None:
    """Set ``model``'s colours, lights and camera ``camera`` to the look of ``draw`` at
    ``gap``: the parts ``draw.parts`` names shifted, the others at their base values (the
    base appearance at gap 0, exactly). Textures: :func:`texture_data`; distractors:
    :func:`distractor_geoms`. The caller runs ``mj_camlight`` afterwards (camera and light
    edits need it)."""
    gap = float(gap)
    restore_look(model, base)
    if "texture" in draw.parts:
        _recolour(model, base, draw, gap)
    if "lighting" in draw.parts:
        _relight(model, base, draw, gap)
    if "camera" in draw.parts:
        _move_camera(model, base, draw, gap, camera)


def _recolour(model, base: Appearance, draw: LookDraw, gap: float) -> None:
    """The colours of every group of geoms and of their materials."""
    gain = np.exp(gap * (0.5 * draw.colour + 0.3 * draw.brightness[:, None]))      # (G, 3)
    weight = (gap * 0.4 * draw.mix)[:, None]                                        # (G, 1)

    def recolour(rgb: np.ndarray, group: np.ndarray) -> np.ndarray:
        return np.clip(rgb * gain[group] * (1 - weight[group]) + draw.paint[group] * weight[group],
                       0, 1)

    tinted = base.geom_group >= 0
    rgba = base.geom_rgba.copy()
    rgba[tinted, :3] = recolour(base.geom_rgba[tinted, :3], base.geom_group[tinted])
    model.geom_rgba[:] = rgba
    mat = base.mat_rgba.copy()
    mat[:, :3] = recolour(base.mat_rgba[:, :3], base.mat_group)
    model.mat_rgba[:] = mat


def _relight(model, base: Appearance, draw: LookDraw, gap: float) -> None:
    """Every light's colour, ambient term and direction, and the headlight."""
    n = len(base.light_diffuse)
    model.light_diffuse[:] = np.clip(base.light_diffuse * np.exp(gap * 0.5 * draw.light[:n]),
                                     0, 1)
    model.light_ambient[:] = base.light_ambient + gap * 0.15 * draw.ambient[:n, None]
    turned = np.stack([_rotation(draw.light_axis[i], gap * np.deg2rad(30) * draw.light_angle[i])
                       @ base.light_dir[i] for i in range(n)]) if n else base.light_dir
    model.light_dir[:] = turned
    hl = model.vis.headlight
    hl.ambient[:] = base.headlight[0] * np.exp(gap * 0.4 * draw.headlight[0])
    hl.diffuse[:] = base.headlight[1] * np.exp(gap * 0.4 * draw.headlight[1])


def _move_camera(model, base: Appearance, draw: LookDraw, gap: float, camera: int) -> None:
    """Camera ``camera``'s position, orientation and field of view."""
    pos, quat, fovy = base.cam_pos.copy(), base.cam_quat.copy(), base.cam_fovy.copy()
    pos[camera] = base.cam_pos[camera] + gap * 0.03 * draw.cam_shift
    half = 0.5 * gap * np.deg2rad(2.0) * draw.cam_angle
    turn = np.array([np.cos(half), *(np.sin(half) * draw.cam_axis)])
    quat[camera] = _quat_mul(base.cam_quat[camera], turn)
    fovy[camera] = base.cam_fovy[camera] * np.exp(gap * 0.06 * draw.fovy)
    model.cam_pos[:], model.cam_quat[:], model.cam_fovy[:] = pos, quat, fovy


def distractor_geoms(draw: Optional[DistractorDraw], gap: float) -> list:
    """The distractors of ``draw`` at ``gap``: ``round(gap * MAX_DISTRACTORS)`` of them, each
    ``0.4 + 0.6 * gap`` times its drawn size, standing on the table; a list of ``(type,
    size (3,), pos (3,), mat (9,), rgba (4,))`` for ``mujoco.mjv_initGeom`` (``type`` a
    ``mjtGeom``; ``size`` as a model geom's). None or gap 0: none."""
    if draw is None:
        return []
    n = int(round(float(gap) * MAX_DISTRACTORS))
    scale = 0.4 + 0.6 * float(gap)
    out = []
    for i in range(n):
        kind = _DISTRACTOR_TYPES[int(draw.kind[i])]
        a, b, c = draw.size[i] * scale
        size, height = {_BOX: ((a, b, c), c), _SPHERE: ((a, 0, 0), a),
                        _CYLINDER: ((a, c, 0), c), _CAPSULE: ((a, c, 0), a + c)}[kind]
        x = _TABLE_X[0] + draw.xy[i, 0] * (_TABLE_X[1] - _TABLE_X[0])
        y = _TABLE_Y[0] + draw.xy[i, 1] * (_TABLE_Y[1] - _TABLE_Y[0])
        mat = _rotation(np.array([0.0, 0.0, 1.0]), float(draw.yaw[i]))
        out.append((kind, np.array(size, dtype=np.float64), np.array([x, y, height]),
                    mat.reshape(-1), np.array([*draw.rgb[i], 1.0])))
    return out


def _stains(rng, h: int, w: int) -> np.ndarray:
    """A low-frequency pattern ``(h, w)`` in about [-1, 1]: an 8 x 8 random grid, smoothly
    upsampled."""
    grid = rng.uniform(-1, 1, (9, 9))
    ys, xs = np.linspace(0, 8, h), np.linspace(0, 8, w)
    y0, x0 = np.minimum(ys.astype(int), 7), np.minimum(xs.astype(int), 7)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    fy, fx = fy * fy * (3 - 2 * fy), fx * fx * (3 - 2 * fx)
    a, b = grid[y0][:, x0], grid[y0][:, x0 + 1]
    c, d = grid[y0 + 1][:, x0], grid[y0 + 1][:, x0 + 1]
    return (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy


def texture_data(model, base: Appearance, draw: TextureDraw) -> dict:
    """The shifted bytes of every texture ``{texture id: uint8 array}`` for ``draw`` (each
    texture ``base + strength * (shifted - base)``; the base bytes at strength 0, exactly)."""
    out = {}
    for t in range(min(int(model.ntex), _MAX_TEXTURES)):
        rng = np.random.default_rng([draw.seed, _TEXTURE_STREAM, t])
        adr, w, h, c = (int(model.tex_adr[t]), int(model.tex_width[t]), int(model.tex_height[t]),
                        int(model.tex_nchannel[t]))
        raw = base.tex_data[adr:adr + w * h * c].reshape(h, w, c).astype(np.float64)
        if c < 3:
            out[t] = base.tex_data[adr:adr + w * h * c].copy()
            continue
        mean = raw[..., :3].mean(axis=(0, 1))
        contrast = np.exp(0.5 * rng.uniform(-1, 1))
        balance = np.exp(0.25 * rng.uniform(-1, 1, 3))
        stain = _stains(rng, h, w)[..., None] * 40.0 * rng.uniform(0.3, 1.0)
        shifted = (raw[..., :3] - mean) * contrast + mean * balance + stain
        new = raw.copy()
        new[..., :3] = raw[..., :3] + draw.strength * (shifted - raw[..., :3])
        out[t] = np.clip(np.rint(new), 0, 255).astype(np.uint8).reshape(-1)
    return out
