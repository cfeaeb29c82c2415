"""Worlds: simulated tasks that draw any of their states in a sim look and a real look, step
batches of rollouts, run their expert and grade a rollout's progress in named stages
(the protocol: :mod:`s2r.worlds.base`).

:data:`WORLDS` maps a world's name to the world, one line per world. Adding a world: write its
package ``s2r/worlds/NAME/`` whose top module defines ``WORLD`` (a
:class:`~s2r.worlds.base.World`; import nothing heavy at module level), import it below and
add it to :data:`WORLDS`. Its dataset spec (``NAME:key=value,...``), ``validate`` and its
``simcnn`` controls then work without another edit.

This package sits beside the dataset formats and the encoders (the "sources" layer); it never
imports :mod:`s2r.datasets` or :mod:`s2r.encoders` (they reach it, not the other way round).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Optional

from s2r.errors import DataError
from s2r.worlds import demo, metaworld
from s2r.worlds.base import (LOOKS, Control, ControlTask, Demonstration, RolloutBatch,
                             SceneMemory, SimTask, TaskColumns, World)

__all__ = ["WORLDS", "LOOKS", "Control", "ControlTask", "Demonstration", "RolloutBatch",
           "SceneMemory", "SimTask", "TaskColumns", "World", "Worlds", "check_control_world",
           "control", "controls", "frame_cost", "task_gaps"]


class Worlds(Mapping):
    """The registry: name -> :class:`~s2r.worlds.base.World`, in registration order.

    ``WORLDS[name]`` of an unknown name raises :class:`~s2r.errors.DataError`, one line naming
    the close matches and every world; ``name in WORLDS`` asks without raising.
    """

    def __init__(self, *worlds: World):
        self._worlds: dict = {}
        for world in worlds:
            if world.name in self._worlds:
                raise ValueError(f"world {world.name!r} is registered twice")
            self._worlds[world.name] = world
        seen: dict = {}
        for world in worlds:
            for cid in world.controls:
                if cid in seen:
                    raise ValueError(f"control {cid!r} of world {world.name!r} is also "
                                     f"{seen[cid]!r}'s")
                seen[cid] = world.name

    def __getitem__(self, name: str) -> World:
        world = self._worlds.get(name) if isinstance(name, str) else None
        if world is None:
            close = difflib.get_close_matches(str(name), list(self._worlds), n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise DataError(f"unknown world {name!r}; {hint}the worlds are: "
                            f"{', '.join(self._worlds)}")
        return world

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and name in self._worlds

    def __iter__(self) -> Iterator[str]:
        return iter(self._worlds)

    def __len__(self) -> int:
        return len(self._worlds)


#: Every world, by name (one line each).
WORLDS = Worlds(
    demo.WORLD,
    metaworld.WORLD,
)


def controls() -> dict[str, Control]:
    """Every world's built-in ``simcnn`` controls, by id (ids are unique across worlds)."""
    return {cid: c for world in WORLDS.values() for cid, c in world.controls.items()}


def frame_cost(world: str) -> float:
    """What a frame of ``world`` costs to draw relative to a demo frame
    (:attr:`~s2r.worlds.base.World.frame_cost`; 1.0 where the world declares none)."""
    return float(getattr(WORLDS[world], "frame_cost", 1.0))


def task_gaps() -> dict[tuple[str, Optional[str]], tuple]:
    """Every task's default validation gaps (:attr:`~s2r.worlds.base.SimTask.gaps`), by
    ``(world, task)``: ``task`` is None for a world of one task (the demo)."""
    return {(world.name, name): tuple(world.task({"task": name} if name else None).gaps)
            for world in WORLDS.values() for name in (world.tasks or (None,))}


def check_control_world(control_id: str, world: Optional[str], dataset: str) -> None:
    """A built-in control embeds only frames of the world it was trained for: it stands for a
    known amount of sim-to-real transfer in that world's looks, and says nothing anywhere else
    (and would train minutes to say it). ``world``: the dataset's world name (None: not a
    world's dataset); ``dataset``: what to call the dataset. Any other encoder id passes.

    Raises
    ------
    EncoderError
        ``control_id`` is a control of another world than ``world``; the message names the
        world it was trained for and what to use instead.
    """
    from s2r.errors import EncoderError

    try:
        home, _ = control(control_id)
    except KeyError:
        return
    if world == home.name:
        return
    if world in WORLDS:
        instead = (f"use {WORLDS[world].title}'s own controls "
                   f"({', '.join(WORLDS[world].controls)})")
    else:
        instead = "train one on its sim frames with 's2r train-encoder'"
    raise EncoderError(f"{control_id} is a control of the {home.title} world (trained on its "
                       f"sim frames), not of {dataset}: {instead}")


def control(control_id: str) -> tuple[World, Control]:
    """``(world, control)`` of a built-in control id; ``KeyError`` for any other id."""
    for world in WORLDS.values():
        if control_id in world.controls:
            return world, world.controls[control_id]
    raise KeyError(control_id)

