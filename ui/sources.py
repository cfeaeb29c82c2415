"""The home page's dataset sources: the built-in demo, Meta-World (MuJoCo) and files on disk.

The page draws the source radio and the demo's and files' inputs; the Meta-World inputs (a task
picker and the small options) are drawn here (:func:`metaworld_inputs`), opening on the spec in
effect, each kept while it is not drawn (:func:`ui.widgets.kept`).
"""

from __future__ import annotations

from typing import Any, MutableMapping, Optional

import streamlit as st

from ui import widgets, world_specs
from ui import state as S

DEMO, METAWORLD, FILES = "Built-in demo", "Meta-World (MuJoCo)", "Files on disk"
#: The frame sizes offered (height, width), small first: a CPU renders and embeds the tiny
#: size in seconds.
SIZES = {"96x128 (tiny)": (96, 128), "128x160 (fast)": (128, 160),
         "240x320 (FurnitureBench size)": (240, 320)}


def size_label(size: tuple) -> str:
    """The :data:`SIZES` label of ``(height, width)``, or ``"HxW"``."""
    return next((k for k, v in SIZES.items() if v == tuple(size)), f"{size[0]}x{size[1]}")


def size_of(label: str) -> tuple:
    """``(height, width)`` of a size label."""
    return SIZES.get(label) or tuple(int(v) for v in label.split("x"))


def source_of(spec: Any) -> str:
    """The source radio's choice for the spec in effect."""
    world = world_specs.names_world(spec)
    return {"demo": DEMO, world_specs.METAWORLD: METAWORLD}.get(world, FILES)


def metaworld_inputs(state: MutableMapping, current: Any) -> Optional[str]:
    """Draw the Meta-World source's inputs and return the ``metaworld:...`` spec they say; None
    (after one line saying what to install) when Meta-World cannot run on this machine."""
    reason = world_specs.unavailable(world_specs.METAWORLD)
    if reason:
        st.warning(f"Meta-World cannot run here: {reason}.", icon=":material/block:")
        return None
    opts = (world_specs.world_options(current, world_specs.METAWORLD)
            or world_specs.world_options(world_specs.world_spec(world_specs.METAWORLD),
                                         world_specs.METAWORLD))
    tasks = world_specs.tasks(world_specs.METAWORLD)
    inputs = {key: widgets.kept(key, value) for key, value in (
        (S.HOME_MW_TASK, opts["task"]), (S.HOME_MW_GAP, float(opts["gap"])),
        (S.HOME_MW_EPISODES, min(max(4, int(opts["episodes"])), 100)),
        (S.HOME_MW_STEPS, min(max(8, int(opts["steps"])), 250)),
        (S.HOME_MW_SEED, int(opts["seed"])),
        (S.HOME_MW_SIZE, size_label((int(opts["height"]), int(opts["width"])))))}
    task = st.selectbox("Task", tasks, format_func=world_specs.task_title,
                        help="A Meta-World task: its scripted expert's episodes, drawn in "
                             "Meta-World's own look (sim) and, for the same states, in a "
                             "shifted look (real).", **inputs[S.HOME_MW_TASK])
    c1, c2, c3, c4, c5 = st.columns([3, 2, 2, 2, 3])
    gap = c1.slider("Sim-to-real gap", 0.0, 1.0, step=0.05, **inputs[S.HOME_MW_GAP],
                    help="0: real frames render exactly like sim frames; 1: textures, colours, "
                         "lights and the camera's pose and field of view shifted at full "
                         "strength (the physics never changes).")
    episodes = c2.number_input("Episodes per domain", 4, 100, **inputs[S.HOME_MW_EPISODES],
                               help="Expert episodes (4: the fewest the held-out scores take)")
    steps = c3.number_input("Steps per episode", 8, 250, **inputs[S.HOME_MW_STEPS],
                            help="World steps (2 Meta-World steps each) an episode records")
    seed = c4.number_input("Seed", 0, 2**32 - 1, **inputs[S.HOME_MW_SEED])
    size = c5.selectbox("Frame size", list(dict.fromkeys([*SIZES, state[S.HOME_MW_SIZE]])),
                        **inputs[S.HOME_MW_SIZE])
    height, width = size_of(size)
    keep = {k: opts[k] for k in ("camera", "repeat") if k in opts}
    return world_specs.world_spec(world_specs.METAWORLD, **{
        **keep, "task": task, "gap": round(float(gap), 3), "episodes": int(episodes),
        "steps": int(steps), "seed": int(seed), "height": height, "width": width})
