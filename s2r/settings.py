"""Every setting s2r reads from the environment, in one place.

:func:`current` reads the environment once into a frozen :class:`Settings`; the CLI reads it
once per command and the dashboard once per script run, and hand it down. A library function
that needs a setting takes ``settings=None`` and reads :func:`current` only when its caller
gave none. No other module reads ``os.environ`` (``tests/architecture`` checks it).

======================  ======================  ============================================
variable                field                   meaning (default)
======================  ======================  ============================================
``S2R_CACHE_DIR``       ``cache_dir``           the cache folder (``./cache``)
``S2R_WEIGHTS_DIR``     ``weights_dir``         the weights folder (``./weights``)
``S2R_ENCODERS``        ``encoders_config``     the user-encoder config file (none: then
                                                ``./s2r_encoders.toml``/``.json`` if present)
``S2R_WEIGHTS_MIRROR``  ``weights_mirror``      base URL of a weights mirror (none)
``S2R_OFFLINE``         ``offline``             never download weights (off)
``HF_HUB_OFFLINE``      ``hf_offline``          Hugging Face offline mode; also stops
                                                s2r's weight downloads (off)
``HF_HUB_CACHE``,       ``hf_hub_cache``        the Hugging Face hub cache
``HF_HOME``,                                    (``~/.cache/huggingface/hub``)
``XDG_CACHE_HOME``
``S2R_RAY_ADDRESS``     ``ray_address``         the Ray cluster the app and ``--backend
                                                ray`` use (none: a Ray instance here)
``S2R_DEMO_SPEC``       ``demo_spec``           the dashboard's dataset (the built-in demo);
                                                two files joined by ``os.pathsep``
``S2R_DEFAULT_ENCODERS`` ``default_encoders``   the dashboard's first encoders, comma-
                                                separated (its built-in choice)
``S2R_AUTOCOMPUTE``     ``autocompute``         the home page computes the default set on
                                                first visit (on)
``S2R_DATA_ROOTS``      ``data_roots``          folders a dataset named by a page link may
                                                lie under, ``os.pathsep``-separated (the
                                                working folder and the home folder)
======================  ======================  ============================================

A switch is on for ``1``, ``true``, ``yes``, ``on`` and off for ``0``, ``false``, ``no``,
``off`` (any case); anything else, or an empty value, means its default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

__all__ = ["Settings", "current", "child_environment", "prefer_passive_openmp"]

_ON, _OFF = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _text(env: Mapping[str, str], name: str) -> Optional[str]:
    value = env.get(name, "").strip()
    return value or None


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    value = env.get(name, "").strip().lower()
    return True if value in _ON else False if value in _OFF else default


def _hub_cache(env: Mapping[str, str]) -> Path:
    if _text(env, "HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"].strip()).expanduser()
    home = _text(env, "HF_HOME") or os.path.join(
        _text(env, "XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface")
    return Path(home).expanduser() / "hub"


@dataclass(frozen=True)
class Settings:
    """s2r's settings (the module docstring's table)."""

    cache_dir: Path
    weights_dir: Path
    encoders_config: Optional[Path]
    weights_mirror: Optional[str]
    offline: bool
    hf_offline: bool
    hf_hub_cache: Path
    hf_hub_cache_set: bool
    ray_address: Optional[str]
    demo_spec: Optional[str]
    default_encoders: Optional[tuple[str, ...]]
    autocompute: bool
    data_roots: tuple[str, ...]

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> "Settings":
        """The settings of the environment ``env`` (a mapping of variable -> value)."""
        encoders = _text(env, "S2R_DEFAULT_ENCODERS")
        roots = _text(env, "S2R_DATA_ROOTS")
        root_list = ([r for r in roots.split(os.pathsep) if r.strip()] if roots
                     else [os.getcwd(), os.path.expanduser("~")])
        config = _text(env, "S2R_ENCODERS")
        cache = _text(env, "S2R_CACHE_DIR")
        mirror = _text(env, "S2R_WEIGHTS_MIRROR")
        return cls(
            cache_dir=Path(cache) if cache else Path.cwd() / "cache",
            weights_dir=Path(_text(env, "S2R_WEIGHTS_DIR") or "weights").expanduser(),
            encoders_config=Path(config).expanduser() if config else None,
            weights_mirror=mirror.rstrip("/") or None if mirror else None,
            offline=_switch(env, "S2R_OFFLINE", False),
            hf_offline=_switch(env, "HF_HUB_OFFLINE", False),
            hf_hub_cache=_hub_cache(env),
            hf_hub_cache_set=_text(env, "HF_HUB_CACHE") is not None,
            ray_address=_text(env, "S2R_RAY_ADDRESS"),
            demo_spec=_text(env, "S2R_DEMO_SPEC"),
            default_encoders=(tuple(e.strip() for e in encoders.split(",") if e.strip())
                              or None) if encoders else None,
            autocompute=_switch(env, "S2R_AUTOCOMPUTE", True),
            data_roots=tuple(os.path.realpath(r) for r in root_list),
        )

    @property
    def no_downloads(self) -> bool:
        """Whether weight downloads are off (``S2R_OFFLINE`` or ``HF_HUB_OFFLINE``)."""
        return self.offline or self.hf_offline


def current() -> Settings:
    """The settings of this process's environment, read now."""
    return Settings.from_environ(os.environ)


def child_environment(**variables: str) -> dict[str, str]:
    """This process's environment with ``variables`` set: what a child process (the
    dashboard's Streamlit server) is started with."""
    env = dict(os.environ)
    env.update(variables)
    return env


def prefer_passive_openmp() -> None:
    """Let idle OpenMP threads wait passively unless the user chose otherwise
    (``OMP_WAIT_POLICY``): must run before torch, scikit-learn or openTSNE load their OpenMP
    runtime (busy-waiting threads cost 6-9x on a shared machine; see :mod:`s2r.projection`)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
