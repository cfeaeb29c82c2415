"""The dataset specs of the simulated worlds (``demo:...``, ``metaworld:...``) as the dashboard
writes and reads them: which world a spec names, one canonical spec string per set of options,
a world's tasks and whether it can run here. Pure: no Streamlit (the home page, the Validation
page and :mod:`ui.links` use it).
"""

from __future__ import annotations

from typing import Any, Optional

from ui import state as S

#: The Meta-World world's name (:data:`s2r.worlds.WORLDS`).
METAWORLD = "metaworld"
#: The Meta-World dataset the home page opens with: 6 + 6 expert episodes of 40 steps at
#: 96 x 128 (480 frames, rendered off-screen at ~50 frames/s a core: seconds on a CPU).
DEFAULT_METAWORLD = {"task": "button-press-topdown-v3", "episodes": 6, "steps": 40, "gap": 0.5,
                     "seed": 0, "height": 96, "width": 128}


def names_world(spec: Any) -> Optional[str]:
    """The world a spec string names (``"demo"``, ``"metaworld"``), or None (files, or not a
    string)."""
    from s2r.datasets.world import is_world_spec

    return spec.partition(":")[0] if is_world_spec(spec) else None


def world_spec(world: str, **options: Any) -> str:
    """The canonical ``world:key=value,...`` spec of ``options`` (the dashboard's defaults of
    that world filled in, keys sorted, booleans lower-case)."""
    if world == "demo":
        return S.demo_spec(**options)
    opts = {**(DEFAULT_METAWORLD if world == METAWORLD else {}), **options}

    def text(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    return f"{world}:" + ",".join(f"{k}={text(opts[k])}" for k in sorted(opts))


def world_options(spec: Any, world: str) -> Optional[dict]:
    """Every option of a spec naming ``world`` (the library's defaults filled in), or None for
    a spec of another world, files, or one the library refuses."""
    return S.spec_options(spec) if names_world(spec) == world else None


def world_title(world: str) -> str:
    """What pages call a world ("Meta-World (MuJoCo)")."""
    from s2r.worlds import WORLDS

    return WORLDS[world].title


def tasks(world: str) -> tuple:
    """The tasks of ``world`` a spec's ``task=`` may name (none for a one-task world)."""
    from s2r.worlds import WORLDS

    return tuple(getattr(WORLDS[world], "tasks", ()))


def task_title(task: str) -> str:
    """A Meta-World task as pages name it: its title and its Meta-World name."""
    from s2r.worlds.metaworld.tasks import TASKS

    spec = TASKS.get(task)
    return f"{spec.title} ({task})" if spec is not None else task


def unavailable(world: str) -> Optional[str]:
    """None when ``world`` can run here, else the world's one line naming what to install
    (:meth:`s2r.worlds.base.World.unavailable`)."""
    from s2r.worlds import WORLDS

    check = getattr(WORLDS[world], "unavailable", None)
    return check() if check is not None else None


def world_encoders(known: list, wanted: list, world: str) -> list:
    """The ids of ``wanted`` that ``world`` can validate, in order: those of ``known`` (the
    encoders that run here) that are not another world's sim-trained control
    (:func:`s2r.worlds.control`). When one of another world's controls is left out, ``world``'s
    own controls are added in its place (a switch of world keeps a control in the
    selection)."""
    from s2r.worlds import WORLDS, control

    def owner(eid: str):
        try:
            return control(eid)[0].name
        except KeyError:
            return None

    kept = [e for e in wanted if e in known and owner(e) in (None, world)]
    if any(owner(e) not in (None, world) for e in wanted):
        kept += [c for c in WORLDS[world].controls if c in known and c not in kept]
    return kept
