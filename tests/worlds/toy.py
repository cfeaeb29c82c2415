"""A toy world written against the protocol alone (what issue 35's Meta-World must also be):
a one-dimensional reach. The state is ``[hand, target]`` in [0, 1] and 16 features of them
(``sin(k pi hand)``, ``cos(k pi target)``, k = 1..8: a state wide enough to be scored like an
embedding); the action moves the hand
by at most 0.2; the frame is a 64x64 picture with the hand as a bright column and the target
as a dark one. The real look tints the picture by ``gap`` (appearance only). Its expert steps
straight to the target; its stages are "near" (within 0.2) and "at target" (within 0.02: the
success)."""

from __future__ import annotations

import numpy as np

from s2r.frameset import FrameSet
from s2r.worlds.base import Control, Demonstration, TaskColumns
from s2r.worlds.options import Option, Options, check_options

SIZE = 64


def full(states: np.ndarray) -> np.ndarray:
    """``[hand, target] (B, 2)`` -> the toy's state ``(B, 18) float32``."""
    s = np.asarray(states, dtype=np.float64)
    k = np.arange(1, 9) * np.pi
    return np.concatenate([s, np.sin(k * s[:, :1]), np.cos(k * s[:, 1:2])],
                          axis=1).astype(np.float32)


def draw(states: np.ndarray, look: str, gap: float) -> np.ndarray:
    """``(B, 64, 64, 3) uint8`` pictures of ``states (B, 2)``."""
    out = np.full((len(states), SIZE, SIZE, 3), 120, np.uint8)
    for i, (hand, target) in enumerate(np.asarray(states)[:, :2]):
        out[i, :, int(round(target * (SIZE - 4))):][:, :4] = 20
        out[i, :, int(round(hand * (SIZE - 4))):][:, :4] = 240
    if look == "real" and gap > 0:
        out = np.clip(out.astype(np.float64) * (1 - 0.5 * gap) + 90 * gap, 0, 255).astype(np.uint8)
    return out


def expert(states: np.ndarray) -> np.ndarray:
    s = np.asarray(states, dtype=np.float64)
    return np.clip(s[:, 1:2] - s[:, 0:1], -0.2, 0.2).astype(np.float32)


def _layouts(seed: int, stream: int, n: int) -> np.ndarray:
    rng = np.random.default_rng([seed, stream])
    return rng.uniform(0, 1, (n, 2)).astype(np.float32)


class ToyBatch:
    def __init__(self, n, look, gap, seed):
        self.n, self.look, self.gap = n, look, gap
        self.s = _layouts(seed, 2, n)

    def frames(self, rows):
        return draw(self.s[list(rows)], self.look, self.gap)

    def states(self, rows):
        return full(self.s[list(rows)])

    def step(self, rows, actions):
        for row, k in enumerate(rows):
            self.s[k, 0] = np.clip(self.s[k, 0] + np.clip(actions[row, 0], -0.2, 0.2), 0, 1)

    def success(self, rows):
        return np.abs(self.s[list(rows), 0] - self.s[list(rows), 1]) < 0.02

    def stage(self, rows):
        d = np.abs(self.s[list(rows), 0] - self.s[list(rows), 1])
        return (d < 0.2).astype(np.int64) + (d < 0.02).astype(np.int64)

    def close(self):
        self.closed = True


class ToyTask:
    world = "toy"
    columns = TaskColumns(state_names=("hand", "target", *(f"f{k}" for k in range(16))),
                          action_names=("move",), proprio=(0,), task=(1,))
    stages = ("near", "at target")
    horizon = 8
    demo_steps = 6
    gaps = (0.0, 1.0)
    overlap = 1

    def __init__(self, mode: str = "plain"):
        self.mode = mode          # a real-look option: it keys the real look apart, not the sim

    def identity(self):
        return "toy-v1" if self.mode == "plain" else f"toy-v1 {self.mode}"

    def sim_identity(self):
        return "toy-v1"

    def describe(self):
        return {"task": "toy reach", "proprioception": "state column 0 (hand)"}

    def _episode(self, seed, stream, e, steps):
        s = _layouts(seed, stream, e + 1)[e:e + 1].copy()
        states, actions = [], []
        for _ in range(steps):
            a = expert(s)
            states.append(full(s)[0])
            actions.append(a[0])
            s[0, 0] = np.clip(s[0, 0] + a[0, 0], 0, 1)
            if abs(s[0, 0] - s[0, 1]) < 0.02:
                break
        return np.stack(states), np.stack(actions), abs(s[0, 0] - s[0, 1]) < 0.02

    def demonstrations(self, n, steps, *, seed, height, width):
        for e in range(n):
            states, actions, ok = self._episode(seed, 1, e, steps)
            yield Demonstration(draw(states, "sim", 0.0), states, actions, bool(ok))

    def state_demonstrations(self, n, steps, *, seed, noise=0.0):
        eps = [self._episode(seed, 3, e, steps) for e in range(n)]
        return (np.concatenate([s for s, _, _ in eps]), np.concatenate([a for _, a, _ in eps]),
                np.repeat(np.arange(n), [len(s) for s, _, _ in eps]))

    def rollouts(self, n, *, look, gap, seed, height, width):
        return ToyBatch(n, look, gap, seed)

    def render_state(self, state, *, k, look, gap, seed, height, width, step=0):
        return draw(np.asarray(state)[None], look, gap)[0]

    def randomised_frames(self, n, steps, *, strength, seed, height, width):
        states = np.concatenate([self._episode(seed, 4, e, steps)[0] for e in range(n)])
        return draw(states, "real", strength), self.columns.task_of(states)

    def memory(self, look_frames):
        return None


class ToyWorld:
    name = "toy"
    title = "Toy reach"
    options = Options(Option("episodes", 3, low=1, label="Episodes"),
                      Option("steps", 6, low=2, label="Steps"),
                      Option("gap", 0.5, low=0, high=1, label="Gap"),
                      Option("seed", 0, low=0, label="Seed"),
                      Option("height", 64, low=64, high=64, shown=False),
                      Option("width", 64, low=64, high=64, shown=False),
                      Option("mode", "plain", choices=("plain", "fancy"), label="Mode"))
    dashboard_defaults = {"episodes": 4, "steps": 6}
    controls = {"toy-simcnn-dr1": Control(id="toy-simcnn-dr1", strength=1.0, version=1,
                                          episodes=4, steps=6, epochs=1, seed=0,
                                          state_columns=(1, 2), height=64, width=64,
                                          dataset="toy frames", targets_names="target")}

    def check_options(self, options):
        return check_options(self.options, options)

    def unavailable(self):
        return None

    def dataset(self, options, progress=None):
        task, e, t = ToyTask(), options["episodes"], options["steps"]
        sim = [task._episode(options["seed"], 1, i, t) for i in range(e)]
        states = np.concatenate([s for s, _, _ in sim] * 2)
        actions = np.concatenate([a for _, a, _ in sim] * 2)
        lengths = [len(s) for s, _, _ in sim]
        n = len(states) // 2
        images = np.concatenate([draw(states[:n], "sim", 0), draw(states[n:], "real",
                                                                  options["gap"])])
        return FrameSet(images=images, actions=actions,
                        domain=np.array(["sim"] * n + ["real"] * n),
                        episode=np.repeat(np.arange(2 * e), lengths * 2),
                        step=np.concatenate([np.arange(k) for k in lengths * 2]),
                        state=states, action_names=["move"], name="toy",
                        source={"kind": "toy", **options})

    tasks = ()

    def task(self, options):
        return ToyTask((options or {}).get("mode", "plain"))

    def control_task(self, options):
        return ToyTask()

    def task_title(self, name=None):
        return "Reach"


TOY = ToyWorld()
