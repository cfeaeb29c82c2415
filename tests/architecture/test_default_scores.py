"""No default score is written outside :func:`s2r.evidence.default_score`.

The paper's two scores (the Sim2Real score and the transfer skill) used to be the literal
default of every page, command and chart. The evidence now decides: in ``app_pages/``,
``ui/``, ``s2r/commands/`` and ``s2r/figures/``, one of their keys may still be named (a
table of which probe decides which score, a column read), but never as a default:

- the default of a function's parameter;
- the ``default=`` of a call (argparse options);
- the value of a ``setdefault(key, value)`` call (a page's opening choice);
- help text saying ``default sim2real_score`` (or the transfer skill).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("app_pages", "ui", "s2r/commands", "s2r/figures")
DEFAULT_LITERALS = ("sim2real_score", "transfer_score_skill")


def _named(node) -> bool:
    return any(isinstance(n, ast.Constant) and n.value in DEFAULT_LITERALS
               for n in ast.walk(node))


def defaults_written(source: str, name: str = "<source>") -> list[str]:
    """``name:line: what`` of every default score literal written as a default in
    ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            for d in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
                if _named(d):
                    found.append(f"{name}:{d.lineno}: a parameter's default")
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "default" and _named(kw.value):
                    found.append(f"{name}:{node.lineno}: default=")
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr == "setdefault"
                    and len(node.args) > 1 and _named(node.args[1])):
                found.append(f"{name}:{node.lineno}: setdefault(...)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.lower()
            if any(f"default {k}" in text or f"default: {k}" in text for k in DEFAULT_LITERALS):
                found.append(f"{name}:{node.lineno}: help text naming a default")
    return found


def test_the_checker_finds_each_kind_of_default():
    planted = '''
def f(y="transfer_score_skill"): pass
def g(*, key: str = "sim2real_score"): pass
p.add_argument("--y", default="sim2real_score")
state.setdefault(S.Y, "transfer_score_skill")
h = "the score (default sim2real_score)"
PENALTY = {"transfer_score": ("sim2real_score", "transfer_score_skill")}
row.get("transfer_score_skill")
'''
    found = defaults_written(planted)
    assert [line.split(": ", 1)[1] for line in found] == [
        "a parameter's default", "a parameter's default", "default=", "setdefault(...)",
        "help text naming a default"], found


def test_no_default_score_literal_in_pages_commands_and_figures():
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += defaults_written(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, ("default scores come from s2r.evidence.default_score, not literals: "
                       + "; ".join(found))
