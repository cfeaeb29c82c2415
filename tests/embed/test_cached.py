"""Embeddings of a FrameSet read from the cache when present (s2r.embed.cached): hits without
recomputing, encoders by id, and the ``embed`` and ``cache`` commands."""

from __future__ import annotations

import json

import numpy as np
import pytest

from s2r.cache import Cache
from s2r.embed import PREPROCESS_VERSION, compute_embeddings, embed_frameset, embeddings_key
from s2r.errors import EncoderError
from tests.helpers.stand_ins import StandInEncoder
from s2r.settings import current


def test_embed_frameset_caches_and_hits_without_recompute(frameset, tmp_path):
    cache = Cache(tmp_path / "cache")
    enc = StandInEncoder()
    first = embed_frameset(frameset, enc, cache=cache, batch_size=32)
    n_calls = len(enc.calls)
    progress = []
    second = embed_frameset(frameset, enc, cache=cache,
                            progress=lambda d, t, m: progress.append((d, t)))
    assert len(enc.calls) == n_calls  # the model did not run again
    assert isinstance(second, np.memmap) and not second.flags.writeable
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(second, compute_embeddings(frameset, enc))
    assert progress[-1] == (150, 150)
    key = embeddings_key(frameset, enc)
    assert key == {"kind": "embeddings", "frameset": frameset.fingerprint, "encoder": "stand-in",
                   "weights": "stand-in-weights-v1", "preprocess": PREPROCESS_VERSION}
    assert [e.key for e in cache.ls()] == [key]
    # cache=False computes and stores nothing
    plain = embed_frameset(frameset, enc, cache=False)
    assert len(enc.calls) > n_calls and len(cache.ls()) == 1
    np.testing.assert_array_equal(plain, first)


def test_default_cache_is_the_cache_dir_of_the_settings_handed_down(frameset, tmp_path,
                                                                    monkeypatch):
    from s2r.settings import Settings

    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "envcache"))  # never read here
    settings = Settings.from_environ({"S2R_CACHE_DIR": str(tmp_path / "given")})
    embed_frameset(frameset, StandInEncoder(), settings=settings)
    assert [e.kind for e in Cache(tmp_path / "given").ls()] == ["embeddings"]
    embed_frameset(frameset, StandInEncoder())  # no settings: no disk cache
    assert not (tmp_path / "envcache").exists()


def test_cli_cache_ls_and_clear(tmp_path, capsys, frameset):
    from s2r.cli import main

    cache = Cache(current().cache_dir)  # $S2R_CACHE_DIR from conftest
    embed_frameset(frameset, StandInEncoder(), cache=cache)
    cache.get_or_compute_json({"kind": "scores", "encoder": "x"}, lambda: {"dis": 1})
    capsys.readouterr()
    assert main(["cache", "ls", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["root"] == str(cache.root)
    kinds = {e["kind"]: e for e in listing["entries"]}
    assert set(kinds) == {"embeddings", "scores"}
    assert kinds["embeddings"]["shape"] == [150, 6]
    assert kinds["embeddings"]["key"]["frameset"] == frameset.fingerprint
    assert main(["cache", "ls"]) == 0
    table = capsys.readouterr().out
    assert frameset.fingerprint in table and "stand-in" in table and "150x6" in table
    assert "2 entries" in table
    assert main(["cache", "clear"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert cache.ls() == []
    assert main(["cache", "ls", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == []


def test_pixels_through_embed_frameset_with_id(small_demo, tmp_path, monkeypatch):
    import s2r.encoders.build as build

    builds = []
    real_build = build.build_encoder
    monkeypatch.setattr(build, "build_encoder",
                        lambda *a, **k: builds.append(a) or real_build(*a, **k))
    cache = Cache(tmp_path / "cache")
    z = embed_frameset(small_demo, "pixels", cache=cache, device="cpu", batch_size=32)
    assert z.shape == (len(small_demo), 3072) and z.dtype == np.float32
    enc = real_build("pixels", device="cpu")
    np.testing.assert_allclose(z[:10], enc.embed(small_demo.read_images(np.arange(10))),
                               rtol=1e-6, atol=1e-6)
    assert embeddings_key(small_demo, "pixels")["weights"] == enc.weights_fingerprint
    # with a cheap weights fingerprint from s2r.encoders, a hit never builds the model
    import s2r.encoders

    monkeypatch.setattr(s2r.encoders, "weights_fingerprint",
                        lambda spec, **_: enc.weights_fingerprint, raising=False)
    builds.clear()
    again = embed_frameset(small_demo, "pixels", cache=cache)
    assert builds == []
    np.testing.assert_array_equal(again, z)


def test_unknown_encoder_id_is_an_encoder_error(small_demo):
    with pytest.raises(EncoderError, match="no-such-encoder"):
        embed_frameset(small_demo, "no-such-encoder", cache=False)


def test_cli_embed_writes_npz_and_reuses_cache(tmp_path, capsys):
    from s2r.cli import main

    out = tmp_path / "sub" / "z.npz"
    argv = ["embed", "demo:episodes=2,steps=4,height=64,width=64", "--encoder", "pixels",
            "--out", str(out), "--batch-size", "5", "--device", "cpu"]
    assert main(argv) == 0
    assert "wrote" in capsys.readouterr().out
    with np.load(out) as f:
        assert set(f.files) == {"embeddings", "domain", "episode", "step", "actions", "encoder",
                                "precision"}
        z, domain, episode, step, actions = (f[k] for k in ("embeddings", "domain", "episode",
                                                            "step", "actions"))
        assert str(f["encoder"]) == "pixels" and str(f["precision"]) == "auto"
    assert z.shape == (16, 3072) and z.dtype == np.float32
    assert domain.tolist() == ["sim"] * 8 + ["real"] * 8
    assert episode.shape == step.shape == (16,) and actions.shape[0] == 16
    assert len(set(episode[:8]) & set(episode[8:])) == 0
    assert [e.kind for e in Cache(current().cache_dir).ls()] == ["embeddings"]
    # second run: same numbers, still one cache entry
    out2 = tmp_path / "z2.npz"
    assert main(argv[:-6] + ["--out", str(out2)]) == 0
    with np.load(out2) as f:
        np.testing.assert_array_equal(f["embeddings"], z)
    assert len(Cache(current().cache_dir).ls()) == 1


@pytest.mark.parametrize("extra, message", [
    (["--out", "z.txt"], ".npz"),
    (["--out", "z.npz", "--encoder", "nope"], "nope"),
    (["--out", "z.npz", "--batch-size", "0"], "batch-size"),
])
def test_cli_embed_errors(tmp_path, capsys, monkeypatch, extra, message):
    from s2r.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["embed", "demo:episodes=1,steps=2,height=64,width=64", "--encoder", "pixels", *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
