"""What turns a flat render into something a camera could have taken: the ``real`` look.

One number, the *gap* ``g`` in ``[0, 1]``, scales every effect; at ``g = 0`` each one is
exactly the identity (and skipped), so a real frame equals the sim frame of the same state
pixel for pixel. Per seed (the same lab in every episode):

- camera mounting offset: position shift (up to 2 cm) and turn (up to 0.6 deg), times ``g``;
- materials: wood-grain table top and a painted wall with a whiteboard, poster and shelf,
  blended over the flat colours with weight ``g``.

Per episode (drawn once from ``(seed, episode)``):

- clutter: 4-6 distractor objects (boxes, mugs, cans, books, tape, tools) on the table's
  margins and a cable, each fading in over a gap interval of its own (more of them as ``g``
  rises);
- shadows of every object on the table (strength ``g * 0.35..0.5``, softened);
- lighting: a brightness gradient, a spot and a vignette, and a warm colour temperature,
  interpolated from no change by ``g``;
- optics and sensor (applied by :mod:`s2r.worlds.demo.sensor`): Gaussian blur (sigma ``g *
0.45..0.7`` px at 320 wide), Gaussian sensor
  noise (sigma ``g * 4..7`` grey levels; a per-episode noise field read at an offset drawn
  from ``(seed, episode, step)``),
  JPEG compression at quality ``92 - g * 55..65`` (faded in over ``g`` in ``[0, 0.2]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageChops, ImageDraw, ImageFilter

from s2r.worlds.demo.render import (LABEL_FLOOR, LABEL_OBJECT, LABEL_TABLE, LABEL_TABLE_SIDE,
                                      LABEL_WALL, Layer, draw_solids, gather, render_room,
                                      render_static)
from s2r.worlds.demo.scene import (TABLE_Y, WALL_Y, Camera, Layout, Solid, box, cylinder,
                                     make_camera, rot_z, segment_box, static_solids)

# stream tags for numpy SeedSequence: each kind of randomness has its own stream
_TAG_LOOK, _TAG_ROOM, _TAG_NOISE = 11, 12, 13
_REFERENCE_WIDTH = 320.0     # blur radii are stated for this width and scale with the image

# (x range, y range, tallest allowed) of table regions that never hide the workspace
_CLUTTER_REGIONS = (
    ((-0.74, -0.50), (0.46, 0.74), 0.16),   # back left
    ((0.36, 0.74), (0.46, 0.74), 0.16),     # back right
    ((-0.68, -0.46), (0.14, 0.42), 0.12),   # left side
    ((0.44, 0.68), (0.12, 0.40), 0.12),     # right side
    ((-0.47, -0.37), (0.0, 0.10), 0.05),    # front left (low things only)
    ((0.38, 0.47), (0.0, 0.08), 0.05),      # front right
)
_BRIGHT = ((200, 40, 40), (40, 90, 190), (235, 235, 230), (60, 150, 80), (240, 190, 40),
           (30, 30, 35), (150, 60, 160))


@dataclass
class RealLook:
    """The real-domain appearance of one episode, already scaled by the gap.

    Attributes
    ----------
    gap : float
        In ``[0, 1]``.
    shift, turn : ndarray (3,)
        Camera position offset (m) and (yaw, pitch, roll) turn (rad); the same every episode.
    light_dir : ndarray (3,)
        Unit vector towards the light that casts the shadows.
    shadow : float
        Darkening inside a shadow (0 = none).
    warm : ndarray (3,)
        Per-channel gain of the colour temperature (at gap 1).
    light : dict
        Lighting-field parameters (gradient, spot, vignette, exposure) at gap 1.
    blur : float
        Gaussian blur sigma in pixels at 320 px width.
    noise : float
        Sensor-noise standard deviation (grey levels).
    jpeg_quality : int
    jpeg_weight : float
        How much of the JPEG round trip is kept (0 = none, 1 = all).
    clutter : list of Solid
    clutter_opacity : list of float
        Opacity of each clutter solid at this gap.
    room : dict
        Seed-level (not per-episode) texture parameters: the same table and wall every episode.
    """

    gap: float
    shift: np.ndarray
    turn: np.ndarray
    light_dir: np.ndarray
    shadow: float
    warm: np.ndarray
    light: dict
    blur: float
    noise: float
    jpeg_quality: int
    jpeg_weight: float
    clutter: list = field(default_factory=list)
    clutter_opacity: list = field(default_factory=list)
    room: dict = field(default_factory=dict)

    def camera(self, height: int, width: int) -> Camera:
        """The real camera (the front camera moved by the mounting offset)."""
        if self.gap == 0:
            return make_camera(height, width)
        return make_camera(height, width, shift=self.shift, turn=self.turn)


# ---------------------------------------------------------------------------- sampling
def _room_params(seed: int) -> dict:
    """Texture parameters shared by all episodes of a seed (one physical table and wall)."""
    rng = np.random.default_rng([seed, _TAG_ROOM])
    return {
        "plank_offset": rng.uniform(0, 1, 32), "plank_tint": rng.uniform(-0.07, 0.07, 32),
        "plank_width": float(rng.uniform(0.13, 0.19)), "ring_freq": float(rng.uniform(30, 45)),
        "wood": np.array([186, 138, 94]) * rng.uniform(0.9, 1.08),
        "wall": np.array([212, 206, 194]) * rng.uniform(0.94, 1.03),
        "blotch": rng.uniform(0, 2 * np.pi, 6),
        "poster": np.array(_BRIGHT[int(rng.integers(len(_BRIGHT)))], float),
        "board_x": float(rng.uniform(-0.8, -0.45)), "poster_x": float(rng.uniform(0.3, 0.55)),
        "binders": rng.integers(0, len(_BRIGHT), 9),
        # the real camera's mounting offset (bolted: the same for every episode)
        "shift": rng.uniform(-0.02, 0.02, 3), "turn": rng.uniform(-0.01, 0.01, 3),
    }


def _clutter(rng: np.random.Generator) -> list[list[Solid]]:
    """4-6 distractor objects on the table margins plus a cable along the front.

    Returns one list of solids per object (the cable is several pieces that appear together).
    """
    out = []
    regions = rng.permutation(len(_CLUTTER_REGIONS))[: int(rng.integers(4, 7))]
    for r in regions:
        (x0, x1), (y0, y1), top = _CLUTTER_REGIONS[r]
        x, y, yaw = rng.uniform(x0, x1), rng.uniform(y0, y1), rng.uniform(-np.pi, np.pi)
        kind = rng.choice(["box", "mug", "can", "book", "tape"] if top > 0.06 else
                          ["book", "tape", "tool"])
        color = _BRIGHT[int(rng.integers(len(_BRIGHT)))]
        if kind == "box":
            half = [rng.uniform(0.03, 0.07), rng.uniform(0.03, 0.06), rng.uniform(0.02, top / 2)]
            cardboard = tuple(int(c) for c in np.array([176, 134, 88]) * rng.uniform(0.85, 1.1))
            out.append([box([x, y, half[2]], half, cardboard, rot=rot_z(yaw))])
        elif kind in ("mug", "can"):
            radius = rng.uniform(0.03, 0.045) if kind == "mug" else 0.03
            h = min(top, rng.uniform(0.09, 0.12)) / 2
            out.append([cylinder([x, y, h], radius, h, color)])
        elif kind == "book":
            half = [rng.uniform(0.06, 0.09), rng.uniform(0.08, 0.11), rng.uniform(0.008, 0.02)]
            out.append([box([x, y, half[2]], half, color, rot=rot_z(yaw))])
        elif kind == "tape":
            out.append([cylinder([x, y, 0.013], rng.uniform(0.035, 0.05), 0.013,
                                 (120, 120, 128) if rng.uniform() < 0.5 else color)])
        else:  # a screwdriver-like tool lying flat
            d = np.array([math.cos(yaw), math.sin(yaw), 0.0]) * 0.07
            out.append([segment_box(np.array([x, y, 0.01]) - d, np.array([x, y, 0.01]) + d,
                                    0.01, color, task=False)])
    # a black cable lying along the front of the table, from one side towards the middle
    side = 1.0 if rng.uniform() < 0.5 else -1.0
    x = side * np.linspace(0.62, rng.uniform(0.05, 0.25), 9)
    y = 0.03 + 0.02 * np.sin(x * rng.uniform(4, 8) + rng.uniform(0, 6))
    pts = np.stack([x, y, np.full_like(x, 0.004)], axis=1)
    out.append([segment_box(a, b, 0.004, (28, 28, 30), task=False, extend=0.004)
                for a, b in zip(pts[:-1], pts[1:])])
    return out


def sample_look(seed: int, episode: int, gap: float) -> RealLook:
    """Draw the real look of real-domain episode ``episode`` (0..E-1), scaled by ``gap``.

    Deterministic in ``(seed, episode)``: the same episode always looks the same.
    """
    rng = np.random.default_rng([seed, _TAG_LOOK, episode])
    g = float(gap)
    room = _room_params(seed)
    light_dir = np.array([rng.uniform(-0.7, -0.2), rng.uniform(-0.6, -0.15), 1.0])
    groups = _clutter(rng)
    fade_start = rng.uniform(0.0, 0.75, len(groups))   # the gap at which each one appears
    clutter = [s for group in groups for s in group]
    opacity = [float(np.clip((g - start) / 0.25, 0.0, 1.0))
               for group, start in zip(groups, fade_start) for _ in group]
    return RealLook(
        gap=g,
        shift=g * room["shift"],
        turn=g * room["turn"],
        light_dir=light_dir / np.linalg.norm(light_dir),
        shadow=g * float(rng.uniform(0.35, 0.5)),
        warm=np.array([1.09, 1.0, 0.84]) + rng.uniform(-0.03, 0.03, 3),
        light={"grad": rng.uniform(-0.18, 0.18, 2), "spot": rng.uniform(-0.6, 0.2, 2),
               "spot_gain": float(rng.uniform(0.15, 0.3)),
               "vignette": float(rng.uniform(0.15, 0.3)),
               "exposure": float(rng.uniform(-0.1, 0.04))},
        blur=g * float(rng.uniform(0.45, 0.7)),
        noise=g * float(rng.uniform(4.0, 7.0)),
        jpeg_quality=int(round(92 - g * rng.uniform(55, 65))),
        jpeg_weight=min(1.0, g / 0.2),
        clutter=clutter,
        clutter_opacity=opacity,
        room=room,
    )


# ---------------------------------------------------------------------------- textures
def _detail(cycles_per_pixel: np.ndarray) -> np.ndarray:
    """Contrast kept for a pattern of this frequency (fades out before it aliases)."""
    return np.clip(1.6 - 4.0 * cycles_per_pixel, 0.0, 1.0)


def wood_texture(x: np.ndarray, y: np.ndarray, room: dict,
                 pixel_m: np.ndarray | float = 0.0) -> np.ndarray:
    """Wood-grain colour at table points ``x, y`` (m, shape (n,)) -> ``(n, 3)`` float32.

    ``pixel_m`` is the table length one pixel spans along ``y`` there (m): grain finer than
    the pixels fades to its mean instead of aliasing into moire.
    """
    w = room["plank_width"]
    k = np.floor((y - TABLE_Y[0]) / w).astype(int)
    off = room["plank_offset"][k % 32]
    within = (y - TABLE_Y[0]) - k * w
    rings = ((within + 0.05 * off) * room["ring_freq"] + 0.9 * np.sin(3.1 * x + 6 * off)
             + 0.25 * np.sin(11.7 * x + 3 * off))
    grain = (0.5 + 0.5 * np.sin(2 * np.pi * rings)) ** 3
    fine = 0.5 + 0.5 * np.sin(2 * np.pi * (within * 160 + 2 * np.sin(7 * x + 5 * off)))
    a_grain = _detail(room["ring_freq"] * pixel_m)
    a_fine = _detail(160 * pixel_m)
    # faded patterns tend to their mean (0.3125 for the cubed sine, 0.5 for the sine)
    grain = 0.3125 + a_grain * (grain - 0.3125)
    fine = 0.5 + a_fine * (fine - 0.5)
    light = 1.0 - 0.22 * grain - 0.05 * fine + room["plank_tint"][k % 32]
    seam = np.minimum(within, w - within) < 0.0025
    light = np.where(seam, light * 0.55, light)
    return (light[:, None] * room["wood"][None, :]).astype(np.float32)


def wall_texture(x: np.ndarray, z: np.ndarray, room: dict) -> np.ndarray:
    """Painted wall with a whiteboard, a poster and a shelf at wall points ``x, z`` (m)."""
    b = room["blotch"]
    light = (1.0 - 0.08 * (z - 0.1) + 0.025 * np.sin(2.3 * x + b[0]) * np.sin(3.1 * z + b[1])
             + 0.015 * np.sin(7.0 * x + 5.0 * z + b[2]))
    out = light[:, None] * room["wall"][None, :]
    bx = room["board_x"]
    frame = (x > bx - 0.01) & (x < bx + 0.51) & (z > 0.11) & (z < 0.62)
    board = (x > bx) & (x < bx + 0.5) & (z > 0.12) & (z < 0.61)
    out[frame] = (150, 150, 155)
    out[board] = np.array([236, 238, 236]) - 6 * np.sin(9 * x[board])[:, None]
    px = room["poster_x"]
    poster = (x > px) & (x < px + 0.22) & (z > 0.2) & (z < 0.5)
    out[poster] = room["poster"] * 0.85 + 30
    shelf = (x > 0.62) & (z > 0.3) & (z < 0.33)
    out[shelf] = (96, 74, 52)
    slot = np.clip(((x - 0.62) / 0.04).astype(int), 0, 8)
    binder = (x > 0.62) & (x < 0.98) & (z >= 0.33) & (z < 0.33 + 0.1 + 0.02 * (slot % 3))
    out[binder] = np.array(_BRIGHT)[room["binders"][slot[binder]]] * 0.8
    return out.astype(np.float32)


def _wall_coordinates(camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """World ``(x, z)`` where each pixel's ray meets the back wall, each ``(H, W)``."""
    (x, _, z), _ = camera.plane_hits(1, WALL_Y)
    return x, z


# ---------------------------------------------------------------------------- shadows
def draw_shadows(draw: ImageDraw.ImageDraw, solids: list[Solid], camera: Camera,
                 light_dir: np.ndarray, fills: list[int]) -> None:
    """Draw the shadows that ``solids`` cast on the table plane ``z = 0``.

    Each face turned to the light is projected along ``light_dir`` onto the plane; together
    they cover the solid's shadow. ``fills`` gives the grey value per solid.
    """
    if not solids:
        return
    verts, normals, _, v_off, f_off = gather(solids)
    on_plane = verts - (verts[:, 2:3] / light_dir[2]) * light_dir[None, :]
    uv = camera.project(on_plane)[0].tolist()
    lit = (normals @ light_dir > 0).tolist()
    for k, (solid, fill) in enumerate(zip(solids, fills)):
        vo, fo = v_off[k], f_off[k]
        for f, face in enumerate(solid.mesh.faces):
            if lit[fo + f]:
                draw.polygon([tuple(uv[vo + i]) for i in face], fill=fill)


def shadow_mask(solids: list[Solid], camera: Camera, light_dir: np.ndarray) -> Image.Image:
    """Mode-L image, 255 inside the shadows ``solids`` cast on the table plane, else 0."""
    img = Image.new("L", (camera.width, camera.height), 0)
    draw_shadows(ImageDraw.Draw(img), solids, camera, light_dir, [255] * len(solids))
    return img


def shadow_factor(solids: list[Solid], camera: Camera, look: RealLook, table: Image.Image,
                  fills: list[int]) -> Image.Image:
    """Mode-L multiplier (255 = lit) of the softened shadows of ``solids`` on the table.

    Parameters
    ----------
    table : PIL.Image.Image (mode L)
        255 where the pixel does *not* show the table top (no shadow there), else 0.
    fills : list of int
        Grey value inside the shadow of each solid.
    """
    img = Image.new("L", (camera.width, camera.height), 255)
    draw_shadows(ImageDraw.Draw(img), solids, camera, look.light_dir, fills)
    img = ImageChops.lighter(img, table)
    return img.filter(ImageFilter.BoxBlur(1.2 * camera.width / _REFERENCE_WIDTH))


def apply_shadow(image: Image.Image, factor: Image.Image) -> Image.Image:
    """Multiply an RGB image by a mode-L shadow factor (255 = unchanged)."""
    return ImageChops.multiply(image, Image.merge("RGB", (factor, factor, factor)))


# ---------------------------------------------------------------------------- static layer
def room_delta(camera: Camera, look: RealLook) -> np.ndarray | None:
    """What the real materials change in the empty room, ``(H, W, 3)`` float32 (or None).

    ``gap * (texture - flat colour)`` on wall, floor and table pixels of the empty room. The
    room and the real camera are the same in every episode of a seed, so this is computed
    once and added to each episode's static layer where it shows the room.
    """
    g = look.gap
    if g == 0:
        return None
    image, label = render_room(camera)
    flat = np.asarray(image).astype(np.float32)
    lab = np.asarray(label)
    tex = flat.copy()
    tx, ty, _ = camera.table_coordinates(0.0)
    pixel_m = np.abs(np.gradient(ty, axis=0))          # metres of table per pixel row
    wx, wz = _wall_coordinates(camera)
    for value, texture in ((LABEL_TABLE,
                            lambda m: wood_texture(tx[m], ty[m], look.room, pixel_m[m])),
                           (LABEL_TABLE_SIDE, lambda m: 0.55 * look.room["wood"][None, :]),
                           (LABEL_WALL, lambda m: wall_texture(wx[m], wz[m], look.room)),
                           (LABEL_FLOOR, lambda m: np.array([[70.0, 66.0, 62.0]]))):
        m = lab == value
        tex[m] = texture(m)
    tex -= flat
    tex *= g
    return tex


def real_static(layout: Layout, camera: Camera, look: RealLook,
                delta: np.ndarray | None = None) -> tuple[Layer, Image.Image]:
    """The real domain's static layer for one episode, and the same layer in full shadow.

    Parameters
    ----------
    delta : ndarray (H, W, 3), optional
        :func:`room_delta` for this camera and look (computed here when not given).

    Returns
    -------
    layer : Layer
        Image with textures (blended by ``gap``), clutter (faded in), static shadows;
        mask as in the sim layer (clutter is never task-relevant).
    shadowed : PIL.Image.Image (RGB)
        ``layer.image`` with every table-top pixel darkened by ``look.shadow``: per frame the
        moving solids' shadow mask picks pixels from it.
    """
    sim = render_static(layout, camera)
    g = look.gap
    if g == 0:
        return sim, sim.image
    if delta is None:
        delta = room_delta(camera, look)
    not_table = Image.fromarray(np.where(sim.label == LABEL_TABLE, 0, 255).astype(np.uint8))
    arr = np.asarray(sim.image).astype(np.float32)
    shows_room = (sim.label != LABEL_OBJECT)[..., None]
    arr += np.where(shows_room, delta, 0.0)
    # clutter: drawn over the textured layer, each object with its own opacity
    image = Image.fromarray((arr + 0.5).astype(np.uint8))
    shown = [(s, o) for s, o in zip(look.clutter, look.clutter_opacity) if o > 0]
    if shown:
        solids = [s for s, _ in shown]
        opaque = render_static(layout, camera, extra=solids).image
        alpha = Image.new("L", image.size, 0)
        draw = ImageDraw.Draw(alpha)
        # each object's silhouette with its own opacity, far to near
        for k in np.argsort([-np.sum((s.center - camera.position) ** 2) for s in solids]):
            draw_solids(draw, None, [solids[k]], camera, fill=int(round(255 * shown[k][1])))
        image = Image.composite(opaque, image, alpha)
    # static shadows: the fixed parts and the visible clutter
    casters = static_solids(layout) + [s for s, _ in shown]
    dark = 255 * (1.0 - look.shadow)
    fills = [int(round(dark))] * (len(casters) - len(shown))
    fills += [int(round(255 - (255 - dark) * o)) for _, o in shown]
    image = apply_shadow(image, shadow_factor(casters, camera, look, not_table, fills))
    full = ImageChops.lighter(Image.new("L", image.size, int(round(dark))), not_table)
    return Layer(image=image, mask=sim.mask), apply_shadow(image, full)
