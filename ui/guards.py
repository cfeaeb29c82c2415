"""What every page does first: the run's set-up (the router), the page header, and the
guards that stop a page with what to do (a setting, the cache folder or the encoder config
that cannot be used; a dataset that does not load; nothing computed yet).
"""

from __future__ import annotations

import streamlit as st

from s2r.errors import S2RError
from ui import compute, page_url, pages
from ui import state as S
from ui.loaders import data

def app_setup() -> None:
    """What every run does once, before the page (the router, ``app.py``): page config, the
    session's named state, the user's encoder config (a broken one stops every page with
    what is wrong in it), and the page URL on the session's first run."""
    st.set_page_config(page_title="s2r", page_icon=":material/precision_manufacturing:",
                       layout="wide")
    settings_or_stop()
    S.init_state(st.session_state)
    encoder_config_or_stop()
    page_url.restore_from_url()


def page_header(title: str, caption: str) -> None:
    """Title and one-line explanation (every page starts with it); the URL then says the
    page's view."""
    st.set_page_config(page_title=f"s2r · {title}")
    st.title(title)
    st.caption(caption)
    page_url.publish_url()


def settings_or_stop() -> None:
    """Read the server's settings (``S2R_*``, :mod:`s2r.settings`) and check its cache folder;
    when one cannot be used, say which and why and stop the page (every page reads them)."""
    from s2r.settings import current

    try:
        current()
    except S2RError as exc:
        st.error(f"**A setting of this server cannot be used:** {exc}", icon=":material/error:")
        st.caption("Fix the variable (or unset it for its default) and restart the dashboard.")
        st.stop()
    try:
        data.get_cache()
    except S2RError as exc:
        st.error(f"**The cache folder cannot be used:** {exc}", icon=":material/error:")
        st.caption("Point `S2R_CACHE_DIR` (or `s2r app --cache-dir`) at an empty or new "
                   "folder, or the one s2r made, and restart the dashboard.")
        st.stop()


def encoder_config_or_stop() -> None:
    """Read the user's encoder config (``$S2R_ENCODERS`` / ``./s2r_encoders.toml``); when it is
    broken, say what is wrong in it and stop the page (every page lists encoders)."""
    from s2r.encoders import list_encoders
    from s2r.settings import current as settings_now
    from s2r.errors import S2RError

    try:
        list_encoders(include_random=True, settings=settings_now())
    except S2RError as exc:
        st.error(f"**The encoder config cannot be used:** {exc}", icon=":material/error:")
        st.caption("Fix the file (or point `S2R_ENCODERS` at another one) and reload the page.")
        st.stop()


def results_page(title: str, caption: str, what: str):
    """Header of a results page, then ``(frameset, records)`` or the "what to do" message.

    ``what`` completes "this page then shows ..." in the message of a page opened before
    anything was computed.
    """
    page_header(title, caption)
    return require_results(what)


def nothing_computed(what: str, reason: str = "") -> None:
    """Say what to do (compute on the home page) and stop the page."""
    st.info(f"**Nothing computed yet{reason}.** Go to the home page, pick a dataset and "
            f"encoders and press **Compute scores**; this page then shows {what}.")
    pages.link(pages.HOME, "Go to the home page")
    st.stop()


def current_frameset():
    """The FrameSet named by the session's dataset spec, or an error + stop."""
    state = st.session_state
    try:
        with st.spinner("Loading the dataset..."):
            return data.load_frameset(state[S.DATASET_SPEC], state[S.DATASET_KEYS])
    except S2RError as exc:
        st.error(f"The dataset could not be loaded: {exc}")
        pages.link(pages.HOME, "Choose another dataset on the home page")
        st.stop()


def require_results(what: str):
    """``(frameset, records)`` for the session's dataset and encoders, or say what to do.

    Records come from the session, else from the disk cache (a page reload or a page opened
    directly after an earlier session computed them); nothing is computed here.
    """
    state = st.session_state
    frameset = current_frameset()
    with st.spinner("Looking for computed scores..."):
        records, errors = compute.lookup_records(state, frameset, state[S.ENCODERS_SELECTED],
                                                 data.get_cache())
    for eid, message in errors.items():
        st.warning(f"{eid}: {message}")
    if not records:
        nothing_computed(what, f" for the dataset '{frameset.name}'")
    return frameset, records
