"""Drawing Meta-World frames: one off-screen renderer a process, on its own copy of the model.

:class:`Painter` owns a GL context (EGL, or what ``MUJOCO_GL`` names), a MuJoCo render
context and scene for one task, camera and frame size, and a model of the task of its own
(made from a fresh environment that is never stepped): a frame of any environment of the task
is drawn by copying that environment's layout fields (``body_pos``, ``site_pos``, ...) and
physics state (``qpos``, the mocap pose) into the painter's model and data, setting the look
on the painter's model (:mod:`.look`) and rendering. The physics never sees a look.

Fast settings, as measured on Mesa's llvmpipe (``../shared/reference/metaworld.md``): shadows
and reflections off, no multisampling (``offsamples = 0``); textures are uploaded again only
when the texture set changes. A look's distractors (:func:`.look.distractor_geoms`) are
appended to the scene after ``mjv_updateScene``: no model holds them. Meta-World's fixed
cameras are mounted upside down (their image "up" points down in the world): such a camera's
image is turned 180 degrees, so frames come out upright (:attr:`Painter.turned`).
:meth:`Painter.close` frees the GL context explicitly (EGL prints errors at exit otherwise).
"""

from __future__ import annotations

import numpy as np

from s2r.worlds.metaworld import sim
from s2r.worlds.metaworld.look import (Appearance, LookDraw, TextureDraw, apply_look,
                                       distractor_geoms, restore_look, texture_data)
from s2r.worlds.metaworld.tasks import TaskSpec

import mujoco                                   # after sim: MUJOCO_GL is set there

__all__ = ["Painter"]


class Painter:
    """Draws snapshots of one task's environments from one camera at one frame size.

    Parameters
    ----------
    spec : TaskSpec
    camera : str
        A camera of the Meta-World scene (``corner``, ``corner2``, ``topview``, ...).
    height, width : int
        Frame size (pixels).
    """

    def __init__(self, spec: TaskSpec, camera: str, height: int, width: int):
        from mujoco.gl_context import GLContext

        if GLContext is None:
            raise RuntimeError("MuJoCo has no off-screen GL context here (MUJOCO_GL)")
        self.key = (spec.name, camera, int(height), int(width))
        env = sim.make_env(spec)
        env_layout = sim.layout(spec, 0, "dataset", 0)
        sim.Sim(spec, env, 1).reset(env_layout)
        self.model, self.data = env.model, env.data
        m = self.model
        m.vis.quality.offsamples = 0
        m.vis.global_.offwidth = max(int(width), int(m.vis.global_.offwidth))
        m.vis.global_.offheight = max(int(height), int(m.vis.global_.offheight))
        self.camera = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        if self.camera < 0:
            raise ValueError(f"Meta-World has no camera {camera!r}")
        names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) or "" for i in range(m.nbody)]
        self.base = Appearance.of(m, names)
        self.height, self.width = int(height), int(width)
        self._gl = GLContext(self.width, self.height)
        self._gl.make_current()
        self._context = mujoco.MjrContext(m, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._context)
        self._scene = mujoco.MjvScene(m, maxgeom=2000)
        self._option = mujoco.MjvOption()
        self._cam = mujoco.MjvCamera()
        self._cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._cam.fixedcamid = self.camera
        self._rect = mujoco.MjrRect(0, 0, self.width, self.height)
        self._textures = None                         # the texture set uploaded now
        self._distractors: list = []                  # the look's extra scene geoms
        mujoco.mj_kinematics(m, self.data)
        mujoco.mj_camlight(m, self.data)
        up = self.data.cam_xmat[self.camera].reshape(3, 3)[:, 1]
        #: Whether the camera is mounted upside down (its image is turned 180 degrees).
        self.turned = bool(up[2] < 0)

    def set_textures(self, draw: TextureDraw | None) -> None:
        """Upload the texture set ``draw`` (None: the base textures) when it is not the one
        uploaded now."""
        key = None if draw is None or draw.strength == 0.0 else (draw.seed, draw.strength)
        if key == self._textures:
            return
        m = self.model
        if key is None:
            m.tex_data[:] = self.base.tex_data
            changed = range(int(m.ntex))
        else:
            data = texture_data(m, self.base, draw)
            for t, values in data.items():
                adr = int(m.tex_adr[t])
                m.tex_data[adr:adr + values.size] = values
            changed = data.keys()
        self._gl.make_current()
        for t in changed:
            mujoco.mjr_uploadTexture(m, self._context, int(t))
        self._textures = key

    def set_look(self, draw: LookDraw | None, gap: float) -> None:
        """Colours, lights, camera and distractors of ``draw`` at ``gap`` (None: the sim look;
        setting a look costs microseconds, so it is set for every frame)."""
        if draw is None:
            restore_look(self.model, self.base)
            self._distractors = []
        else:
            apply_look(self.model, self.base, draw, gap, self.camera)
            self._distractors = distractor_geoms(draw.distractors, gap)

    def _add_distractors(self) -> None:
        """Append the look's distractors to the scene MuJoCo built from the model: drawn like
        any geom, held by no model, so the physics never meets them."""
        scene = self._scene
        for kind, size, pos, mat, rgba in self._distractors[:scene.maxgeom - scene.ngeom]:
            mujoco.mjv_initGeom(scene.geoms[scene.ngeom], int(kind), size, pos, mat,
                                rgba.astype(np.float32))
            scene.ngeom += 1

    def _pose(self, snapshot: "sim.Snapshot") -> None:
        """The scene of ``snapshot`` in the camera of the look set now: its layout and pose
        in the model, the kinematics MuJoCo draws from, the scene's geoms (no distractors)."""
        m, d = self.model, self.data
        for name, values in snapshot.layout.items():
            getattr(m, name)[:] = values
        d.qpos[:] = snapshot.qpos
        d.mocap_pos[:] = snapshot.mocap_pos
        d.mocap_quat[:] = snapshot.mocap_quat
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_camlight(m, d)
        mujoco.mjv_updateScene(m, d, self._option, None, self._cam,
                               mujoco.mjtCatBit.mjCAT_ALL, self._scene)

    def draw(self, snapshot: "sim.Snapshot") -> np.ndarray:
        """The frame ``(H, W, 3) uint8`` of ``snapshot`` in the look set now."""
        self._pose(snapshot)
        self._add_distractors()
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        self._scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        self._gl.make_current()
        mujoco.mjr_render(self._rect, self._scene, self._context)
        out = np.empty((self.height, self.width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(out, None, self._rect, self._context)
        out = out[::-1]                               # GL's rows run bottom up
        return np.ascontiguousarray(out[::-1, ::-1] if self.turned else out)

    def segment(self, snapshot: "sim.Snapshot", geoms: np.ndarray) -> np.ndarray:
        """The mask ``(H, W) uint8`` (1 = one of ``geoms`` is the nearest surface) of
        ``snapshot`` in the camera of the look set now: one render in MuJoCo's segmentation
        mode (each geom's colour is its index in the scene), which no colour, light or
        texture changes."""
        scene = self._scene
        self._pose(snapshot)
        flags = (mujoco.mjtRndFlag.mjRND_SEGMENT, mujoco.mjtRndFlag.mjRND_IDCOLOR)
        for flag in flags:
            scene.flags[flag] = 1
        self._gl.make_current()
        try:
            mujoco.mjr_render(self._rect, scene, self._context)
            rgb = np.empty((self.height, self.width, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(rgb, None, self._rect, self._context)
        finally:
            for flag in flags:
                scene.flags[flag] = 0
        seg = rgb.astype(np.int64) @ np.array([1, 1 << 8, 1 << 16])     # scene index + 1
        wanted = np.zeros(scene.ngeom + 2, dtype=np.uint8)
        chosen = set(np.asarray(geoms).tolist())
        for i in range(scene.ngeom):
            g = scene.geoms[i]
            if g.objtype == mujoco.mjtObj.mjOBJ_GEOM and g.objid in chosen and g.segid >= 0:
                wanted[g.segid + 1] = 1
        out = wanted[np.minimum(seg, scene.ngeom + 1)][::-1]            # GL's rows run bottom up
        return np.ascontiguousarray(out[::-1, ::-1] if self.turned else out)

    def close(self) -> None:
        """Free the render context and the GL context (idempotent)."""
        if self._context is not None:
            self._context.free()
            self._context = None
        if self._gl is not None:
            self._gl.free()
            self._gl = None
