"""ui.pages: one module of the dashboard's pages. Adding a page is its file in app_pages/ plus
one entry; no other file names a page script."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.helpers import APP
from ui import pages

REPO = Path(APP).parent


def test_every_page_file_has_one_entry_and_every_entry_a_file():
    files = sorted(p.stem for p in (REPO / pages.FOLDER).glob("*.py"))
    assert sorted(e.name for e in pages.PAGES) == files
    assert len({e.title for e in pages.PAGES}) == len(pages.PAGES)
    assert all((REPO / e.path).is_file() for e in pages.PAGES)
    assert not any(re.match(r"\d", name) for name in files)  # the order is the module's


def test_no_other_file_names_a_page_script():
    named = re.compile(r"app_pages/\w+\.py")
    where = [p for folder in ("ui", "app_pages") for p in (REPO / folder).rglob("*.py")]
    hits = [f"{p.relative_to(REPO)}: {m.group()}" for p in [*where, REPO / "app.py"]
            if p.name != "pages.py" for m in named.finditer(p.read_text())]
    assert hits == []
    assert "st.Page(" not in (REPO / "app.py").read_text()


def test_the_router_navigates_over_the_module_entries(tmp_path):
    (tmp_path / pages.FOLDER).symlink_to(REPO / pages.FOLDER)   # pages resolve next to the router
    router = tmp_path / "router.py"
    router.write_text("import streamlit as st\nfrom ui import pages\n"
                      "st.session_state['pages'] = [(p.title, p.url_path, str(p._page.name))\n"
                      "                             for p in map(pages.page, pages.PAGES)]\n"
                      "st.session_state['default'] = pages.page(pages.PAGES[0])._default\n")
    at = AppTest.from_file(str(router))
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["pages"] == [(e.title, "" if e == pages.PAGES[0] else e.name,
                                          f"{e.name}.py") for e in pages.PAGES]
    assert at.session_state["default"] is True
    assert "pages.navigation()" in (REPO / "app.py").read_text()
