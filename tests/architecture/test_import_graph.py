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
    # the cache (a source) importing the pipeline breaks the layer order too
    assert "layer: s2r.cache (sources) -> s2r.pipeline (pipeline)" in found
    assert len(found) == 5


def test_the_checker_finds_upward_imports_private_modules_and_environment_reads(tmp_path):
    _fake_package(tmp_path, {
        "__init__.py": "",
        "settings.py": "import os\nX = os.environ.get('A')\n",          # the one reader
        "datasets/__init__.py": "",
        "datasets/_lfs.py": "",
        "datasets/folder.py": "from s2r.datasets import _lfs\n",         # own package: fine
        "images.py": "def f():\n    from s2r.datasets._lfs import g\n",  # private + upward
        "embed/__init__.py": "from os import environ\n",
        "cache/__init__.py": "import os\nD = os.getenv('S2R_CACHE_DIR')\n",
    })
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "__init__.py").write_text("")
    (tmp_path / "ui" / "charts.py").write_text("import os\nos.environ['X'] = '1'\n")
    (tmp_path / "app.py").write_text("import ui.charts\n")                   # downward: fine
    (tmp_path / "s2r" / "dashboard.py").write_text("import ui.charts\n")     # CLI -> ui: up
    found = ig.problems(tmp_path)
    assert "layer: s2r.images (leaves) -> s2r.datasets._lfs (sources)" in found
    assert "layer: s2r.dashboard (cli) -> ui.charts (ui)" in found
    assert "private: s2r.images -> s2r.datasets._lfs" in found
    readers = sorted(line.rpartition(": ")[2] for line in found if line.startswith("environment"))
    assert readers == ["s2r.cache:2", "s2r.embed:1", "ui.charts:2"]
    assert len(found) == 6


def test_the_checker_passes_a_clean_package(tmp_path):
    root = _fake_package(tmp_path, {"__init__.py": "", "a.py": "import s2r.b\n", "b.py": ""})
    assert ig.problems(root) == []
    assert ig.graph(root) == {"s2r": set(), "s2r.a": {"s2r.b"}, "s2r.b": set()}
    assert ig.layer_of("app_pages.1_Scores") < ig.layer_of("ui.charts") < ig.layer_of("s2r.cli") \
        < ig.layer_of("s2r.pipeline.scores") < ig.layer_of("s2r.metrics.dis") \
        < ig.layer_of("s2r.cache.store") < ig.layer_of("s2r.errors")
    # the most specific prefix wins: the closed loop's pipeline step above its computation;
    # the worlds are sources, beside the dataset formats and the encoders
    assert [ig.layer_of(f"s2r.closedloop.{m}") for m in ("validation", "rollout", "policy.bc")] \
        == [ig.layer_of("s2r.pipeline"), ig.layer_of("s2r.metrics"), ig.layer_of("s2r.metrics")]
    assert ig.layer_of("s2r.worlds.demo.task") == ig.layer_of("s2r.datasets") \
        == ig.layer_of("s2r.encoders.backends.simcnn")


def test_the_checker_finds_the_library_reaching_the_dashboard_and_long_ui_modules(tmp_path):
    """Rule 7 (issue 34): what the graph cannot see -- a dynamic import naming the dashboard,
    the installed dashboard, an edit of sys.path -- and rule 6's shorter limit for ui/."""
    _fake_package(tmp_path, {
        "__init__.py": "",
        "dashboard.py": ("import importlib, sys\nsys.path.insert(0, '/x')\n"
                         "M = importlib.import_module('ui.charts')\n"),
        "figure.py": "def f(name):\n    return __import__(f'app_pages.{name}')\n",
        "paths.py": "import sys\nsys.path = ['a']\nsys.path[0:0] = ['b']\nsys.path += ['c']\n",
        "site_edit.py": "import site\nsite.addsitedir('/y')\nfrom sys import path\n",
        "installed.py": "import s2r_dashboard.ui.charts\nfrom s2r_dashboard import app\n",
        "fine.py": ("import importlib, os.path, runpy, sys\n"
                    "importlib.import_module('s2r.commands.x')\n"
                    "importlib.import_module(f's2r.commands.{sys.argv[0]}')\n"
                    "runpy.run_module('s2r.cli')\nFILE = 'ui/charts.py'\nP = list(sys.path)\n"),
    })
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "__init__.py").write_text("")
    (tmp_path / "ui" / "long.py").write_text("\n" * (ig.MAX_UI_LINES + 1))
    (tmp_path / "ui" / "short.py").write_text("\n" * ig.MAX_UI_LINES)
    (tmp_path / "app.py").write_text("import importlib\nimportlib.import_module('ui.long')\n")
    found = ig.problems(tmp_path)
    reach = sorted(line.split(": ", 1)[1] for line in found
                   if line.startswith("library reaches the dashboard"))
    assert reach == sorted([
        "s2r.dashboard:2 sys.path.insert(...)",
        "s2r.dashboard:3 import_module('ui.charts')",
        "s2r.figure:2 __import__(f'app_pages.{name}')",
        "s2r.paths:2 an assignment to sys.path", "s2r.paths:3 an assignment to sys.path",
        "s2r.paths:4 an assignment to sys.path",
        "s2r.site_edit:2 site.addsitedir(...)", "s2r.site_edit:3 from sys import path",
        "s2r.installed:1 import s2r_dashboard.ui.charts",
        "s2r.installed:2 import s2r_dashboard"])
    assert f"too long: ui.long: {ig.MAX_UI_LINES + 1} lines" in found
    assert len(found) == len(reach) + 1          # the dashboard itself may import freely



def test_the_checker_finds_private_names_imported_across_packages(tmp_path):
    _fake_package(tmp_path, {
        "__init__.py": "",
        "worlds/__init__.py": "_REGISTRY = {}\n",
        "worlds/demo/__init__.py": "",
        "worlds/demo/policy.py": "def _waypoints():\n    pass\n",
        "worlds/demo/scripted.py": "from s2r.worlds.demo.policy import _waypoints\n",  # fine
        "worlds/demo/expert.py": "from .policy import _waypoints\n",               # fine
        "worlds/other.py": "from s2r.worlds import _REGISTRY\n",           # own package: fine
        "closedloop/__init__.py": "",
        "closedloop/rollout.py": "def f():\n    from s2r.worlds.demo.policy import "
                                 "_waypoints, __doc__\n",
        "closedloop/validation.py": "from s2r.worlds import _REGISTRY\n",
        "closedloop/bc.py": "from s2r.worlds.demo.policy import waypoints_\n",   # not private
    })
    found = ig.problems(tmp_path)
    assert sorted(found) == [
        "private name: s2r.closedloop.rollout -> s2r.worlds.demo.policy._waypoints",
        "private name: s2r.closedloop.validation -> s2r.worlds._REGISTRY"]


def test_the_worlds_never_import_the_datasets_encoders_or_cache_beside_them(tmp_path):
    _fake_package(tmp_path, {
        "__init__.py": "",
        "frameset.py": "",
        "datasets/__init__.py": "from s2r import worlds\n",              # a source using it
        "encoders/__init__.py": "",
        "encoders/simcnn.py": "def f():\n    from s2r.worlds import WORLDS\n",
        "worlds/__init__.py": "from s2r.worlds import demo\n",
        "worlds/demo/__init__.py": "from s2r import frameset\nfrom . import controls\n",
        "worlds/demo/controls.py": "def f():\n    import s2r.encoders.simcnn\n",
    })
    assert ig.problems(tmp_path) == [
        "import cycle: s2r.encoders.simcnn -> s2r.worlds -> s2r.worlds.demo -> "
        "s2r.worlds.demo.controls",
        "layer: s2r.worlds.demo.controls -> s2r.encoders.simcnn"]


def test_the_checker_finds_settings_read_below_the_edges(tmp_path):
    """Rule 8 (issue 34): ``s2r.settings.current()`` only at the edges, however it is spelled;
    a library module that takes its settings as an argument (and uses ``need``) passes."""
    _fake_package(tmp_path, {
        "__init__.py": "",
        "settings.py": "def current():\n    pass\n\n\ndef need(s, what):\n    return s\n",
        "cache/__init__.py": "",
        "cache/layout.py": "def f():\n    from s2r.settings import current\n"
                           "    return current().cache_dir\n",                    # 2 + 3
        "encoders/__init__.py": "",
        "encoders/locate.py": "import s2r.settings as cfg\n\n\n"
                              "def f():\n    return cfg.current()\n",            # 5
        "embed/__init__.py": "",
        "embed/ray.py": "from s2r import settings\n\n\n"
                        "def f():\n    return settings.current().ray_address\n",  # 5
        "datasets/__init__.py": "",
        "datasets/hub.py": "from s2r.settings import need\n\n\n"
                           "def f(settings=None):\n    return need(settings, 'x')\n",  # fine
        "pipeline/__init__.py": "",
        "pipeline/scores.py": "from s2r.settings import current\n\n\n"
                              "def f(settings=None):\n    return settings or current()\n",
        "cli.py": "from s2r.settings import current\nS = current\n",
    })
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "__init__.py").write_text("from s2r.settings import current\ncurrent()\n")
    found = [line for line in ig.problems(tmp_path) if line.startswith("settings read")]
    assert sorted(line.rpartition(": ")[2] for line in found) == [
        "s2r.cache.layout:2", "s2r.cache.layout:3", "s2r.embed.ray:5", "s2r.encoders.locate:5"]
    assert all("take them as an argument" in line for line in found)
