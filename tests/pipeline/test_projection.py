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
