"""A read-only cache (the Validation page reading what ``validate`` wrote) never trains a
control: an untrained control is a cache miss, raised before any work."""

from __future__ import annotations

import pytest

from s2r.cache import Cache, NotCached, ReadOnlyCache
from s2r.closedloop.validation import validate
from s2r.settings import current


@pytest.mark.parametrize("control", ["simcnn-dr0", "simcnn-dr1"])   # the demo's own
def test_a_read_only_validate_names_the_untrained_control_and_trains_nothing(
        tmp_path, monkeypatch, control):
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(tmp_path / "weights"))
    from s2r.encoders.backends import simcnn

    def refuse(*args, **kwargs):
        raise AssertionError("a read-only validate trained a control")

    monkeypatch.setattr(simcnn, "train_control", refuse)
    cache = ReadOnlyCache(Cache(tmp_path / "cache"))
    with pytest.raises(NotCached, match=f"{control} not trained yet"):
        validate("demo:episodes=2,steps=4,height=64,width=80", ["state", "pixels", control], [0.0],
                 cache=cache, settings=current())
    assert not (tmp_path / "weights").exists() or not any((tmp_path / "weights").iterdir())
    # a writable cache trains it (here: the refusing stub proves the call is reached)
    with pytest.raises(AssertionError, match="trained a control"):
        validate("demo:episodes=2,steps=4,height=64,width=80", ["state", "pixels", control], [0.0],
                 cache=Cache(tmp_path / "cache"), settings=current())
