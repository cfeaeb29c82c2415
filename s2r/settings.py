"""Every setting s2r reads from the environment, in one place.

:func:`current` reads the environment once into a frozen :class:`Settings`. Settings live at
the edges: only the CLI (``s2r/cli.py``, ``s2r/commands/``; once per command, before any
work), the pipeline's entry points (``s2r/pipeline/``, ``s2r.closedloop.validation``) and the
dashboard (``ui/``, ``app_pages/``, ``app.py``) call :func:`current`, and hand the settings
down: a library function takes the setting it needs as an argument (``settings=``, or the one
value: ``Cache(root)``, ``address=``) and never reads the environment. One it was not handed
is a ``TypeError`` where it is needed (:func:`need`), never a silent default. No other module
reads ``os.environ``, and no other module calls :func:`current` (``tests/tools/import_graph.py``
checks both).

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
``S2R_DATASET``         ``dataset``             the dashboard's dataset: a world's spec, a
                                                folder, or two files joined by
                                                ``os.pathsep`` (the first world at its
                                                dashboard options); ``S2R_DEMO_SPEC`` is
                                                its older name, read when it is unset
``S2R_DEFAULT_ENCODERS`` ``default_encoders``   the dashboard's first encoders, comma-
                                                separated (its built-in choice)
``S2R_AUTOCOMPUTE``     ``autocompute``         the home page computes the default set on
                                                first visit (on)
``S2R_DATA_ROOTS``      ``data_roots``          folders a dataset named by a page link may
                                                lie under, ``os.pathsep``-separated (the
                                                working folder and the home folder)
``S2R_RUNTIME``         ``runtime``             what runs the CPU embedding pass: ``torch``,
                                                ``onnx`` or ``auto`` (ONNX Runtime where the
                                                model exports; ``onnx`` = ``auto``); see
                                                :mod:`s2r.encoders.runtime` (``auto``)
``S2R_THREADS``         ``threads``             threads of the CPU embedding pass, torch's
                                                and ONNX Runtime's: ``auto`` (None: every
                                                core this process may use,
                                                :func:`embedding_threads`) or a whole
                                                number >= 1 (``auto``)
``S2R_EVIDENCE``        ``evidence``            the evidence file that decides which score
                                                ranks the encoders and which encoder to
                                                pick (``s2r evidence --out``; none: the
                                                evidence shipped with s2r, with the
                                                reports you added, ``s2r evidence
                                                --add``, kept in the cache folder;
                                                :func:`s2r.evidence.evidence_in_effect`)
======================  ======================  ============================================

Every value is read one way (:func:`current`; a bad value is a :class:`SettingsError`, one
line naming the variable: the CLI prints it and exits with status 2, the app shows it):

- an **unset** variable means its default; one that is **set but empty** (or only
  whitespace) is an error: unset it for the default. Leading and trailing spaces are dropped;
- a value with a **control character** (a newline, a tab, an escape) or longer than
  :data:`MAX_VALUE_CHARS` characters is an error, and so is a path with a name longer than
  255 bytes;
- ``~`` and ``~user`` expand in every path (``S2R_CACHE_DIR``, ``S2R_WEIGHTS_DIR``,
  ``S2R_ENCODERS``, ``S2R_EVIDENCE``, the Hugging Face folders, each of ``S2R_DATA_ROOTS``
  and the paths of ``S2R_DATASET``);
- a switch is on for ``1``, ``true``, ``yes``, ``on`` and off for ``0``, ``false``, ``no``,
  ``off`` (any case); anything else is an error;
- ``S2R_THREADS`` is ``auto`` (any case) or a whole number of at least 1;
- ``S2R_WEIGHTS_MIRROR`` is an ``http://``, ``https://`` or ``file://`` URL; a list
  (``S2R_DEFAULT_ENCODERS``, ``S2R_DATA_ROOTS``) names at least one item.

The variables of other tools (``HF_HUB_OFFLINE``, ``HF_HUB_CACHE``, ``HF_HOME``,
``XDG_CACHE_HOME``) keep their owners' reading: empty means unset, and ``HF_HUB_OFFLINE`` is
on only for ``1``, ``true``, ``yes``, ``on``; their paths are checked like s2r's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from s2r.errors import S2RError
from s2r.inputs import is_integer_text, quoted

__all__ = ["Settings", "SettingsError", "current", "need", "child_environment",
           "prefer_passive_openmp", "prefer_headless_rendering", "core_count", "share_of_cores",
           "embedding_threads", "MAX_VALUE_CHARS"]

_ON, _OFF = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
#: The longest value a variable may hold (characters; a path is at most 4,096 bytes on Linux).
MAX_VALUE_CHARS = 4096
_NAME_MAX = 255  # bytes of one name in a path
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_MIRROR_SCHEMES = ("http://", "https://", "file://")
#: What each of s2r's variables means when it is unset (for the messages).
_DEFAULTS = {
    "S2R_CACHE_DIR": "./cache", "S2R_WEIGHTS_DIR": "./weights",
    "S2R_ENCODERS": "./s2r_encoders.toml or .json when present", "S2R_WEIGHTS_MIRROR": "none",
    "S2R_OFFLINE": "off", "S2R_RAY_ADDRESS": "a Ray instance here",
    "S2R_DATASET": "the built-in demo", "S2R_DEMO_SPEC": "the built-in demo",
    "S2R_DEFAULT_ENCODERS": "the built-in choice",
    "S2R_AUTOCOMPUTE": "on", "S2R_DATA_ROOTS": "the working folder and the home folder",
    "S2R_RUNTIME": "auto", "S2R_THREADS": "auto", "S2R_EVIDENCE": "the shipped evidence",
}
#: What ``S2R_RUNTIME`` accepts (:data:`s2r.encoders.runtime.RUNTIMES`).
_RUNTIMES = ("torch", "onnx", "auto")


class SettingsError(S2RError, ValueError):
    """An environment variable s2r reads holds a value it cannot use (the message names the
    variable, shows at most 100 characters of its value and says what to do)."""


def _text(env: Mapping[str, str], name: str, *, foreign: bool = False) -> Optional[str]:
    """The value of ``name`` without surrounding spaces; None when unset (or, for another
    tool's variable, empty)."""
    raw = env.get(name)
    if raw is None:
        return None
    if len(raw) > MAX_VALUE_CHARS:
        raise SettingsError(f"{name}={quoted(raw)} is longer than {MAX_VALUE_CHARS:,} "
                            "characters; give a shorter value or unset it")
    found = _CONTROL.search(raw)
    if found:
        raise SettingsError(f"{name}={quoted(raw)} holds a control character ({found.group()!r}"
                            f" at character {found.start() + 1}); give it on one line, without "
                            "control characters")
    text = raw.strip()
    if not text and not foreign:
        raise SettingsError(f"{name} is set but empty; unset it for its default "
                            f"({_DEFAULTS[name]}) or give a value")
    return text or None


def _path(name: str, text: str) -> str:
    """``text`` with ``~``/``~user`` expanded; every name in it at most 255 bytes."""
    path = os.path.expanduser(text)
    if path.startswith("~"):
        user = path.split(os.sep, 1)[0]
        raise SettingsError(f"{name}={quoted(text)}: {user} names no user of this machine "
                            "(~ expands to your home folder, ~USER to USER's)")
    for part in path.split(os.sep):
        size = len(os.fsencode(part))
        if size > _NAME_MAX:
            raise SettingsError(f"{name}={quoted(text)}: a name in it is {size:,} bytes long; a "
                                f"file or folder name is at most {_NAME_MAX} bytes")
    return path


def _path_setting(env: Mapping[str, str], name: str, *, foreign: bool = False) -> Optional[str]:
    text = _text(env, name, foreign=foreign)
    return None if text is None else _path(name, text)


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    text = _text(env, name)
    if text is None:
        return default
    if text.lower() in _ON | _OFF:
        return text.lower() in _ON
    raise SettingsError(f"{name}={quoted(text)} is not a switch: give 1, true, yes or on, or 0, "
                        f"false, no or off (unset: {_DEFAULTS[name]})")


def _foreign_switch(env: Mapping[str, str], name: str) -> bool:
    """Another tool's switch, read as its owner reads it (on for 1/true/yes/on, else off)."""
    return env.get(name, "").strip().lower() in _ON


def _items(env: Mapping[str, str], name: str, sep: str) -> Optional[list[str]]:
    """A list variable's non-empty items; an error when it is set but names none."""
    text = _text(env, name)
    if text is None:
        return None
    items = [item.strip() for item in text.split(sep) if item.strip()]
    if not items:
        what = f"folders separated by {sep!r}" if sep == os.pathsep else "ids separated by commas"
        raise SettingsError(f"{name}={quoted(text)} names nothing; give {what}, or unset it for "
                            f"its default ({_DEFAULTS[name]})")
    return items


def _runtime(env: Mapping[str, str]) -> str:
    text = _text(env, "S2R_RUNTIME")
    if text is None:
        return _DEFAULTS["S2R_RUNTIME"]
    if text.lower() not in _RUNTIMES:
        raise SettingsError(f"S2R_RUNTIME={quoted(text)} is not a runtime: give "
                            f"{', '.join(_RUNTIMES)} (unset: {_DEFAULTS['S2R_RUNTIME']})")
    return text.lower()


def _threads(env: Mapping[str, str]) -> Optional[int]:
    """``S2R_THREADS`` as a thread count; None for ``auto`` (:func:`embedding_threads`)."""
    text = _text(env, "S2R_THREADS")
    if text is None or text.lower() == "auto":
        return None
    if not is_integer_text(text) or int(text) < 1:
        raise SettingsError(f"S2R_THREADS={quoted(text)} is not a thread count: give auto or a "
                            f"whole number >= 1 (unset: {_DEFAULTS['S2R_THREADS']})")
    return int(text)


def _mirror(env: Mapping[str, str]) -> Optional[str]:
    text = _text(env, "S2R_WEIGHTS_MIRROR")
    if text is None:
        return None
    if not text.lower().startswith(_MIRROR_SCHEMES) or not text.rstrip("/").partition("://")[2]:
        raise SettingsError(f"S2R_WEIGHTS_MIRROR={quoted(text)} is not a base URL; give "
                            "http://HOST/PATH, https://HOST/PATH or file:///FOLDER")
    return text.rstrip("/")


#: A world's dataset spec as text: ``NAME`` or ``NAME:key=value,...`` (no path in it).
_WORLD_SPEC = re.compile(r"[A-Za-z][\w-]*(:[^/\\]*=[^/\\]*)?")


def _dataset(env: Mapping[str, str]) -> Optional[str]:
    """``S2R_DATASET`` (else its older name ``S2R_DEMO_SPEC``), with ``~`` expanded in the
    paths it names (a folder, or two files joined by ``os.pathsep``); a world's spec as is."""
    name = "S2R_DATASET" if _text(env, "S2R_DATASET") is not None else "S2R_DEMO_SPEC"
    text = _text(env, name)
    if text is None or _WORLD_SPEC.fullmatch(text):
        return text
    return os.pathsep.join(_path(name, part.strip()) for part in text.split(os.pathsep, 1))


def _hub_cache(env: Mapping[str, str]) -> Path:
    hub = _path_setting(env, "HF_HUB_CACHE", foreign=True)
    if hub:
        return Path(hub)
    xdg = _path_setting(env, "XDG_CACHE_HOME", foreign=True)
    home = _path_setting(env, "HF_HOME", foreign=True) or os.path.join(
        xdg or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    return Path(home) / "hub"


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
    dataset: Optional[str]
    default_encoders: Optional[tuple[str, ...]]
    autocompute: bool
    data_roots: tuple[str, ...]
    runtime: str = "auto"
    threads: Optional[int] = None
    evidence: Optional[Path] = None

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> "Settings":
        """The settings of the environment ``env`` (a mapping of variable -> value).

        Raises
        ------
        SettingsError
            A variable holds a value s2r cannot use (see the module docstring).
        """
        encoders = _items(env, "S2R_DEFAULT_ENCODERS", ",")
        roots = _items(env, "S2R_DATA_ROOTS", os.pathsep)
        root_list = ([_path("S2R_DATA_ROOTS", r) for r in roots] if roots
                     else [os.getcwd(), os.path.expanduser("~")])
        config = _path_setting(env, "S2R_ENCODERS")
        cache = _path_setting(env, "S2R_CACHE_DIR")
        evidence = _path_setting(env, "S2R_EVIDENCE")
        return cls(
            cache_dir=Path(cache) if cache else Path.cwd() / "cache",
            weights_dir=Path(_path_setting(env, "S2R_WEIGHTS_DIR") or "weights"),
            encoders_config=Path(config) if config else None,
            weights_mirror=_mirror(env),
            offline=_switch(env, "S2R_OFFLINE", False),
            hf_offline=_foreign_switch(env, "HF_HUB_OFFLINE"),
            hf_hub_cache=_hub_cache(env),
            hf_hub_cache_set=_text(env, "HF_HUB_CACHE", foreign=True) is not None,
            ray_address=_text(env, "S2R_RAY_ADDRESS"),
            dataset=_dataset(env),
            default_encoders=tuple(encoders) if encoders else None,
            autocompute=_switch(env, "S2R_AUTOCOMPUTE", True),
            data_roots=tuple(os.path.realpath(r) for r in root_list),
            runtime=_runtime(env),
            threads=_threads(env),
            evidence=Path(evidence) if evidence else None,
        )

    @property
    def demo_spec(self) -> Optional[str]:
        """:attr:`dataset` by its older name."""
        return self.dataset

    @property
    def no_downloads(self) -> bool:
        """Whether weight downloads are off (``S2R_OFFLINE`` or ``HF_HUB_OFFLINE``)."""
        return self.offline or self.hf_offline


def current() -> Settings:
    """The settings of this process's environment, read now.

    Raises
    ------
    SettingsError
        A variable holds a value s2r cannot use.
    """
    return Settings.from_environ(os.environ)


def need(settings: Optional[Settings], what: str) -> Settings:
    """``settings``, handed down to a library function because ``what`` needs one of them.

    Raises
    ------
    TypeError
        When the caller handed none: the library never reads the environment itself (the
        edges read it with :func:`current` and hand it down).
    """
    if settings is None:
        raise TypeError(f"{what} needs s2r's settings, which the library never reads itself: "
                        "pass settings= (s2r.settings.current() reads them from the environment)")
    if not isinstance(settings, Settings):
        raise TypeError(f"settings must be s2r.settings.Settings, got {type(settings).__name__}")
    return settings


def child_environment(**variables: str) -> dict[str, str]:
    """This process's environment with ``variables`` set: what a child process (the
    dashboard's Streamlit server) is started with. Its settings are checked first, so a bad
    value is one line here, before the child starts (:class:`SettingsError`)."""
    env = dict(os.environ)
    env.update(variables)
    Settings.from_environ(env)
    return env


def prefer_passive_openmp() -> None:
    """Let idle OpenMP threads wait passively unless the user chose otherwise
    (``OMP_WAIT_POLICY``): must run before torch, scikit-learn or openTSNE load their OpenMP
    runtime (busy-waiting threads cost 6-9x on a shared machine; see :mod:`s2r.projection`)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def prefer_headless_rendering() -> str:
    """Let MuJoCo render off-screen with EGL unless the user chose a backend (``MUJOCO_GL``:
    ``egl``, ``osmesa``, ``glfw``): must run before ``mujoco`` is imported (it reads the
    variable once). Returns the backend in effect, lower case (what a Meta-World world checks
    and names in its messages; its worker processes inherit it)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    return os.environ["MUJOCO_GL"].strip().lower()


def opengl_platform() -> str:
    """``PYOPENGL_PLATFORM`` as set ("" when unset): PyOpenGL's platform, which MuJoCo's
    off-screen backends refuse when it names another one (read before MuJoCo is imported)."""
    return os.environ.get("PYOPENGL_PLATFORM", "")


def core_count() -> int:
    """The cores this process may run on (its CPU affinity; at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                          # not Linux
        return max(1, os.cpu_count() or 1)


def share_of_cores(parties: int, cores: Optional[int] = None) -> int:
    """One of ``parties`` processes' share of ``cores`` (default :func:`core_count`), at
    least 1: how many threads each may run without oversubscribing the cores."""
    from s2r.checks import check_number

    check_number("parties", parties, low=1, integer=True, error=ValueError)
    return max(1, (core_count() if cores is None else int(cores)) // int(parties))


def embedding_threads(threads: Optional[int], cores: Optional[int] = None) -> int:
    """The threads of a CPU embedding pass (torch's and ONNX Runtime's intra-op threads).

    Parameters
    ----------
    threads : int or None
        The setting (:attr:`Settings.threads`): a count is used as it is; None (``auto``) is
        every core this process may use, ``cores`` (default :func:`core_count`), also beside
        busy processes: with passive waiting (:func:`prefer_passive_openmp`) all cores beat a
        share of them there for both runtimes (``docs/encoders.md``). Meta-World's render
        workers never run beside the pass: the main process waits on them, and they on it.
    """
    if threads is not None:
        from s2r.checks import check_number

        check_number("threads", threads, low=1, integer=True, error=ValueError)
        return int(threads)
    return core_count() if cores is None else max(1, int(cores))


def rasteriser_environment(threads: int, environ=None) -> dict:
    """The environment of a renderer worker process: this process's (or ``environ``) with
    ``LP_NUM_THREADS`` (Mesa llvmpipe's rasteriser threads) set to ``threads`` (at least 1)
    unless the user set it."""
    env = dict(os.environ if environ is None else environ)
    if not env.get("LP_NUM_THREADS"):
        env["LP_NUM_THREADS"] = str(max(1, int(threads)))
    return env
