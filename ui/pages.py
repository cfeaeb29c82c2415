"""The dashboard's pages, in the sidebar's order: one entry per script in ``app_pages/``.

``app.py`` navigates over :data:`PAGES` and every link or switch to a page goes through
:func:`page` (``st.page_link(pages.page(pages.SCORES))``), so no path to a page script is
written anywhere else. Adding a page is its file in ``app_pages/`` plus one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

#: The folder of the page scripts, relative to ``app.py``.
FOLDER = "app_pages"


@dataclass(frozen=True)
class Entry:
    """One page: its script ``app_pages/<name>.py`` (its URL path is ``/<name>``), its title
    and sidebar icon."""

    name: str
    title: str
    icon: str

    @property
    def path(self) -> str:
        """The page script, relative to ``app.py`` (what ``st.Page`` and AppTest take)."""
        return f"{FOLDER}/{self.name}.py"


HOME = Entry("home", "Home", ":material/home:")
SCORES = Entry("scores", "Scores", ":material/scatter_plot:")
PROJECTION = Entry("projection", "Projection", ":material/bubble_chart:")
SALIENCY = Entry("saliency", "Saliency", ":material/local_fire_department:")
COMPARE = Entry("compare", "Compare", ":material/compare:")
LAYERS = Entry("layers", "Layers", ":material/stacked_line_chart:")
VALIDATION = Entry("validation", "Validation", ":material/verified:")

#: Every page, in the sidebar's order; the first opens by default.
PAGES = (HOME, SCORES, PROJECTION, SALIENCY, COMPARE, LAYERS, VALIDATION)


def page(entry: Entry) -> st.Page:
    """The ``st.Page`` of ``entry`` (for ``st.navigation``, ``st.page_link``,
    ``st.switch_page``); its URL path is its script's name (``/scores``), which is also how
    AppTest finds a page."""
    return st.Page(entry.path, title=entry.title, icon=entry.icon, default=entry == PAGES[0])


def navigation():
    """``st.navigation`` over every page (the router calls it once a run)."""
    return st.navigation([page(entry) for entry in PAGES])


def link(entry: Entry, label: str, icon: str = "", where=st) -> None:
    """A link to ``entry`` (``where``: a column or container; icon: the page's by default)."""
    where.page_link(page(entry), label=label, icon=icon or entry.icon)
