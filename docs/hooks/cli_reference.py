"""MkDocs hook: the CLI reference page, generated from ``s2r.cli.build_parser()`` at build time.

A page that holds the line ``<!-- cli-reference -->`` gets, in its place, one section per
command (and per sub-command, e.g. ``figure scores``) with its description and its
``--help`` text, so the reference cannot drift from the parser. Registered in ``mkdocs.yml``
(``hooks:``); :func:`cli_markdown` is also what ``tests/docs/test_docs.py`` checks.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

#: The repository root: the ``s2r`` the site documents (a clone needs no install).
ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- cli-reference -->"


def _subcommands(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:  # argparse keeps sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _section(name: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    parser.prog = f"s2r {name}"
    out = [f"{'#' * level} `{name}`", ""]
    if parser.description:
        out += [parser.description, ""]
    out += ["```text", parser.format_help().rstrip(), "```", ""]
    for sub, child in _subcommands(parser).items():
        out += _section(f"{name} {sub}", child, level + 1)
    return out


def cli_markdown() -> str:
    """The reference: ``s2r --help``, then every command's ``--help``."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from s2r.cli import build_parser

    os.environ.setdefault("COLUMNS", "100")  # argparse wraps help to the terminal width
    parser = build_parser()
    lines = ["```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in _subcommands(parser).items():
        lines += _section(name, sub, 2)
    return "\n".join(lines)


def on_page_markdown(markdown: str, **kwargs) -> str:
    """MkDocs event: replace the marker with the generated reference."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_markdown())
