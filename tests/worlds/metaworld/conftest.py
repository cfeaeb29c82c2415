"""Meta-World fixtures: tiny datasets (frames render in worker processes, ~10 ms each)."""

from __future__ import annotations

import pytest

#: A tiny spec: 2 episodes of 8 world steps at 64 x 80 (seed 3: no check uses it).
TINY = "metaworld:task=button-press-topdown-v3,episodes=2,steps=8,seed=3,height=64,width=80"


@pytest.fixture(scope="session")
def tiny_sets():
    """The tiny spec at gaps 0, 0.5 and 1: ``{gap: FrameSet}``."""
    from s2r.datasets import load_dataset

    return {gap: load_dataset(f"{TINY},gap={gap}") for gap in (0.0, 0.5, 1.0)}
