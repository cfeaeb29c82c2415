"""The architecture rules of ``tests/tools/import_graph.py`` hold (issue 12): no import cycle in
``s2r/``, pure layers free of orchestration, a data-only encoder registry, short modules.

The rule checker itself is tested on a small fake package, so a checker that finds nothing
cannot pass for an architecture that holds.
"""

from __future__ import annotations

from pathlib import Path

from tests.tools import import_graph as ig


def test_s2r_keeps_its_architecture():
    assert ig.problems() == []


def _fake_package(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / "s2r" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_finds_cycles_layer_breaches_and_long_modules(tmp_path):
    root = _fake_package(tmp_path, {
        "__init__.py": "",
        "cache.py": "import s2r.pipeline\n",
        "pipeline.py": "def f():\n    from s2r import cache\n",      # function-local: counted
        "metrics/__init__.py": "",
        "metrics/dis.py": "from ..cache import x\n",                    # relative: resolved
        "encoders/__init__.py": "",
        "encoders/registry.py": "from s2r.encoders import spec, build\n",
        "encoders/spec.py": "",
        "encoders/build.py": "\n" * (ig.MAX_LINES + 1),
    })
    found = ig.problems(root)
    assert "import cycle: s2r.cache -> s2r.pipeline" in found
    assert "layer: s2r.metrics.dis -> s2r.cache" in found
    assert "layer: s2r.encoders.registry -> s2r.encoders.build" in found
    assert not any("registry -> s2r.encoders.spec" in line for line in found)
    assert f"too long: s2r.encoders.build: {ig.MAX_LINES + 1} lines" in found
    assert len(found) == 4


def test_the_checker_passes_a_clean_package(tmp_path):
    root = _fake_package(tmp_path, {"__init__.py": "", "a.py": "import s2r.b\n", "b.py": ""})
    assert ig.problems(root) == []
    assert ig.graph(root) == {"s2r": set(), "s2r.a": {"s2r.b"}, "s2r.b": set()}
