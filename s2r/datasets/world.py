"""World dataset specs: ``NAME`` or ``NAME:key=value,...`` for every world ``NAME`` of
:data:`s2r.worlds.WORLDS` (``demo:gap=0.5,episodes=8``) reads the world's expert episodes in
both looks (:meth:`~s2r.worlds.base.World.dataset`).

The options are the world's (:attr:`~s2r.worlds.base.World.options`), each typed by its
default (int, float, bool or str); the world checks their values
(:meth:`~s2r.worlds.base.World.check_options`). The size is bounded here for every world
before anything is rendered: ``2 * episodes * steps`` frames (both domains) of
``height x width`` pixels, at most :data:`MAX_WORLD_FRAMES` frames and
:data:`MAX_WORLD_BYTES` bytes decoded; ``large=true`` lifts the limit, explicitly, up to a
ceiling nothing lifts (:data:`MAX_LARGE_FRAMES`, :data:`MAX_LARGE_BYTES`).
"""

from __future__ import annotations

from typing import Optional

from s2r.datasets.format import Format, LoadRequest
from s2r.errors import DataError
from s2r.frameset import FrameSet
from s2r.progress import ProgressCallback
from s2r.worlds import WORLDS

__all__ = ["LARGE_OPTION", "MAX_LARGE_BYTES", "MAX_LARGE_FRAMES", "MAX_WORLD_BYTES",
           "MAX_WORLD_FRAMES", "WORLD_FORMAT", "WorldFormat",
           "check_size", "format_world", "is_world", "is_world_spec", "load_world",
           "parse_world", "world_identity"]

#: The size limit of a world's dataset, checked before rendering: frames in both domains, and
#: the bytes they take decoded (frames x height x width x 3).
MAX_WORLD_FRAMES = 50_000
MAX_WORLD_BYTES = 2 * 1024**3
#: The option that lifts the limit (``python -m s2r demo --large``).
LARGE_OPTION = "large"
#: The ceiling of a ``large=true`` dataset (20 times the limit): a day or more of rendering and
#: embedding on a CPU, where a typo (``episodes=100000000``) would be years.
MAX_LARGE_FRAMES = 1_000_000
MAX_LARGE_BYTES = 40 * 1024**3
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def is_world(kind: str) -> bool:
    """Whether ``kind`` (a parsed spec's) names a world."""
    return kind in WORLDS


def is_world_spec(text: str) -> bool:
    """Whether the spec string ``text`` names a world: ``NAME`` or ``NAME:...``."""
    return is_world(text.partition(":")[0]) if isinstance(text, str) else False


def _parse_bool(key: str, text: str, spec: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE + _FALSE:
        return low in _TRUE
    raise DataError(f"dataset spec {spec!r}: option {key}={text!r} must be true or false")


def _parse_value(kind: type, key: str, text: str, spec: str):
    """One ``key=value`` of a world spec, converted to its option's ``kind``: a number in ASCII
    digits only (:func:`s2r.inputs.parse_integer`, :func:`~s2r.inputs.parse_decimal`), so
    ``height=6_4`` or ``height=٦٤`` is refused, not read as 64."""
    if kind is bool:
        return _parse_bool(key, text, spec)
    if kind is str:
        return text
    from s2r.inputs import DECIMAL_FORM, INTEGER_FORM, parse_decimal, parse_integer

    try:
        return parse_integer(text) if kind is int else parse_decimal(text)
    except ValueError:
        form = INTEGER_FORM if kind is int else DECIMAL_FORM
        raise DataError(f"dataset spec {spec!r}: option {key}={text!r} must be {form}") from None


def check_size(options: dict, where: str, name: str, *, large: bool = False) -> None:
    """Raise :class:`DataError` when a world's ``options`` ask for more than the size limit,
    or, with ``large``, more than the ceiling (``where`` starts the message, ``name`` is the
    world's)."""
    frames = 2 * int(options["episodes"]) * int(options["steps"])
    nbytes = frames * int(options["height"]) * int(options["width"]) * 3
    size = (f"{options['episodes']} episodes x {options['steps']} steps x 2 domains = "
            f"{frames:,} frames of {options['height']}x{options['width']} "
            f"({nbytes / 1024**3:.1f} GiB)")
    if large and (frames > MAX_LARGE_FRAMES or nbytes > MAX_LARGE_BYTES):
        raise DataError(f"{where}: {size} is over the ceiling of {MAX_LARGE_FRAMES:,} frames "
                        f"and {MAX_LARGE_BYTES // 1024**3} GiB, which {LARGE_OPTION}=true does "
                        f"not lift; ask for fewer episodes or steps, or smaller frames")
    if not large and (frames > MAX_WORLD_FRAMES or nbytes > MAX_WORLD_BYTES):
        raise DataError(f"{where}: {size} is over the {name}'s limit of "
                        f"{MAX_WORLD_FRAMES:,} frames and {MAX_WORLD_BYTES // 1024**3} GiB; add "
                        f"{LARGE_OPTION}=true to render it anyway (up to {MAX_LARGE_FRAMES:,} "
                        f"frames and {MAX_LARGE_BYTES // 1024**3} GiB)")


def parse_world(spec: str, *, sized: bool = True) -> dict:
    """Validate a world's spec string without rendering anything.

    Parameters
    ----------
    spec : str
    sized : bool
        Check the size limit (and, with ``large=true``, the ceiling). False: every other
        check only, for a caller that bounds the size itself (a dashboard link opens the most
        it may).

    Returns
    -------
    dict
        ``{"kind": NAME, "options": {every option of the world}}``.

    Raises
    ------
    DataError
        A world that cannot run here (what to install), an unknown or repeated option, a
        value of the wrong type or out of range, a size over the limit without
        ``large=true`` or over the ceiling with it; one line, naming the spec and the option.
    """
    name, _, rest = spec.partition(":")
    world = WORLDS[name]
    missing = world.unavailable()
    if missing:
        raise DataError(f"dataset spec {spec!r}: {missing}")
    options = world.options.defaults()
    seen, large = set(), False
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if key in seen:
            raise DataError(f"dataset spec {spec!r}: option {key!r} is given twice; give each "
                            "option once")
        seen.add(key)
        if key == LARGE_OPTION:
            large = _parse_bool(key, value.strip(), spec)
            continue
        if key not in world.options:
            raise DataError(f"dataset spec {spec!r}: unknown {name} option {key!r}; known "
                            f"options: {', '.join(world.options)}")
        if not eq or not value.strip():
            raise DataError(f"dataset spec {spec!r}: option {key!r} needs a value ({key}=...)")
        options[key] = _parse_value(world.options[key].kind, key, value.strip(), spec)
    try:
        checked = world.check_options(options)
    except DataError as exc:
        raise DataError(f"dataset spec {spec!r}: {exc}") from None
    options = {key: checked[key] for key in world.options}
    if sized:
        check_size(options, f"dataset spec {spec!r}", name, large=large)
    return {"kind": name, "options": options}


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def format_world(kind: str, options: dict) -> str:
    """The canonical spec string of a world's dataset: the inverse of :func:`parse_world`.

    Every option of the world is written (a missing one at its default), keys sorted, booleans
    lower-case, so one dataset has one string, and a string keeps its meaning if a default
    changes later; an option declared ``written=False`` is written only away from its default
    (added later, it leaves every spec written before unchanged).
    ``parse_world(format_world(kind, o))["options"] == o`` for checked options.

    Raises
    ------
    DataError
        An unknown world or option, or a value the world's checks refuse (the size limit is
        :func:`parse_world`'s: a spec over it is written and refused when parsed).
    """
    world = WORLDS[kind]
    try:
        checked = world.check_options(dict(options))
    except DataError as exc:
        raise DataError(f"{kind} options: {exc}") from None
    declared = world.options
    return f"{kind}:" + ",".join(f"{key}={_text(checked[key])}" for key in sorted(checked)
                                 if declared[key].written or checked[key] != declared[key].default)


def load_world(parsed: dict, progress: Optional[ProgressCallback] = None) -> FrameSet:
    """The FrameSet of a parsed world spec (:func:`parse_world`)."""
    return WORLDS[parsed["kind"]].dataset(dict(parsed["options"]), progress)


def world_identity(parsed: dict) -> bytes:
    """A world's storage identity: constant (its frames are made, not read from storage)."""
    from s2r.identity import digest

    return digest(parsed["kind"])



class WorldFormat(Format):
    """The dataset format of the worlds: ``NAME`` or ``NAME:key=value,...`` for every world of
    :data:`s2r.worlds.WORLDS` (a single spec, both domains). It asks the registry at every
    call, so a world registered later (one line in WORLDS) is a dataset format with no line
    here; a parsed spec's ``kind`` is the world's name."""

    name = "world"

    def names_kind(self, kind: str) -> bool:
        return is_world(kind)

    def claims(self, part) -> bool:
        return isinstance(part, str) and is_world_spec(part)

    def parse(self, parts: tuple) -> dict:
        return parse_world(parts[0])

    def load(self, parsed: dict, request: LoadRequest) -> FrameSet:
        return load_world(parsed, request.progress)

    def identity(self, parsed: dict, settings=None) -> bytes:
        return world_identity(parsed)


#: The worlds' format, first in :data:`s2r.datasets.FORMATS`: a world's name is claimed before
#: any file name (write ``./demo`` for a folder called ``demo``).
WORLD_FORMAT = WorldFormat()


# ----------------------------------------------------------------------------- a spec's world
__all__ += ["task_of", "world_options"]


def world_options(spec, what: str = "validate") -> tuple:
    """``(world, options)`` of a world's dataset spec.

    Parameters
    ----------
    spec : str
        A dataset spec (``"demo:height=96,width=128"``).
    what : str
        What needs a world, for the message.

    Raises
    ------
    DataError
        One line, for a dataset that is not a world's: only a world's frames come from a
        simulator a policy can be deployed in.
    """
    from s2r.datasets.format import spec_parts

    parts = spec_parts(spec)
    if len(parts) != 1 or not WORLD_FORMAT.claims(parts[0]):
        names = ", ".join(f"'{name}:...'" for name in WORLDS)
        raise DataError(f"{what} needs a simulated world's dataset spec ({names}): only a "
                        f"world's frames come from a simulator a policy can be deployed in; "
                        f"got {spec!r}")
    parsed = parse_world(parts[0])
    return WORLDS[parsed["kind"]], dict(parsed["options"])


def task_of(spec):
    """The :class:`~s2r.worlds.base.SimTask` of a world's dataset spec (only the options that
    choose a task matter); a one-line :class:`~s2r.errors.DataError` for any other dataset."""
    world, options = world_options(spec, "the closed loop")
    return world.task(options)
