"""Paired retrieval: ranks by hand, ties, chance, collapse, and the pairing it relies on."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.retrieval import chance_levels, partner_ranks, query_frames
from s2r.pairing import label_partners, pair_frames


def test_ranks_by_hand():
    # 1-D embeddings; frames 0-1 are queries (sim), 2-5 the gallery (real).
    Z = np.array([[0.0], [10.0], [0.5], [3.0], [9.0], [-4.0]])
    r = partner_ranks(Z, [0, 1], [2, 3], [2, 3, 4, 5], standardise=False)
    # Query 0: partner 2 is the nearest (rank 1). Query 1: partner 3 at distance 7; frame 4
    # (distance 1) is closer, so rank 2.
    assert r.top1.tolist() == [1.0, 0.0]
    assert r.reciprocal_rank.tolist() == pytest.approx([1.0, 0.5])
    assert r.n_gallery == 4


def test_ties_are_broken_at_random_so_collapse_scores_chance():
    # Three gallery frames at the same distance as the partner (4 in all, partner included).
    Z = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    r = partner_ranks(Z, [0], [1], [1, 2, 3, 4], standardise=False)
    assert r.top1[0] == pytest.approx(1 / 4)
    assert r.reciprocal_rank[0] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    # A collapsed embedding (every frame the same point) is exactly at chance.
    flat = np.ones((30, 5))
    c = partner_ranks(flat, np.arange(10), np.arange(10, 20), np.arange(10, 30))
    top1, mrr = chance_levels(20)
    assert c.top1.mean() == pytest.approx(top1) and c.reciprocal_rank.mean() == pytest.approx(mrr)


def test_chance_levels():
    assert chance_levels(1) == (1.0, 1.0)
    assert chance_levels(4) == pytest.approx((0.25, (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4))
    with pytest.raises(MetricError, match="at least one real frame"):
        chance_levels(0)


def test_standardised_state_retrieves_its_own_partners():
    # The pairing standardises the state; retrieval standardises the embedding the same way,
    # so the state used as the embedding retrieves every partner.
    rng = np.random.default_rng(0)
    state = rng.normal(size=(80, 4)) * np.array([100.0, 1.0, 0.01, 5.0])
    domain = np.repeat(["sim", "real"], 40)
    partners = label_partners(state, domain)
    r = partner_ranks(state, np.flatnonzero(domain == "sim"), partners,
                      np.flatnonzero(domain == "real"))
    assert r.top1.mean() == 1.0


def test_label_partners_match_pair_frames(small_demo):
    assert np.array_equal(label_partners(small_demo.state, small_demo.domain),
                          pair_frames(small_demo))


def test_query_subsampling_and_bad_input():
    assert np.array_equal(query_frames(np.arange(10), 20), np.arange(10))
    q = query_frames(np.arange(10_000), 100)
    assert q.size == 100 and q[0] == 0 and q[-1] == 9_999
    Z = np.zeros((4, 2))
    with pytest.raises(MetricError, match="gallery"):
        partner_ranks(Z, [0], [1], [2, 3])
    with pytest.raises(MetricError, match="partners"):
        partner_ranks(Z, [0, 1], [2], [2, 3])


def _brute_force_ranks(Z, queries, partners, gallery):
    """Reference: standardise, then count strictly closer gallery frames per query (no ties
    in continuous data)."""
    mean, std = Z.mean(axis=0), Z.std(axis=0)
    X = (Z - mean) / std
    d = ((X[queries][:, None, :] - X[gallery][None, :, :]) ** 2).sum(axis=2)
    dp = ((X[queries] - X[partners]) ** 2).sum(axis=1)
    closer = (d < dp[:, None] - 1e-9).sum(axis=1)
    return closer


def test_one_block_and_many_blocks_give_identical_ranks():
    # Features on very different scales, so a block that reused another block's numbers
    # (the former `scale` shadowing: queries divided by the previous block's round-off
    # tolerances) would rank differently; 37 queries in blocks of 5 leave a short last block.
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(137, 6)) * np.array([1e3, 1.0, 1e-2, 7.0, 0.5, 30.0]) + 4.0
    queries, gallery = np.arange(37), np.arange(37, 137)
    partners = rng.choice(gallery, size=37)
    one = partner_ranks(Z, queries, partners, gallery)
    many = partner_ranks(Z, queries, partners, gallery, block_elements=5 * gallery.size)
    assert np.array_equal(one.top1, many.top1)
    assert np.array_equal(one.reciprocal_rank, many.reciprocal_rank)
    closer = _brute_force_ranks(Z, queries, partners, gallery)
    assert np.allclose(one.reciprocal_rank, 1.0 / (closer + 1))


@pytest.mark.slow
def test_score_embeddings_ranks_20000_frames_of_2048_dims_with_state():
    # Several default-size retrieval blocks (4e6 / 10,000 real frames = 400 queries each,
    # the 4,096 queries end in a short block): the size at which the shadowed `scale` ended
    # in a broadcasting traceback.
    from s2r.metrics.params import ScoreParams
    from s2r.metrics.scoring import score_embeddings

    rng = np.random.default_rng(0)
    n, dim, episodes = 20_000, 2048, 20
    state = rng.normal(size=(n, 3))
    Z = (state @ rng.normal(size=(3, dim)) + rng.normal(size=(n, dim))).astype(np.float32)
    domain = np.repeat(["sim", "real"], n // 2)
    episode = np.repeat(np.arange(episodes), n // episodes)
    actions = state[:, :2] + 0.1 * rng.normal(size=(n, 2))
    r = score_embeddings(Z, domain, actions, episode, state=state,
                         params=ScoreParams(pca_dim=8, n_boot=20), memory_mb=256)
    assert r["paired_retrieval_queries"] == 4096
    chance = r["paired_retrieval_mrr_chance"]
    assert chance < r["paired_retrieval_mrr"] <= 1.0
