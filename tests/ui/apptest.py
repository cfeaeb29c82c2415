"""What the AppTest files share: the tiny demo and encoders they score, and how they open the
dashboard (:func:`open_app`) with its environment (:func:`use_env`)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.helpers import APP
from ui import pages

PAGES = (pages.SCORES.path, pages.PROJECTION.path, pages.SALIENCY.path,
         pages.COMPARE.path, pages.LAYERS.path)
#: 4 + 4 episodes of 8 frames, 96 x 128: the fewest episodes the held-out and transfer
#: scores accept.
TINY = "demo:episodes=4,steps=8,height=96,width=128"
ENCODERS = ("resnet18@random", "pixels")
TIMEOUT = 300


def use_env(monkeypatch, cache_dir) -> None:
    """The app's environment: its own cache folder, the tiny demo, :data:`ENCODERS`, and
    links may name datasets in the test's folder (the cache folder's parent)."""
    monkeypatch.setenv("S2R_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("S2R_DATA_ROOTS", str(Path(cache_dir).parent))
    monkeypatch.setenv("S2R_DEMO_SPEC", TINY)
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", ",".join(ENCODERS))


def open_app(page: str | None = None, query: dict | None = None) -> AppTest:
    """An AppTest of the dashboard on ``page`` (the home page by default) whose URL carries
    ``query`` (a new session opened from a link or a reload)."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update(query or {})
    if page is not None:
        at.switch_page(page)
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


def robomimic_pair(folder) -> tuple[str, str]:
    """Two robomimic-style HDF5 files (sim, real) in ``folder``: 4 episodes of 8 frames of
    32 x 32 each, no robot state (the ``state`` reference is not offered for them).
    Returns their paths."""
    from tests.helpers.datafiles import robomimic_demos, write_hdf5

    paths = []
    for seed, domain in enumerate(("sim", "real")):
        path = f"{folder}/{domain}.hdf5"
        write_hdf5(path, robomimic_demos([8, 8, 8, 8], h=32, w=32, seed=seed, state=False))
        paths.append(path)
    return paths[0], paths[1]


def validation_tables(at) -> list:
    """The Validation page's result tables in order, less the evidence section's (drawn above
    them: the table with a ``combined`` column, the kinds-of-shift table and the differences
    table, indexed by ``"<score> minus"``)."""
    from s2r.closedloop.study import STUDY_SHIFTS

    return [d.value for d in at.dataframe
            if not any(str(c).startswith("combined") for c in d.value.columns)
            and not (len(d.value.columns) and set(d.value.columns) <= set(STUDY_SHIFTS))
            and not str(d.value.index.name or "").endswith(" minus")]
