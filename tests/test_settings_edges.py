"""Settings at the edges (issue 34 item 4): library functions take the settings they need as an
argument and never read the environment; one function called twice in one process with two
different settings behaves two ways. (That only the edges call ``current()`` is rule 7 of
``tests/tools/import_graph.py``.)"""

from __future__ import annotations

import pytest

from s2r.settings import Settings


def _settings(root, **extra) -> Settings:
    return Settings.from_environ({"S2R_WEIGHTS_DIR": str(root / "weights"),
                                  "S2R_CACHE_DIR": str(root / "cache"), **extra})


@pytest.fixture
def two(tmp_path, monkeypatch):
    """Two settings with their own weights and cache folders; the environment names a third
    place, which the library must never look at."""
    a, b = _settings(tmp_path / "a"), _settings(tmp_path / "b")
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(tmp_path / "environment" / "weights"))
    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "environment" / "cache"))
    yield a, b
    assert not (tmp_path / "environment").exists()


def test_one_function_two_settings_two_behaviours(two, tmp_path):
    from s2r.encoders import get_spec, status, weights_fingerprint

    a, b = two
    spec = get_spec("r3m-resnet18")
    a.weights_dir.mkdir(parents=True)
    (a.weights_dir / spec.weights_file).write_bytes(b"weights of A")
    first, second = status(spec, settings=a), status(spec, settings=b)
    assert first.state == "ready" and first.file == str(a.weights_dir / spec.weights_file)
    assert second.state == "weights-missing" and str(b.weights_dir) in second.file
    assert weights_fingerprint(spec, settings=a).startswith("sha256:")
    assert weights_fingerprint(spec, settings=b) == "missing"
    assert status(spec, settings=a).state == "ready"  # and back: nothing was remembered


def test_the_cache_of_the_settings_handed_down_and_none_without(two):
    from s2r.embed import embed_frameset
    from tests.helpers.datafiles import synthetic_frameset

    a, b = two
    fs = synthetic_frameset(masks=False)
    Z = embed_frameset(fs, "pixels", settings=a)
    assert embed_frameset(fs, "pixels", settings=b).tolist() == Z.tolist()
    for settings in (a, b):
        assert len(list((settings.cache_dir / "arrays").glob("*.npy"))) == 1
    assert embed_frameset(fs, "pixels").shape == Z.shape  # no settings: computed, kept nowhere


def test_the_user_encoder_config_is_the_one_of_the_settings(two, tmp_path):
    from s2r.encoders import get_spec, list_encoders
    from s2r.errors import EncoderError

    a, b = two
    config = tmp_path / "mine.toml"
    config.write_text('[[encoders]]\nid = "mine"\ntimm = "resnet18"\n')
    mine = _settings(tmp_path / "a", S2R_ENCODERS=str(config))
    assert get_spec("mine", settings=mine).identifier == "resnet18"
    assert "mine" in [s.id for s in list_encoders(settings=mine)]
    with pytest.raises(EncoderError, match="unknown encoder 'mine'"):
        get_spec("mine", settings=b)
    assert "mine" not in [s.id for s in list_encoders(settings=a)]


def test_a_setting_that_was_not_handed_down_is_a_type_error_where_it_is_needed(two):
    """Never a silent default: the weights folder of an entry with a weights file is needed;
    an entry without one (pixels, a random control) needs no settings."""
    from s2r.encoders import build_encoder, status

    with pytest.raises(TypeError, match="the weights folder needs s2r's settings.*pass "
                                        r"settings= \(s2r.settings.current\(\)"):
        status("r3m-resnet18")
    assert status("pixels").state == "ready" and status("resnet18@random").state == "random"
    assert build_encoder("pixels", device="cpu").spec.id == "pixels"


def test_the_pipeline_entry_points_read_the_settings_themselves(tmp_path, monkeypatch):
    """An edge (a pipeline entry point) called without settings reads the environment once
    and hands it down: its default cache is $S2R_CACHE_DIR."""
    from s2r.metrics.params import ScoreParams
    from s2r.pipeline import score_encoder
    from tests.helpers.datafiles import synthetic_frameset

    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "edge-cache"))
    fs = synthetic_frameset(masks=False, sim_eps=(3, 4, 3, 3), real_eps=(3, 4, 3, 3))
    score_encoder(fs, "pixels", params=ScoreParams(n_boot=0, pca_dim=4))
    assert list((tmp_path / "edge-cache" / "arrays").glob("*.npy"))
