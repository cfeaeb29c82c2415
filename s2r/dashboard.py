"""Where the Streamlit dashboard's files are: a clone's root, or the installed distribution.

The dashboard (``app.py``, ``app_pages/``, ``ui/``, ``.streamlit/config.toml``) is not part of
the library (``s2r`` never imports Streamlit). In a clone it sits next to the ``s2r/`` folder;
``pip install`` ships the same files in the ``s2r_dashboard`` folder of the distribution
(``setup.py`` maps them there). :func:`dashboard_dir` finds either, and ``python -m s2r app``
runs ``streamlit run`` on its ``app.py``. Nothing in ``s2r`` imports those files: the charts
the pages draw are built by :mod:`s2r.figures`, which ``python -m s2r figure`` calls too.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
