"""t-SNE maps of a FrameSet (s2r.pipeline.projection): cached, and ``python -m s2r project``."""

from __future__ import annotations

import numpy as np


def test_project_frameset_cache_hit_returns_same_coordinates_without_recomputing(
        small_demo, monkeypatch, tmp_path):
    import s2r.pipeline.projection as projection
    from s2r.cache import Cache

    calls = []
    real_project = projection.project

    def counting_project(*args, **kwargs):
        calls.append(kwargs.get("mode"))
        return real_project(*args, **kwargs)

    monkeypatch.setattr(projection, "project", counting_project)
    cache = Cache(tmp_path / "cache")
    first = projection.project_frameset(small_demo, "pixels", cache=cache, perplexity=10)
    second = projection.project_frameset(small_demo, "pixels", cache=cache, perplexity=10)
    assert calls == ["joint"]
    np.testing.assert_array_equal(first.coords, second.coords)
    np.testing.assert_array_equal(first.indices, second.indices)
    assert first.mixing == second.mixing and first.params == second.params
    assert np.array_equal(second.domain, small_demo.domain[second.indices])
    # Another parameter is another entry.
    other = projection.project_frameset(small_demo, "pixels", cache=cache, perplexity=10,
                                        mode="place-real")
    assert calls == ["joint", "place-real"] and len(other) == len(small_demo)


def test_project_cli_writes_csv_and_prints_the_mixing_number(tmp_path, capsys):
    import pandas as pd

    from s2r.cli import main

    out = tmp_path / "map.csv"
    code = main(["project", "demo:episodes=2,steps=8,height=64,width=80", "--encoder", "pixels",
                 "--mode", "place-real", "--max-per-domain", "10", "--out", str(out)])
    assert code == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ["index", "domain", "x", "y"]
    assert (table["domain"] == "sim").sum() == 10 and (table["domain"] == "real").sum() == 10
    assert np.isfinite(table[["x", "y"]].to_numpy()).all()
    printed = capsys.readouterr().out
    # The map is fitted on 10 sim frames (perplexity lowered, said so); the mixing number
    # uses all 32 frames (16 per domain: k = 15 is kept).
    assert "mixing number (pixels, k=15, all 32 frames):" in printed
    assert "neighbours, not 15" not in printed
    assert "warning: perplexity lowered from 30 to 3" in printed
    assert "t-SNE KL divergence" in printed

    code = main(["project", "demo:episodes=2,steps=8,height=64,width=80", "--encoder", "pixels",
                 "--out", str(tmp_path / "map.txt")])
    assert code == 2 and ".csv" in capsys.readouterr().err


def test_a_stopped_map_is_returned_but_not_cached(small_demo, tmp_path):
    """A snapshot callback that returns True gets the map so far (not converged); the cache
    keeps nothing, so the next ask computes the finished map, and a cache hit calls no
    snapshot callback."""
    import s2r.pipeline.projection as projection
    from s2r.cache import Cache
    from s2r.projection import map_rows

    cache = Cache(tmp_path / "cache")
    ask = dict(cache=cache, perplexity=10, max_per_domain=12)
    seen = []

    def stop_at_60(iteration, Y, kl):
        seen.append(iteration)
        return iteration >= 60

    stopped = projection.project_frameset(small_demo, "pixels", on_snapshot=stop_at_60, **ask)
    assert not stopped.converged and stopped.params["stopped_at"] == 60 == seen[-1]
    rows = map_rows(small_demo.domain, max_per_domain=12, episode=small_demo.episode)
    assert np.array_equal(stopped.indices, rows)
    key = projection.projection_key(small_demo, "pixels", {
        "mode": "joint", "max_per_domain": 12, "perplexity": 10.0, "pca_dim": 50, "seed": 0,
        "k": 15, "n_iter": 750, "early_exaggeration_iter": 250, "kl_tol": 0.005})
    assert not cache.contains(key)
    final = projection.project_frameset(small_demo, "pixels", **ask)
    assert final.converged and cache.contains(key)
    seen.clear()
    again = projection.project_frameset(small_demo, "pixels", on_snapshot=stop_at_60, **ask)
    assert seen == [] and again.converged
    np.testing.assert_array_equal(again.coords, final.coords)
