"""The cache every AppTest file reads: the home page's first visit scored once per run."""

from __future__ import annotations

import pytest

from tests.ui.apptest import no_exception, open_app, use_env


@pytest.fixture(scope="session")
def computed(tmp_path_factory):
    """A cache folder where the home page has scored ENCODERS on TINY (first visit), and
    the AppTest of that visit."""
    cache_dir = tmp_path_factory.mktemp("app-cache")
    with pytest.MonkeyPatch.context() as mp:
        use_env(mp, cache_dir)
        at = open_app()
        at.run()
        no_exception(at)
        return cache_dir, at


@pytest.fixture
def own_cache(computed, tmp_path, monkeypatch):
    """A copy of the shared cache (the home page's scores) for a test that writes to it
    (your evidence, more scores), the app's environment set to it."""
    import shutil

    cache_dir = tmp_path / "cache"
    shutil.copytree(computed[0], cache_dir)
    use_env(monkeypatch, cache_dir)
    return cache_dir
