"""s2r's import graph and the architecture rules it must keep.

Run ``python -m tests.tools.import_graph`` from the repository root: it prints every rule
broken (exit status 1) or ``ok`` with the graph's size.
``tests/architecture/test_import_graph.py`` runs the same checks in ``make test``.

The graph holds the library (``s2r/``), the dashboard's glue (``ui/``), its pages
(``app_pages/``) and ``app.py``. Every ``import`` counts, including the ones inside functions: a
function-local import is still an edge (it only hides it from a reader). Rules:

1. no import cycle anywhere;
2. layers: a module imports only modules of its own layer or of layers below it
   (:data:`LAYERS`, top down: pages -> ui -> CLI -> pipeline -> computation -> sources ->
   leaves); the pure layers (``s2r.metrics``, ``s2r.projection``, ``s2r.saliency``) moreover
   never import the cache, the encoder registry and builders, the embedding step or the
   pipeline; the worlds (``s2r.worlds``) never import the dataset formats, the encoders or
   the cache beside them (:data:`WORLDS_NEVER_IMPORT`: those reach a world through its
   registry, so no cycle can form);
3. the encoder registry (``s2r.encoders.registry``) holds data and look-up only: within the
   encoders package it imports the spec, the built-in entries, the user config, the backend
   table and name suggestions (:data:`REGISTRY_MAY_IMPORT`), never a builder, a backend
   module or the weights code;
4. a private module (``pkg._name``) is imported only from inside its own package ``pkg``, and
   so is a private name: ``from pkg.mod import _name`` (or ``from pkg import _name``) outside
   ``pkg`` is a violation;
5. only :mod:`s2r.settings` reads the environment (``os.environ`` / ``os.getenv``);
6. no module in ``s2r/`` is longer than :data:`MAX_LINES` lines, none in ``ui/`` longer than
   :data:`MAX_UI_LINES`;
7. the library never reaches the dashboard (``ui/``, ``app_pages/``, ``app.py``, or the
   installed ``s2r_dashboard``) by a way the graph cannot see: ``importlib.import_module``,
   ``__import__`` or ``runpy.run_module`` of a name (a string, or an f-string's leading text)
   naming one, an import of ``s2r_dashboard``, or an edit of ``sys.path`` (``sys.path.insert``
   and the other list methods, an assignment, ``from sys import path``, ``site.addsitedir``).
   A plain ``import ui...`` from ``s2r/`` is a layer breach (rule 2).
8. settings at the edges: only the modules of :data:`SETTINGS_EDGES` (the CLI, the pipeline's
   entry points, the dashboard) get the settings with :func:`s2r.settings.current`; every other
   module takes them as an argument (an import of ``current`` counts, however it is spelled:
   ``from s2r.settings import current``, ``s2r.settings.current``, ``settings.current`` of
   ``from s2r import settings``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "s2r"
#: What the graph holds besides the library: the dashboard's glue package and its pages.
DASHBOARD = ("ui", "app_pages")
MAX_LINES = 520
#: The dashboard's glue modules stay shorter: one concern each.
MAX_UI_LINES = 250
#: Top-level names of the dashboard, in a clone (``ui``, ``app_pages``, ``app``) and installed.
DASHBOARD_NAMES = (*DASHBOARD, "app", "s2r_dashboard")
PURE = ("s2r.metrics", "s2r.projection", "s2r.saliency", "s2r.evidence")
ORCHESTRATION = ("s2r.cache", "s2r.encoders", "s2r.embed", "s2r.pipeline")
WORLDS_NEVER_IMPORT = ("s2r.datasets", "s2r.encoders", "s2r.cache")
REGISTRY_MAY_IMPORT = {f"s2r.encoders.{m}" for m in ("spec", "builtins", "config", "backend",
                                                      "suggest")}
#: The layers, top down: module-name prefixes (the most specific prefix wins).
LAYERS = (
    ("pages", ("app", "app_pages")),
    ("ui", ("ui",)),
    ("cli", ("s2r.cli", "s2r.commands", "s2r.__main__", "s2r.dashboard")),
    ("pipeline", ("s2r.pipeline", "s2r.closedloop.encoder_rollouts", "s2r.closedloop.validation",
                  "s2r.closedloop.layer_choice", "s2r.closedloop.study",
                  "s2r.closedloop.study_ray", "s2r.leaderboard", "s2r.figures")),
    ("computation", ("s2r.embed", "s2r.metrics", "s2r.projection", "s2r.saliency",
                     "s2r.pairing", "s2r.closedloop", "s2r.evidence")),
    ("sources", ("s2r.datasets", "s2r.worlds", "s2r.encoders", "s2r.cache")),
    ("leaves", ("s2r", "s2r.frameset", "s2r.images", "s2r.identity", "s2r.atomic",
                "s2r.checks", "s2r.errors", "s2r.inputs", "s2r.options", "s2r.progress",
                "s2r.settings")),
)
#: The one module that reads the environment.
SETTINGS = "s2r.settings"
#: The modules that may call ``s2r.settings.current()`` (rule 8): the settings themselves, the
#: CLI and its commands, the pipeline's entry points (``s2r.pipeline``, the closed loop's
#: ``validate``), the dashboard.
SETTINGS_EDGES = (SETTINGS, "s2r.cli", "s2r.commands", "s2r.pipeline",
                  "s2r.closedloop.validation", "s2r.closedloop.study", "ui", "app_pages", "app")


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the library, the dashboard's glue and
    pages, and ``app.py``."""
    found = {}
    for top in (PACKAGE, *DASHBOARD):
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    if (root / "app.py").is_file():
        found["app"] = root / "app.py"
    return found


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, module: str, known: Iterable[str]) -> set[str]:
    """First-party modules ``module`` imports anywhere in its file (function-local too)."""
    known = set(known)
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, module, is_package)
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in known else target
                     for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # `import s2r.a.b` -> the deepest known module
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return out


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> first-party modules it imports."""
    mods = modules(root)
    return {m: imports(p, m, mods) for m, p in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` (0 = top) of ``module``: its most specific prefix's layer."""
    best, depth = len(LAYERS) - 1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _within(module, (prefix,)) and prefix.count(".") > depth:
                best, depth = index, prefix.count(".")
    return best


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """Rule 2 and 3 breaches, as ``"a -> b"`` lines."""
    bad = []
    for module, targets in sorted(edges.items()):
        bad += [f"{module} ({LAYERS[layer_of(module)][0]}) -> {t} ({LAYERS[layer_of(t)][0]})"
                for t in sorted(targets) if layer_of(t) < layer_of(module)]
        if _within(module, PURE):
            bad += [f"{module} -> {t}" for t in sorted(targets) if _within(t, ORCHESTRATION)]
        if _within(module, ("s2r.worlds",)):
            bad += [f"{module} -> {t}" for t in sorted(targets)
                    if _within(t, WORLDS_NEVER_IMPORT)]
        if module == "s2r.encoders.registry":
            bad += [f"{module} -> {t}" for t in sorted(targets)
                    if _within(t, ("s2r.encoders",)) and t not in REGISTRY_MAY_IMPORT]
    return bad


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_violations(edges: dict[str, set[str]]) -> list[str]:
    """Rule 4, modules: imports of another package's private module, as ``"a -> b"`` lines."""
    bad = []
    for module, targets in sorted(edges.items()):
        for t in sorted(targets):
            package, _, name = t.rpartition(".")
            if _private(name) and not _within(module, (package,)):
                bad.append(f"{module} -> {t}")
    return bad


def private_name_imports(root: Path = ROOT) -> list[str]:
    """Rule 4, names: ``from pkg.mod import _name`` (``from pkg import _name``) in a module
    outside ``pkg``, as ``"a -> pkg.mod._name"`` lines (a private module imported that way is
    :func:`private_violations`' line, not repeated here)."""
    mods = modules(root)
    bad = []
    for module, path in sorted(mods.items()):
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _absolute(node, module, is_package)
            if target not in mods:
                continue                      # not first-party
            owner = target if mods[target].name == "__init__.py" else target.rpartition(".")[0]
            for alias in node.names:
                if (_private(alias.name) and f"{target}.{alias.name}" not in mods
                        and not _within(module, (owner,))):
                    bad.append(f"{module} -> {target}.{alias.name}")
    return bad


def environment_readers(root: Path = ROOT) -> list[str]:
    """Rule 5: ``module:line`` of every ``os.environ`` / ``os.getenv`` / ``environ`` use
    outside :data:`SETTINGS`."""
    out = []
    for module, path in modules(root).items():
        if module == SETTINGS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            hit = (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
                   or isinstance(node, ast.ImportFrom) and node.module == "os"
                   and any(a.name in ("environ", "getenv") for a in node.names))
            if hit:
                out.append(f"{module}:{node.lineno}")
    return out


def _settings_aliases(tree: ast.AST) -> tuple[set, set]:
    """(names bound to ``s2r.settings.current``, names bound to the ``s2r.settings`` module)
    by the imports of ``tree``."""
    functions, modules_ = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == SETTINGS and not node.level:
            functions |= {a.asname or a.name for a in node.names if a.name in ("current", "*")}
        elif isinstance(node, ast.ImportFrom) and node.module == PACKAGE and not node.level:
            modules_ |= {a.asname or a.name for a in node.names if a.name == "settings"}
        elif isinstance(node, ast.Import):
            modules_ |= {a.asname for a in node.names if a.name == SETTINGS and a.asname}
    return functions, modules_


def settings_readers(root: Path = ROOT) -> list[str]:
    """Rule 8: ``module:line`` of every use of ``s2r.settings.current`` outside
    :data:`SETTINGS_EDGES`."""
    out = []
    for module, path in modules(root).items():
        if _within(module, SETTINGS_EDGES):
            continue
        tree = ast.parse(path.read_text(), str(path))
        functions, settings_modules = _settings_aliases(tree)
        for node in ast.walk(tree):
            hit = (isinstance(node, ast.ImportFrom) and node.module == SETTINGS
                   and any(a.name in ("current", "*") for a in node.names)
                   or isinstance(node, ast.Name) and node.id in functions
                   and isinstance(node.ctx, ast.Load)
                   or isinstance(node, ast.Attribute) and node.attr == "current"
                   and (ast.unparse(node.value) in settings_modules
                        or ast.unparse(node.value) == SETTINGS))
            if hit:
                out.append(f"{module}:{node.lineno}")
    return sorted(set(out), key=lambda m: (m.rsplit(":", 1)[0], int(m.rsplit(":", 1)[1])))


def long_modules(root: Path = ROOT, limit: int = MAX_LINES,
                 ui_limit: int = MAX_UI_LINES) -> list[str]:
    """Library modules over ``limit`` lines and ``ui`` modules over ``ui_limit``, as
    ``"module: N lines"``."""
    out = []
    for module, path in modules(root).items():
        most = limit if _within(module, (PACKAGE,)) else ui_limit if _within(module, ("ui",)) \
            else None
        if most is None:
            continue
        n = len(path.read_text().splitlines())
        if n > most:
            out.append(f"{module}: {n} lines")
    return out


_DYNAMIC_IMPORTS = ("import_module", "__import__", "run_module")
_LIST_EDITS = ("insert", "append", "extend", "remove", "pop", "clear", "__setitem__",
               "__iadd__")


def _names_dashboard(node: ast.AST) -> bool:
    """Whether a string (or an f-string's leading text) is a dotted name in the dashboard."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    return node.value.split(".")[0] in DASHBOARD_NAMES and "/" not in node.value


def _is_sys_path(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "path" \
        and isinstance(node.value, ast.Name) and node.value.id == "sys"


def _dashboard_reach(node: ast.AST) -> str | None:
    """What ``node`` does to reach the dashboard, or None."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _DYNAMIC_IMPORTS and node.args and _names_dashboard(node.args[0]):
            return f"{name}({ast.unparse(node.args[0])})"
        if isinstance(func, ast.Attribute) and func.attr in _LIST_EDITS \
                and _is_sys_path(func.value):
            return f"sys.path.{func.attr}(...)"
        if name == "addsitedir":
            return "site.addsitedir(...)"
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if _is_sys_path(target) or isinstance(target, ast.Subscript) \
                    and _is_sys_path(target.value):
                return "an assignment to sys.path"
    if isinstance(node, ast.ImportFrom) and node.module == "sys" \
            and any(a.name == "path" for a in node.names):
        return "from sys import path"
    names = ([a.name for a in node.names] if isinstance(node, ast.Import)
             else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
             else [])
    hit = next((n for n in names if n.split(".")[0] == "s2r_dashboard"), None)
    return f"import {hit}" if hit else None


def dashboard_reaches(root: Path = ROOT) -> list[str]:
    """Rule 7: ``module:line what`` of every way a library module reaches the dashboard
    that the import graph cannot see."""
    out = []
    for module, path in modules(root).items():
        if not _within(module, (PACKAGE,)):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            what = _dashboard_reach(node)
            if what:
                out.append(f"{module}:{node.lineno} {what}")
    return out


def problems(root: Path = ROOT) -> list[str]:
    """Every broken rule, one line each (empty when the architecture holds)."""
    edges = graph(root)
    return ([f"import cycle: {' -> '.join(c)}" for c in cycles(edges)]
            + [f"layer: {v}" for v in layer_violations(edges)]
            + [f"private: {v}" for v in private_violations(edges)]
            + [f"private name: {v}" for v in private_name_imports(root)]
            + [f"environment read outside {SETTINGS}: {m}" for m in environment_readers(root)]
            + [f"settings read below the edges (take them as an argument): {m}"
               for m in settings_readers(root)]
            + [f"too long: {m}" for m in long_modules(root)]
            + [f"library reaches the dashboard: {m}" for m in dashboard_reaches(root)])


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    if not found:
        edges = graph()
        print(f"ok: {len(edges)} modules, {sum(map(len, edges.values()))} import edges, "
              f"no cycle, layers kept, no private module or name imported across packages, "
              f"only {SETTINGS} reads the environment, only the edges call settings.current(), "
              f"every module <= {MAX_LINES} lines (ui: "
              f"<= {MAX_UI_LINES}), the library never reaches the dashboard")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
