"""A Meta-World worker process: one renderer, the environments of its share of the rollouts.

Started by :mod:`.pool` as ``python -m s2r.worlds.metaworld.worker READ_FD WRITE_FD``; it
answers requests on a pipe (pickled tuples from the parent that started it, never from
anywhere else) until the parent closes the pipe or says ``exit``:

``("paint", groups)``
    Draw snapshots: each group is ``(key, textures, look, gap, snapshots)`` with ``key =
    (task, camera, height, width)``; answers a list of ``(n, H, W, 3) uint8`` arrays.
``("segment", groups)``
    The task objects' masks of such groups (:mod:`.masks`): ``(n, H, W) uint8`` arrays.
``("open", batch, key, repeat, textures, rows)``
    Start rollouts ``rows = [(k, layout, look), ...]`` of a batch (environments reused across
    batches); answers their first ``(state, success, stage)``.
``("step", batch, rows, actions)``
    Step those rollouts; answers ``[(state, success, stage), ...]``.
``("frames", batch, rows)``
    Their frames now, ``(B, H, W, 3) uint8``.
``("close", batch)``
    Release the batch's environments (kept for the next batch).

Every answer is ``("ok", value)`` or ``("error", "one line")``. The worker keeps one
:class:`~.paint.Painter` (a new task, camera or size replaces it) and closes it before it
exits, so EGL never complains at exit.
"""

from __future__ import annotations

import sys
import traceback
import warnings

__all__ = ["main"]


class _Worker:
    def __init__(self):
        from s2r.worlds.metaworld import sim

        self.sim = sim
        self.painter = None
        self.free: dict = {}                # task -> environments not in a batch
        self.batches: dict = {}

    def painter_for(self, key):
        from s2r.worlds.metaworld.paint import Painter
        from s2r.worlds.metaworld.tasks import TASKS

        if self.painter is None or self.painter.key != tuple(key):
            self.close_painter()
            self.painter = Painter(TASKS[key[0]], key[1], key[2], key[3])
        return self.painter

    def close_painter(self):
        if self.painter is not None:
            self.painter.close()
            self.painter = None

    def paint(self, groups):
        import numpy as np

        out = []
        for key, textures, look, gap, snapshots in groups:
            painter = self.painter_for(key)
            painter.set_textures(textures)
            painter.set_look(look, gap)
            out.append(np.stack([painter.draw(s) for s in snapshots]))
        return out

    def segment(self, groups):
        """The task objects' masks of ``paint`` groups (:mod:`.masks`): ``(n, H, W) uint8``
        arrays (textures play no part)."""
        import numpy as np

        from s2r.worlds.metaworld.masks import object_geoms

        out = []
        for key, _, look, gap, snapshots in groups:
            painter = self.painter_for(key)
            painter.set_look(look, gap)
            geoms = object_geoms(painter.model, key[0])
            out.append(np.stack([painter.segment(s, geoms) for s in snapshots]))
        return out

    def open(self, batch, key, repeat, textures, rows):
        from s2r.worlds.metaworld.tasks import TASKS

        spec = TASKS[key[0]]
        free = self.free.setdefault(spec.name, [])
        sims = {}
        for k, rand_vec, look, gap in rows:
            env = free.pop() if free else self.sim.make_env(spec)
            sims[k] = (self.sim.Sim(spec, env, repeat).reset(rand_vec), look, gap)
        self.batches[batch] = (key, textures, sims)
        return [self._outcome(sims[k][0]) for k, *_ in rows]

    @staticmethod
    def _outcome(s):
        return s.state, s.succeeded, s.stage

    def step(self, batch, rows, actions):
        sims = self.batches[batch][2]
        out = []
        for k, action in zip(rows, actions):
            s = sims[k][0]
            s.step(action)
            out.append(self._outcome(s))
        return out

    def frames(self, batch, rows):
        import numpy as np

        key, textures, sims = self.batches[batch]
        painter = self.painter_for(key)
        painter.set_textures(textures)
        out = []
        for k in rows:
            s, look, gap = sims[k]
            painter.set_look(look, gap)
            out.append(painter.draw(s.snapshot()))
        return np.stack(out)

    def close(self, batch):
        key, _, sims = self.batches.pop(batch, (None, None, {}))
        if key is not None:
            self.free.setdefault(key[0], []).extend(s.env for s, _, _ in sims.values())

    def hello(self):
        """Check that this process can render: a small GL context, made and freed."""
        from mujoco.gl_context import GLContext

        if GLContext is None:
            raise RuntimeError("MuJoCo found no off-screen GL backend (MUJOCO_GL)")
        ctx = GLContext(8, 8)
        ctx.make_current()
        ctx.free()
        return "ready"


def _line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ").strip()
    return text[:400]


def main(argv=None) -> int:
    from multiprocessing.connection import Connection

    argv = sys.argv[1:] if argv is None else argv
    inbox = Connection(int(argv[0]), writable=False)
    outbox = Connection(int(argv[1]), readable=False)
    warnings.simplefilter("ignore")
    worker = None
    try:
        while True:
            try:
                request = inbox.recv()
            except EOFError:
                break
            if request[0] == "exit":
                break
            try:
                if worker is None:
                    worker = _Worker()
                value = getattr(worker, request[0])(*request[1:])
                outbox.send(("ok", value))
            except Exception as exc:                       # the parent raises it, one line
                traceback.print_exc(file=sys.stderr)
                outbox.send(("error", _line(exc)))
    finally:
        if worker is not None:
            worker.close_painter()
    return 0


if __name__ == "__main__":
    sys.exit(main())
