"""Where the Streamlit dashboard's files are: a clone's root, or the installed distribution.

The dashboard (``app.py``, ``app_pages/``, ``ui/``, ``.streamlit/config.toml``) is not part of
the library (``s2r`` never imports Streamlit). In a clone it sits next to the ``s2r/`` folder;
``pip install`` ships the same files in the ``s2r_dashboard`` folder of the distribution
(``setup.py`` maps them there). :func:`dashboard_dir` finds either; ``python -m s2r app``
runs ``streamlit run`` on its ``app.py``, and ``python -m s2r figure`` draws the dashboard's
own chart builders (``ui.charts``, ``ui.validation``: pure Altair, no Streamlit) through
:func:`dashboard_module`, so a figure file holds the marks of the page.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from s2r.errors import S2RError

#: Name of the installed folder that holds the dashboard.
PACKAGE = "s2r_dashboard"


def _is_dashboard(folder: Path) -> bool:
    return (folder / "app.py").is_file() and (folder / "app_pages").is_dir() \
        and (folder / "ui" / "__init__.py").is_file()


def dashboard_dir() -> Path:
    """The folder holding the dashboard's ``app.py``, ``app_pages/`` and ``ui/``.

    The clone this ``s2r`` was imported from first (so ``make run`` and ``s2r app`` run the
    same files), else the installed ``s2r_dashboard``.

    Raises
    ------
    S2RError
        Neither exists (an install without the dashboard files).
    """
    clone = Path(__file__).resolve().parents[1]
    if _is_dashboard(clone):
        return clone
    spec = importlib.util.find_spec(PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        folder = Path(list(spec.submodule_search_locations)[0])
        if _is_dashboard(folder):
            return folder
    raise S2RError(f"the s2r dashboard files (app.py, app_pages/, ui/) are neither next to "
                   f"{clone / 's2r'} nor installed as {PACKAGE}; reinstall s2r "
                   "(pip install .) or run from a clone")


def dashboard_module(name: str) -> ModuleType:
    """Import a module of the dashboard (``"ui.charts"``) from :func:`dashboard_dir`: the
    folder goes on ``sys.path`` the way ``streamlit run`` puts it there for the pages."""
    folder = str(dashboard_dir())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)
