"""Fixtures shared by the metrics tests."""

from __future__ import annotations

import numpy as np
import pytest

DEMO_GAPS = (0.0, 0.5, 1.0)


@pytest.fixture(scope="session")
def pixels_embeddings():
    """``[(FrameSet, Z)]`` of paired demos at gaps 0, 0.5, 1 embedded by ``pixels`` (3072-D).

    Paired: the real episodes replay the sim states, so only the gap differs between
    domains.
    """
    from s2r.datasets.demo import make_demo
    from s2r.embed import embed_frameset

    out = []
    for gap in DEMO_GAPS:
        fs = make_demo(episodes=4, steps=12, gap=gap, seed=0, paired=True, height=96, width=128)
        out.append((fs, np.asarray(embed_frameset(fs, "pixels", cache=False, device="cpu"),
                                   dtype=np.float64)))
    return out
