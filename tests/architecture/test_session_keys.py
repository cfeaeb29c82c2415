"""Every Streamlit session key is named in ``ui/state.py`` (issue 34): no page and no other
``ui`` module writes a key as a string of its own (``key="scores.csv"``,
``st.session_state["results.records"]``); they use the names defined there (or build on one,
``f"{S.PROJECTION_MAP}.{eid}"``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / "ui" / "state.py"
#: What a session key looks like: dotted lower-case words (``scores.rank_metric``).
KEY_SHAPE = re.compile(r"[a-z_]+(\.[a-z_]+)+")


def _literal(node: ast.AST) -> str | None:
    """The text of a string constant, or of an f-string's leading constant part."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_state(node: ast.AST) -> bool:
    """``st.session_state``, ``session_state`` or a local ``state`` alias of it."""
    return (isinstance(node, ast.Attribute) and node.attr == "session_state") \
        or (isinstance(node, ast.Name) and node.id in ("session_state", "state"))


def key_literals(path: Path) -> list[str]:
    """``file:line 'text'`` of every session key written as a string literal in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        texts = []
        if isinstance(node, ast.Call):
            texts += [_literal(k.value) for k in node.keywords if k.arg == "key"]
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("get", "setdefault", "pop") \
                    and _is_state(func.value) and node.args:
                texts.append(_literal(node.args[0]))
        elif isinstance(node, ast.Subscript) and _is_state(node.value):
            texts.append(_literal(node.slice))
        elif isinstance(node, ast.Assign) and node.col_offset == 0:   # RESULTS = "a.b"
            text = _literal(node.value)
            texts.append(text if text and KEY_SHAPE.fullmatch(text) else None)
        found += [f"{path.relative_to(ROOT)}:{node.lineno} {t!r}" for t in texts if t]
    return sorted(found, key=lambda line: int(line.split(":")[1].split()[0]))


def _files() -> list[Path]:
    return [p for p in [*sorted((ROOT / "ui").rglob("*.py")),
                        *sorted((ROOT / "app_pages").glob("*.py")), ROOT / "app.py"]
            if p != STATE]


def test_no_page_or_ui_module_writes_a_session_key_of_its_own():
    assert [line for path in _files() for line in key_literals(path)] == []


def test_the_check_finds_each_way_of_writing_a_key(tmp_path, monkeypatch):
    monkeypatch.setattr("tests.architecture.test_session_keys.ROOT", tmp_path)
    page = tmp_path / "page.py"
    page.write_text("import streamlit as st\nfrom ui import state as S\nstate = st.session_state\n"
                    "st.button('a', key='home.go')\n"
                    "st.altair_chart(c, key=f'scores.tsne.{x}')\n"
                    "st.session_state['results.records'] = {}\n"
                    "state.setdefault('home.seen', 1)\n"
                    "st.session_state.get('url.read')\n"
                    "st.button('b', key=S.HOME_DOWNLOAD)\n"             # fine: named in state
                    "st.pydeck_chart(d, key=f'{S.PROJECTION_MAP}.{x}')\n"
                    "state[S.PRECISION] = 'auto'\nd = {'a': 1}\nd['b']\n"
                    "MISSES = 'results.misses'\nHOME = 'app_pages/home.py'\n")
    assert key_literals(page) == [
        "page.py:4 'home.go'", "page.py:5 'scores.tsne.'", "page.py:6 'results.records'",
        "page.py:7 'home.seen'", "page.py:8 'url.read'", "page.py:14 'results.misses'"]
