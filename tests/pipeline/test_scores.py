"""Score records of registry encoders on a FrameSet (s2r.pipeline.scores): labelled, cached,
progress."""

from __future__ import annotations

import pytest

from s2r.errors import MetricError
from s2r.metrics.params import ScoreParams
from s2r.pipeline import score_encoder, score_encoders
from s2r.settings import current


def test_score_encoder_on_the_demo_is_cached(small_demo, monkeypatch):
    from s2r.cache import Cache
    from s2r.pipeline import scores

    params = ScoreParams(n_boot=20)
    cache = Cache(current().cache_dir)
    r = score_encoder(small_demo, "pixels", params=params, cache=cache, device="cpu")
    assert r["encoder"]["id"] == "pixels" and r["encoder"]["dim"] == 3072
    assert r["encoder"]["random_init"] is False and r["encoder"]["status"] == "ready"
    assert r["dataset"] == {"name": small_demo.name, "fingerprint": small_demo.fingerprint}
    assert r["n_frames"] == {"sim": 48, "real": 48}
    assert 0.0 <= r["sim2real_score"] <= 1.0
    assert r["domain_probe_accuracy"] > 0.8          # gap 0.5: pixels tell the domains apart
    # The demo has robot state: ceilings and paired retrieval are there.
    assert r["has_ceiling"] and r["transfer_score_ceiling"] is not None
    n_real = r["n_frames"]["real"]
    assert r["paired_retrieval_chance"] == pytest.approx(1 / n_real)
    assert r["paired_retrieval_queries"] == 48

    def boom(*args, **kwargs):
        raise AssertionError("the score should come from the cache")

    monkeypatch.setattr(scores, "score_embeddings", boom)
    again = score_encoder(small_demo, "pixels", params=params, cache=cache, device="cpu")
    assert again == r
    with pytest.raises(AssertionError, match="from the cache"):   # new params: recomputed
        score_encoder(small_demo, "pixels", params=ScoreParams(n_boot=21), cache=cache)


def test_score_encoders_reports_progress(small_demo):
    calls = []
    records = score_encoders(small_demo, ["pixels"], params=ScoreParams(n_boot=5), cache=False,
                             device="cpu", progress=lambda d, t, m: calls.append((d, t, m)))
    assert len(records) == 1
    assert calls[0][:2] == (0, 1) and calls[-1] == (1, 1, "pixels: done")
    assert any("bootstrap" in m for _, _, m in calls)
    with pytest.raises(MetricError, match="no encoders"):
        score_encoders(small_demo, [])
