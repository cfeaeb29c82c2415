"""Embedding several FrameSets that share frames (s2r.embed.distinct)."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.cache import Cache
from s2r.worlds.demo.dataset import make_demo
from s2r.embed import distinct, embed_frameset


@pytest.fixture(scope="module")
def gaps():
    # one demo at gaps 0 and 1: the same sim frames, and real = sim at gap 0
    return [make_demo(episodes=2, steps=3, gap=g, seed=2, paired=True, height=64, width=64)
            for g in (0.0, 1.0)]


@pytest.mark.parametrize("encoder_id", ["pixels", "resnet18@random"])
def test_each_distinct_frame_is_embedded_once_and_every_array_is_cached(
        gaps, encoder_id, tmp_path, monkeypatch):
    embedded = []
    real = distinct.compute_embeddings

    def counting(frameset, encoder, *, indices=None, **kw):
        embedded.append(len(indices))
        return real(frameset, encoder, indices=indices, **kw)

    monkeypatch.setattr(distinct, "compute_embeddings", counting)
    cache = Cache(tmp_path / "c")
    got = distinct.embed_distinct(gaps, encoder_id, cache=cache)
    assert embedded == [6, 6]                 # 12 + 12 frames, 6 sim + 6 real at gap 1 distinct
    for fs, Z in zip(gaps, got):
        want = embed_frameset(fs, encoder_id, cache=False)
        np.testing.assert_allclose(Z, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
        np.testing.assert_array_equal(embed_frameset(fs, encoder_id, cache=cache), Z)  # a hit
    sim = gaps[0].domain == "sim"
    np.testing.assert_array_equal(got[0][sim], got[0][~sim])
    np.testing.assert_array_equal(got[0][sim], got[1][sim])
    embedded.clear()
    distinct.embed_distinct(gaps, encoder_id, cache=cache)
    assert embedded == []                     # everything cached: nothing embedded, no model


def test_frame_digests_tell_frames_apart(gaps):
    a, b = (distinct.frame_digests(fs) for fs in gaps)
    sim = gaps[0].domain == "sim"
    assert [d for d, s in zip(a, sim) if s] == [d for d, s in zip(a, sim) if not s]
    assert len(set(b)) == len(b)              # at gap 1 no real frame equals a sim frame
