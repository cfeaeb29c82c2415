"""The simulated worlds' dataset specs as the dashboard writes and reads them, for any world
of :data:`s2r.worlds.WORLDS`: which world a spec names, the options the dashboard opens a world
with (its ``dashboard_defaults`` over its declared defaults), one canonical spec string per set
of options (:func:`s2r.datasets.world.format_world`), a world's task titles and whether it can
run here. Pure: no Streamlit (the home page, the Validation page and :mod:`ui.links` use it).
"""

from __future__ import annotations

from typing import Any, Optional


def _world(world: str):
    from s2r.worlds import WORLDS

    return WORLDS[world]


def worlds() -> list:
    """Every world's name, in registration order."""
    from s2r.worlds import WORLDS

    return list(WORLDS)


def names_world(spec: Any) -> Optional[str]:
    """The world a spec string names (``NAME`` of ``NAME:gap=1``), or None (files, or not
    a string)."""
    from s2r.datasets.world import is_world_spec

    return spec.partition(":")[0] if is_world_spec(spec) else None


def declared(world: str):
    """The world's declared options (:class:`s2r.worlds.options.Options`)."""
    return _world(world).options


def dashboard_options(world: str) -> dict:
    """Every option the dashboard opens ``world`` with: its ``dashboard_defaults`` over the
    declared defaults."""
    w = _world(world)
    return {**w.options.defaults(), **dict(getattr(w, "dashboard_defaults", {}) or {})}


def world_spec(world: str, **options: Any) -> str:
    """The canonical ``world:key=value,...`` spec of ``options`` (the dashboard's options of
    that world filled in; every option written, keys sorted, booleans lower-case)."""
    from s2r.datasets.world import format_world

    return format_world(world, {**dashboard_options(world), **options})


def default_spec() -> str:
    """The dataset the dashboard opens with: the first world at its dashboard options."""
    return world_spec(worlds()[0])


def spec_options(spec: Any) -> Optional[dict]:
    """Every option of a world's spec (the library's defaults filled in), or None for files,
    or a spec the library refuses (the home page then says why)."""
    from s2r.datasets import parse_spec
    from s2r.errors import S2RError

    if names_world(spec) is None:
        return None
    try:
        return dict(parse_spec(spec)["options"])
    except S2RError:
        return None


def world_options(spec: Any, world: str) -> Optional[dict]:
    """Every option of a spec naming ``world``, or None for a spec of another world, files,
    or one the library refuses."""
    return spec_options(spec) if names_world(spec) == world else None


def opening_options(spec: Any, world: str) -> dict:
    """The options a form of ``world`` opens on: the spec in effect when it is that world's
    (and valid), else the world's dashboard options."""
    return world_options(spec, world) or world_spec_options(world)


def world_spec_options(world: str) -> dict:
    """The checked options of the world's dashboard spec."""
    return dict(_world(world).check_options(dashboard_options(world)))


def world_title(world: str) -> str:
    """What pages call a world ("Meta-World (MuJoCo)")."""
    return _world(world).title


def task_title(world: str, task: str) -> str:
    """A task of ``world`` as pages name it: the world's title of it and its name."""
    title = _world(world).task_title(task)
    return title if title == task else f"{title} ({task})"


def unavailable(world: str) -> Optional[str]:
    """None when ``world`` can run here, else the world's one line naming what to install
    (:meth:`s2r.worlds.base.World.unavailable`)."""
    return _world(world).unavailable()


def link_count(world: str, name: str, value: int, low: int, high: int,
               default: int) -> tuple[int, Optional[str]]:
    """A count a link asks for on a page of ``world`` (rollouts, demonstrations), and the note
    saying what changed (None: used as given): within the widget's ``[low, high]`` (a demo
    frame's budget), of which a world whose frames cost more to draw
    (:func:`s2r.worlds.frame_cost`) gets that share, never less than ``default``."""
    from s2r.worlds import frame_cost

    cost = max(frame_cost(world), 1.0)
    most = max(int(default), int(high / cost))
    used = min(max(int(value), int(low)), most)
    if used == value:
        return used, None
    why = (f" for {world_title(world)} (each rollout step or frame draws ~{cost:g}x a demo "
           "frame)" if used == most < high else f" (the page takes {low}-{high})")
    return used, f"{name} clamped from {value:,} to {used:,}{why}"


def world_encoders(known: list, wanted: list, world: str) -> list:
    """The ids of ``wanted`` that ``world`` can validate, in order: those of ``known`` (the
    encoders that run here) that are not another world's sim-trained control
    (:func:`s2r.worlds.control`). When one of another world's controls is left out, ``world``'s
    own default controls are added in its place (a switch of world keeps a control in the
    selection)."""
    from s2r.worlds import WORLDS, control

    def owner(eid: str):
        try:
            return control(eid)[0].name
        except KeyError:
            return None

    kept = [e for e in wanted if e in known and owner(e) in (None, world)]
    if any(owner(e) not in (None, world) for e in wanted):
        kept += [c for c, row in WORLDS[world].controls.items()
                 if row.default and c in known and c not in kept]
    return kept
