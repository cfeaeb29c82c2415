"""The documentation site: the CLI reference is generated from the parser (every command and
sub-command, with its current options), every page is in the nav, the README stays a landing
page. (`make test` builds the whole site with ``mkdocs build --strict``.)"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml

from s2r.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]


def _hook():
    spec = importlib.util.spec_from_file_location("cli_reference",
                                                  ROOT / "docs" / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_has_every_command_and_its_options():
    text = _hook().cli_markdown()
    headings = re.findall(r"^#+ `([^`]+)`$", text, flags=re.M)
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert len(commands) == len(COMMANDS) and set(commands) <= set(headings)
    assert {f"figure {k}" for k in ("scores", "tsne", "saliency", "compare", "validation")} \
        <= set(headings)
    # an option added to a parser is in the page without editing it
    assert "--real-results FILE.csv" in text and "--port N" in text
    for action in commands["validate"]._actions:
        for flag in action.option_strings:
            assert flag in text, flag


def test_the_page_marker_is_replaced_and_other_pages_are_untouched():
    hook = _hook()
    page = (ROOT / "docs" / "cli.md").read_text()
    assert hook.MARKER in page
    out = hook.on_page_markdown(page)
    assert hook.MARKER not in out and "usage: s2r figure scores" in out
    assert hook.on_page_markdown("# other\n") == "# other\n"


def test_every_docs_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))
    listed = {next(iter(item.values())) for item in config["nav"]}
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert pages == listed


def test_readme_is_a_landing_page_whose_links_exist():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "make test" in text and "make run" in text      # .ci/run runs the README's command
    links = re.findall(r"\]\(((?:docs/)[^)#\s]+)", text)
    assert links and all((ROOT / link).exists() for link in links), links
