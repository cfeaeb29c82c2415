"""Flat-shaded drawing of the demo scene (the ``sim`` look) with PIL polygons.

A frame is a per-episode *static layer* (room, work table, fixture, tabletop part, spare legs,
robot pedestal; drawn once) plus the *moving* solids of one state row (arm, gripper, the leg
being handled), drawn over it far-to-near. The task-relevant mask is drawn with the same
polygons, so it is exact by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from s2r.worlds.demo import schema
from s2r.worlds.demo.scene import (COLORS, Camera, Layout, Solid, arm_solids, leg_solid,
                                     room_quads, rot_from_6d, static_solids, table_leg_solids)

LIGHT_DIR = np.array([-0.35, -0.45, 1.0]) / np.linalg.norm([-0.35, -0.45, 1.0])  # to the light
AMBIENT = 0.62

# values of the label image that tells the real-domain textures where each surface is
LABEL_OBJECT, LABEL_WALL, LABEL_FLOOR, LABEL_TABLE, LABEL_TABLE_SIDE = 0, 1, 2, 3, 4


@dataclass
class Layer:
    """A rendered layer.

    Attributes
    ----------
    image : PIL.Image.Image, mode RGB, size (W, H)
    mask : PIL.Image.Image, mode L, values {0, 1} (task-relevant pixels)
    label : ndarray (H, W) uint8 or None
        Which surface each pixel shows (``LABEL_*``); only the static layer has one.
    """

    image: Image.Image
    mask: Image.Image
    label: np.ndarray | None = None


def shade(colors: np.ndarray, normals: np.ndarray) -> list:
    """Flat Lambert shading: base ``colors (F, 3)`` (0..255) of faces with unit ``normals (F, 3)``.

    Returns a list of ``F`` RGB int tuples (what PIL takes as a fill).
    """
    k = AMBIENT + (1.0 - AMBIENT) * np.maximum(normals @ LIGHT_DIR, 0.0)
    shaded = np.minimum(np.rint(colors * k[:, None]), 255).astype(int)
    return [tuple(c) for c in shaded.tolist()]


def gather(solids: list[Solid]) -> tuple:
    """World geometry of several solids at once (fewer numpy calls per frame).

    Returns
    -------
    verts : ndarray (V, 3)
        All vertices, solid after solid.
    normals : ndarray (F, 3)
        All face normals.
    first : ndarray (F,)
        Index into ``verts`` of one vertex of each face.
    v_off, f_off : list of int
        Where each solid's vertices and faces start (length ``len(solids) + 1``).
    """
    verts = [s.world_vertices for s in solids]
    v_off = np.cumsum([0] + [len(v) for v in verts]).tolist()
    f_off = np.cumsum([0] + [len(s.mesh.faces) for s in solids]).tolist()
    normals = np.concatenate([s.world_normals for s in solids])
    first = np.concatenate([s.mesh.first + o for s, o in zip(solids, v_off)])
    return np.concatenate(verts), normals, first, v_off, f_off


def draw_solids(image_draw: ImageDraw.ImageDraw | None, mask_draw: ImageDraw.ImageDraw | None,
                solids: list[Solid], camera: Camera, *, fill=None) -> None:
    """Draw convex ``solids`` far-to-near: their faces turned to the camera, flat shaded.

    Solids are ordered by the distance of their centres (painter's algorithm); inside a convex
    solid the faces turned to the camera never overlap, so they need no order.

    Parameters
    ----------
    image_draw, mask_draw : ImageDraw or None
        Targets for colour and for the task mask (``None`` to skip one of them).
    solids : list of Solid
    camera : Camera
    fill : int or tuple, optional
        One fill for every face instead of the shaded colours (for label images).
    """
    if not solids:
        return
    verts, normals, first, v_off, f_off = gather(solids)
    facing = (np.einsum("ij,ij->i", normals, camera.position - verts[first]) > 0).tolist()
    uv = camera.project(verts)[0].tolist()
    if image_draw is not None and fill is None:
        base = np.repeat(np.array([s.color for s in solids], float), np.diff(f_off), axis=0)
        colors = shade(base, normals)
    centres = np.array([s.center for s in solids])
    depth = np.einsum("ij,ij->i", centres - camera.position, centres - camera.position)
    for k in np.argsort(depth, kind="stable")[::-1].tolist():
        solid, vo, fo = solids[k], v_off[k], f_off[k]
        for f, face in enumerate(solid.mesh.faces):
            if not facing[fo + f]:
                continue
            pts = [tuple(uv[vo + i]) for i in face]
            if image_draw is not None:
                image_draw.polygon(pts, fill=colors[fo + f] if fill is None else fill)
            if mask_draw is not None:
                mask_draw.polygon(pts, fill=int(solid.task))


def draw_room(image_draw: ImageDraw.ImageDraw, label_draw: ImageDraw.ImageDraw,
              camera: Camera) -> None:
    """Floor, work table (front edge, legs, top) over a wall-coloured canvas."""
    quads = room_quads()

    def poly(name, color, label):
        pts = [tuple(p) for p in camera.project(quads[name])[0].tolist()]
        image_draw.polygon(pts, fill=color)
        label_draw.polygon(pts, fill=label)

    poly("floor", COLORS["floor"], LABEL_FLOOR)
    legs = table_leg_solids()
    draw_solids(image_draw, None, legs, camera)
    draw_solids(label_draw, None, legs, camera, fill=LABEL_TABLE_SIDE)
    poly("table_front", COLORS["table_side"], LABEL_TABLE_SIDE)
    poly("table", COLORS["table"], LABEL_TABLE)


def render_room(camera: Camera) -> tuple[Image.Image, Image.Image]:
    """The empty room (wall, floor, work table) and its label image (``LABEL_*`` values)."""
    size = (camera.width, camera.height)
    image = Image.new("RGB", size, COLORS["wall"])
    label = Image.new("L", size, LABEL_WALL)
    draw_room(ImageDraw.Draw(image), ImageDraw.Draw(label), camera)
    return image, label


def render_static(layout: Layout, camera: Camera, extra: list[Solid] | None = None) -> Layer:
    """The per-episode static layer: room, table and the solids that do not move.

    Parameters
    ----------
    extra : list of Solid, optional
        More static solids (the real domain's clutter), drawn with the others.
    """
    image, label = render_room(camera)
    mask = Image.new("L", image.size, 0)
    image_draw, label_draw = ImageDraw.Draw(image), ImageDraw.Draw(label)
    solids = static_solids(layout) + list(extra or [])
    draw_solids(image_draw, ImageDraw.Draw(mask), solids, camera)
    # whatever a solid covers is "object" in the label image (no table texture there)
    draw_solids(label_draw, None, solids, camera, fill=LABEL_OBJECT)
    return Layer(image=image, mask=mask, label=np.asarray(label).copy())


def moving_solids(state: np.ndarray) -> list[Solid]:
    """Arm, gripper and the handled leg of one state row ``(22,)`` (see ``schema.STATE_NAMES``)."""
    s = np.asarray(state, dtype=np.float64)
    ee_rot = rot_from_6d(s[schema.EE_ROT])
    solids = arm_solids(s[schema.EE_POS], ee_rot, float(s[schema.GRIP]))
    solids.append(leg_solid(s[schema.LEG_POS], rot_from_6d(s[schema.LEG_ROT])))
    return solids


def draw_frame(static: Layer, solids: list[Solid], camera: Camera, *, image: bool = True,
               base: Image.Image | None = None) -> Layer:
    """Copy of ``static`` with the moving ``solids`` drawn on it.

    With ``image=False`` only the mask is drawn (``Layer.image`` is then ``static.image``).
    ``base`` (a fresh image, drawn on in place) replaces the copy of ``static.image``.
    """
    if not image:
        out = static.image
    else:
        out = static.image.copy() if base is None else base
    mask = static.mask.copy()
    draw_solids(ImageDraw.Draw(out) if image else None, ImageDraw.Draw(mask), solids, camera)
    return Layer(image=out, mask=mask)
