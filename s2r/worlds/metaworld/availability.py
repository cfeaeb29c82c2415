"""Can Meta-World run here? One line naming what to install when it cannot.

Meta-World needs the ``metaworld`` package and ``gymnasium[mujoco]`` (``mujoco``, and
``packaging``, which gymnasium's MuJoCo module imports), and an off-screen OpenGL: EGL by
default (``MUJOCO_GL=egl``, set where unset: :func:`s2r.settings.prefer_headless_rendering`;
on Debian the ``libegl1`` and ``libgl1-mesa-dri`` packages, which ``make setup`` installs), or
OSMesa (``MUJOCO_GL=osmesa``, ``libosmesa6``). The libraries are looked up, not loaded: a
machine whose EGL fails at run time gets the worker's one-line error then
(:mod:`.pool`). ``PYOPENGL_PLATFORM``, where set, must name the same backend: MuJoCo's EGL and
OSMesa modules refuse any other with an ImportError when first imported.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Optional

from s2r.settings import prefer_headless_rendering

__all__ = ["missing", "PACKAGES", "INSTALL"]

#: The Python packages Meta-World needs (import names).
PACKAGES = ("metaworld", "mujoco", "gymnasium", "packaging")
#: What installs them.
INSTALL = "pip install metaworld 'gymnasium[mujoco]'"


@functools.lru_cache(maxsize=None)
def _library(name: str) -> bool:
    """Whether the shared library ``lib{name}`` is installed (looked up, not loaded)."""
    import ctypes.util

    return ctypes.util.find_library(name) is not None


def _package(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def platform_conflict(backend: str) -> Optional[str]:
    """One line when ``PYOPENGL_PLATFORM`` names another platform than the off-screen
    ``backend`` (``egl``, ``osmesa``) MuJoCo would render with, else None. Read from the
    environment before MuJoCo's GL module is imported, as MuJoCo reads it then; once one is
    imported in this process the platform is settled (and the variable MuJoCo's own)."""
    import sys

    from s2r.inputs import quoted
    from s2r.settings import opengl_platform

    platform = opengl_platform()
    if backend not in ("egl", "osmesa") or not platform or platform.lower() == backend \
            or any(f"mujoco.{name}" in sys.modules for name in ("egl", "osmesa")):
        return None
    return (f"Meta-World renders off-screen with MUJOCO_GL={backend} and PYOPENGL_PLATFORM is "
            f"set to {quoted(platform)}, which MuJoCo refuses beside it: unset PYOPENGL_PLATFORM "
            f"or set it to {backend}")


def missing() -> Optional[str]:
    """None when Meta-World can run here, else one line naming what to install."""
    absent = [name for name in PACKAGES if not _package(name)]
    if absent:
        return (f"Meta-World needs the metaworld and gymnasium[mujoco] packages "
                f"({', '.join(absent)} not installed): {INSTALL}")
    backend = prefer_headless_rendering()
    conflict = platform_conflict(backend)
    if conflict:
        return conflict
    if backend == "egl":
        if not _library("EGL") or not (_library("EGL_mesa") or _library("EGL_nvidia")):
            return ("Meta-World renders off-screen with EGL (MUJOCO_GL=egl) and this machine "
                    "has no EGL driver: install libegl1 and libgl1-mesa-dri (Debian: apt-get "
                    "install libegl1 libgl1-mesa-dri; make setup does it), or set "
                    "MUJOCO_GL=osmesa with libosmesa6")
    elif backend == "osmesa":
        if not _library("OSMesa"):
            return ("Meta-World renders off-screen with OSMesa (MUJOCO_GL=osmesa) and this "
                    "machine has no OSMesa library: install libosmesa6 (Debian), or unset "
                    "MUJOCO_GL for EGL")
    else:
        return (f"Meta-World renders off-screen and MUJOCO_GL={backend} does not: unset it "
                "(EGL) or set MUJOCO_GL=egl or osmesa")
    return None
