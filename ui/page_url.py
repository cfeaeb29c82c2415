"""A page's own options in its URL, next to the shared ones (dataset, encoders, inspect).

A page declares its options once (:class:`Option`: query parameter, session key of the widget,
the values a link may name) and calls :func:`sync` before drawing those widgets: on the page's
first run in a session (a reload, a copied link) the values the URL names are put in the
widgets' keys, each value that is not allowed is named in a warning and left at its default;
on every run :func:`publish_url` writes them to the URL with the shared ones
(:func:`params`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import streamlit as st

from s2r.errors import S2RError
from ui import links
from ui import state as S
from ui.loaders import data


@dataclass(frozen=True)
class Option:
    """One page option in the URL.

    Attributes
    ----------
    param : str
        Query parameter.
    key : str
        Session key of the widget.
    values : mapping str -> value
        What a link may say, and the widget value each text stands for.
    many : bool
        A multiselect: the value is a list, written comma-separated (``a,b``).
    most : int
        With ``many``: at most this many values (0 = no limit), counted once each (a value
        repeated in the link is kept once, and the page says so).
    limit : callable, optional
        ``limit(value) -> (value used, note or None)``: what a link may ask for of an allowed
        value (e.g. a count bounded by what it costs in the page's world); the note says
        what was changed.
    """

    param: str
    key: str
    values: Mapping[str, Any]
    many: bool = False
    most: int = 0
    limit: Optional[Callable[[Any], tuple]] = None


class IntRange(Mapping):
    """The whole numbers ``low..high`` as the texts a link may say (``"0"`` ... ``"10000"``),
    without listing them: a text is one of them only when written as Python writes the number
    (no sign on 0, no leading zero, no other digits than 0-9), so a hostile value (``-1``,
    ``007``, ``1e3``, 5,000 digits) is refused before any conversion."""

    def __init__(self, low: int, high: int):
        self.low, self.high = int(low), int(high)

    def _number(self, text) -> Any:
        if not isinstance(text, str) or not 0 < len(text) <= len(str(self.high)) + 1:
            return None
        if not (text.isascii() and text.lstrip("-").isdigit()):
            return None
        value = int(text)
        return value if str(value) == text and self.low <= value <= self.high else None

    def __contains__(self, text) -> bool:
        return self._number(text) is not None

    def __getitem__(self, text) -> int:
        value = self._number(text)
        if value is None:
            raise KeyError(text)
        return value

    def __iter__(self) -> Iterator[str]:
        return (str(v) for v in range(self.low, self.high + 1))

    def __len__(self) -> int:
        return self.high - self.low + 1

    def text_of(self, value) -> Any:
        """The text of ``value`` (None when it is not one of the numbers)."""
        ok = isinstance(value, int) and not isinstance(value, bool) \
            and self.low <= value <= self.high
        return str(value) if ok else None

    def __str__(self) -> str:
        return f"a whole number from {self.low} to {self.high}"


def _allowed(option: Option) -> str:
    """What a warning says the option may be."""
    if isinstance(option.values, IntRange):
        return str(option.values)
    return ", ".join(option.values)


def _text_of(values: Mapping[str, Any], value: Any) -> Any:
    """The text a link says for ``value`` (None: none)."""
    if isinstance(values, IntRange):
        return values.text_of(value)
    return next((t for t, v in values.items() if v == value), None)


def bool_option(param: str, key: str) -> Option:
    """A checkbox or toggle as ``param=1`` / ``param=0``."""
    return Option(param, key, {"1": True, "0": False})


def pair_options(frameset, keys) -> list[Option]:
    """``episode=`` and ``step=`` of a page's sim frame pair (:func:`ui.widgets.pair_picker`
    keys ``keys``): the sim episodes and steps of ``frameset``."""
    import numpy as np

    sim = frameset.domain == "sim"
    episodes = sorted(int(e) for e in np.unique(frameset.episode[sim]))
    steps = sorted(int(s) for s in np.unique(frameset.step[sim]))
    return [Option("episode", keys.episode, {str(e): e for e in episodes}),
            Option("step", keys.step, {str(s): s for s in steps})]


def _page() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


def keep_link() -> None:
    """Keep the query parameters the session was opened with (called once, before the
    shared view is published, which rewrites the URL)."""
    st.session_state[S.URL_LINK] = (_page(), {k: st.query_params.get_all(k)
                                              for k in st.query_params})


def sync(options: Sequence[Option]) -> None:
    """Read the page's options from the URL on its first run in the session, then publish
    the URL (shared view + these options)."""
    state = st.session_state
    page = _page()
    state[S.URL_PAGE_OPTIONS] = (page, tuple(options))
    flag = f"{S.URL_READ}.{page}"
    link_page, link = state.get(S.URL_LINK, (None, {}))
    if not state.get(flag) and link_page == page:
        state[flag] = True
        notes = []
        for option in options:
            given = link.get(option.param)
            if not given:
                continue
            texts = [t for t in given[-1].split(",") if t] if option.many else [given[-1]]
            if option.many:
                texts, note = distinct_texts(option.param, texts)
                notes += [note] if note else []
            bad = [t for t in texts if t not in option.values]
            if option.most and len(texts) > option.most:
                bad.append(f"more than {option.most}")
            if texts and not bad:
                values = [option.values[t] for t in texts]
                if option.limit is not None:
                    limited = [option.limit(v) for v in values]
                    values = [v for v, _ in limited]
                    notes += list(dict.fromkeys(n for _, n in limited if n))
                state[option.key] = values if option.many else values[0]
            else:
                most = f" (at most {option.most})" if option.most else ""
                shown = given[-1] if len(given[-1]) <= 80 else given[-1][:80] + "..."
                st.warning(f"The link's {option.param}={shown!r} is not "
                           f"{'made of' if option.many else 'one of'} "
                           f"{_allowed(option)}{most}: using the default.",
                           icon=":material/link_off:")
        if notes:
            st.info(f"The link asked for more than this page opens with: {'; '.join(notes)}.",
                    icon=":material/link:")
    publish_url()


def distinct_texts(param: str, texts: Sequence[str]) -> tuple[list, Optional[str]]:
    """``texts`` (a multi-valued option of a link) each once, in order, and the note saying
    how many were given when some repeat (None when none does): a value repeated a thousand
    times costs its work once, not a thousand times."""
    kept = list(dict.fromkeys(texts))
    if len(kept) == len(texts):
        return kept, None
    return kept, (f"{param}: {len(texts):,} values given, {len(kept):,} distinct "
                  f"kept")


def params(state) -> dict:
    """The query parameters of the current page's declared options (their current values)."""
    page, options = state.get(S.URL_PAGE_OPTIONS, (None, ()))
    if page != _page():
        return {}
    out = {}
    for option in options:
        if option.key not in state:
            continue
        values = state[option.key] if option.many else [state[option.key]]
        texts = [_text_of(option.values, value) for value in values]
        if None not in texts:
            out[option.param] = ",".join(texts)
    return out


def restore_from_url() -> None:
    """On a session's first run, take the dataset, encoders, inspected encoder and
    precision from the page URL (:func:`ui.links.read_url`); each value that cannot be used
    is named in an ``st.warning`` and the session keeps its default for it."""
    state = st.session_state
    if state.get(S.URL_READ):
        return
    state[S.URL_READ] = True
    keep_link()  # the page's own options, read when the page declares them
    values, warnings = links.read_url({k: st.query_params.get_all(k) for k in st.query_params})
    if S.DATASET_SPEC in values:
        try:  # the keys inside the files, the files' contents: only a load tells
            with st.spinner("Loading the dataset of the link..."):
                data.load_frameset(values[S.DATASET_SPEC],
                                      values[S.DATASET_KEYS]).require_domains()
        except S2RError as exc:
            warnings.append(links.dataset_link_warning(exc))
            del values[S.DATASET_SPEC], values[S.DATASET_KEYS]
    state.update(values)
    for message in warnings:
        st.warning(message, icon=":material/link_off:")


def publish_url() -> None:
    """Write the session's view to the page URL (:func:`ui.links.url_params`), so a reload
    or a copied link opens it again. Called where the view changes; a no-op when the URL
    already says it (opening another page clears the URL, so every page calls it)."""
    view = {**links.url_params(st.session_state), **params(st.session_state)}
    wanted = {k: v if isinstance(v, list) else [v] for k, v in view.items()}
    if {k: st.query_params.get_all(k) for k in st.query_params} != wanted:
        st.query_params.from_dict(view)
