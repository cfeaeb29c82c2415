"""Packaging of s2r beyond pyproject.toml: the dashboard ships inside the distribution.

The library is the ``s2r`` package. The Streamlit dashboard (``app.py``, ``app_pages/``, ``ui/``
and ``.streamlit/config.toml`` at the repository root, where ``streamlit run app.py`` and
``make run`` use them) is installed as the ``s2r_dashboard`` folder, which ``s2r app`` runs
(``s2r/dashboard.py`` finds it). ``app_pages/`` has no ``__init__.py`` on purpose (Streamlit
pages are scripts); setuptools copies its modules all the same.
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    """build_py without this file: the root folder is also ``s2r_dashboard``'s folder."""

    def find_package_modules(self, package, package_dir):
        return [m for m in super().find_package_modules(package, package_dir)
                if (m[0], m[1]) != ("s2r_dashboard", "setup")]


setup(
    cmdclass={"build_py": BuildPy},
    packages=find_packages(include=["s2r", "s2r.*"])
    + ["s2r_dashboard", "s2r_dashboard.app_pages"]
    + [f"s2r_dashboard.{p}" for p in find_packages(include=["ui", "ui.*"])],
    package_dir={"s2r_dashboard": "."},
    package_data={"s2r_dashboard": [".streamlit/config.toml"],
                  "s2r.evidence": ["data/evidence.json"]},   # the shipped evidence
    # The root folder is the dashboard's package folder: only the files named above, not
    # README/Makefile/requirements that an sdist carries there.
    include_package_data=False,
)
