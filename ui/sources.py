"""The home page's dataset sources: every world of :data:`s2r.worlds.WORLDS`, and files on disk.

A world's inputs are drawn from its declared options (:func:`world_inputs`): a widget per
shown option (a selectbox for choices, a checkbox for a switch, a slider for a bounded number
with a fraction, a number input otherwise; the world's ``widget_low``/``widget_high`` when
given), a frame-size select in place of a shown height and width, each opening on the spec
in effect (else the world's dashboard options) and kept while it is not drawn
(:func:`ui.widgets.kept`). Hidden options stay as the spec in effect says.
"""

from __future__ import annotations

from typing import Any, Optional

import streamlit as st

from ui import widgets, world_specs
from ui import state as S

#: The source radio's choice of files (a world's is its name; a world's name has no spaces).
FILES = "Files on disk"
#: The frame sizes offered (height, width), small first: a CPU renders and embeds the tiny
#: size in seconds.
SIZES = {"96x128 (tiny)": (96, 128), "128x160 (fast)": (128, 160),
         "240x320 (FurnitureBench size)": (240, 320)}
SIZE = ("height", "width")
#: Column widths of the inputs: a slider and the size select get more room.
WIDTHS = {"slider": 3, "size": 3}


def size_label(size: tuple) -> str:
    """The :data:`SIZES` label of ``(height, width)``, or ``"HxW"``."""
    return next((k for k, v in SIZES.items() if v == tuple(size)), f"{size[0]}x{size[1]}")


def size_of(label: str) -> tuple:
    """``(height, width)`` of a size label."""
    return SIZES.get(label) or tuple(int(v) for v in label.split("x"))


def choices() -> list:
    """The source radio's choices: every world's name, then :data:`FILES`."""
    return [*world_specs.worlds(), FILES]


def source_title(source: str) -> str:
    return source if source == FILES else world_specs.world_title(source)


def source_of(spec: Any) -> str:
    """The source radio's choice for the spec in effect."""
    return world_specs.names_world(spec) or FILES


def _kind(option, opts: dict) -> tuple:
    """``(widget, low, high)`` of a shown option at the options ``opts``."""
    if option.kind is bool:
        return "checkbox", None, None
    if option.kind is str:
        return "selectbox", None, None
    low, high = option.bounds(opts)
    low = option.widget_low if option.widget_low is not None else low
    high = option.widget_high if option.widget_high is not None else high
    bounded = low is not None and high is not None
    return ("slider" if option.kind is float and bounded else "number"), low, high


def _draw(world: str, option, opts: dict, where) -> Any:
    """Draw one option's widget in ``where``; its value. A number's range stretches to hold
    the value it opens on (the spec in effect may be outside the form's usual range)."""
    widget, low, high = _kind(option, opts)
    key, label = S.home_option(world, option.name), option.label or option.name
    help_ = option.help or None
    if widget == "selectbox":
        fmt = ((lambda t: world_specs.task_title(world, t)) if option.name == "task" else str)
        return where.selectbox(label, list(option.choices), format_func=fmt, help=help_,
                               **widgets.kept(key, opts[option.name]))
    if widget == "checkbox":
        return where.checkbox(label, help=help_, **widgets.kept(key, bool(opts[option.name])))
    kept = widgets.kept(key, option.kind(opts[option.name]))
    value = st.session_state[key]
    low = None if low is None else min(option.kind(low), value)
    high = None if high is None else max(option.kind(high), value)
    if widget == "slider":
        step = round((high - low) / 20, 6)
        return round(float(where.slider(label, float(low), float(high), step=step, help=help_,
                                        **kept)), 6)
    if option.kind is int:
        return int(where.number_input(label, low, high, step=1, help=help_, **kept))
    return float(where.number_input(label, low, high, help=help_, **kept))


def world_inputs(world: str, current: Any) -> Optional[str]:
    """Draw ``world``'s inputs and return the spec they say; None (after one line saying what
    to install) when the world cannot run on this machine."""
    reason = world_specs.unavailable(world)
    if reason:
        st.warning(f"{world_specs.world_title(world)} cannot run here: {reason}.",
                   icon=":material/block:")
        return None
    opts = world_specs.opening_options(current, world)
    shown = [o for o in world_specs.declared(world).values() if o.shown]
    sized = all(any(o.name == n for o in shown) for n in SIZE)
    picks = [o for o in shown if o.kind is str]
    row = [o for o in shown if o.kind is not str and not (sized and o.name in SIZE)]
    values = {o.name: _draw(world, o, opts, st) for o in picks}
    widths = [WIDTHS.get(_kind(o, opts)[0], 2) for o in row] + ([WIDTHS["size"]] if sized else [])
    columns = st.columns(widths) if widths else []
    values.update({o.name: _draw(world, o, opts, c) for o, c in zip(row, columns)})
    if sized:
        key = S.home_option(world, "size")
        kept = widgets.kept(key, size_label((int(opts["height"]), int(opts["width"]))))
        label = columns[-1].selectbox("Frame size", list(dict.fromkeys(
            [*SIZES, st.session_state[f"{S.KEPT}.{key}"]])), **kept)
        values.update(zip(SIZE, size_of(label)))
    return world_specs.world_spec(world, **{**opts, **values})
