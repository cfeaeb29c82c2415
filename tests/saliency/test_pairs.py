"""One definition of the frame-pair saliency targets (``s2r.saliency.saliency_targets``): the
CLI path (``pair_saliency``, what ``python -m s2r saliency`` runs) and the app path
(``ui.loaders.saliency``) give the same maps for every target on the same frames."""

from __future__ import annotations

import numpy as np
import pytest
import streamlit as st

from s2r.errors import S2RError
from s2r.options import TARGET_KINDS
from s2r.saliency import (ActionTarget, DomainTarget, EmbeddingTarget, PairSimilarityTarget,
                          saliency_targets)

ENCODER = "resnet18@random"
METHOD = "gradcam"
ACTION_DIM = 1


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One disk cache for this module's tests: the demo is embedded once, not per test."""
    return tmp_path_factory.mktemp("saliency-targets-cache")


@pytest.fixture
def loaders(shared_cache, monkeypatch):
    """``ui.loaders`` with empty Streamlit caches (they work outside a running app), on the
    module's disk cache (the CLI path reads the same ``$S2R_CACHE_DIR``)."""
    from types import SimpleNamespace

    from ui.loaders import data, saliency

    monkeypatch.setenv("S2R_CACHE_DIR", str(shared_cache))
    st.cache_data.clear()
    st.cache_resource.clear()
    yield SimpleNamespace(paired_real=data.paired_real, saliency=saliency.pair_maps,
                          make_targets=saliency.make_targets, TARGETS=saliency.TARGETS)
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture(scope="module")
def cli_encoder():
    """The CLI's own encoder (built apart from the app's cached one), with the settings the
    CLI hands down (its runtime: the embeddings the saliency targets are fitted on)."""
    from s2r.encoders import build_encoder, pick_device
    from s2r.settings import current

    return build_encoder(ENCODER, device=str(pick_device()), settings=current())


def _sim_rows(frameset) -> np.ndarray:
    return frameset.indices("sim")[[0, 7]]


def test_cli_and_app_give_identical_maps_for_every_target(paired_demo, cli_encoder, loaders):
    from s2r.pipeline.saliency import pair_saliency

    sim_rows = _sim_rows(paired_demo)
    real_rows = loaders.paired_real(paired_demo, sim_rows)
    for kind in TARGET_KINDS:
        cli = pair_saliency(paired_demo, cli_encoder, sim_rows, target=kind, method=METHOD,
                            action_dim=ACTION_DIM)
        np.testing.assert_array_equal(cli.real_indices, real_rows)
        for k, (s, r) in enumerate(zip(sim_rows, real_rows)):
            maps, constant = loaders.saliency(paired_demo, ENCODER, s, r, method=METHOD,
                                              target=kind, action_dim=ACTION_DIM)
            assert maps.shape == (2, *paired_demo.image_shape[:2])
            np.testing.assert_allclose(maps[0], cli.sim.maps[k], rtol=0, atol=1e-6,
                                       err_msg=f"{kind}: sim frame {s}")
            np.testing.assert_allclose(maps[1], cli.real.maps[k], rtol=0, atol=1e-6,
                                       err_msg=f"{kind}: real frame {r}")
            assert constant.tolist() == [cli.sim.constant[k], cli.real.constant[k]], kind
            assert not constant.all(), f"{kind}: both maps flat, nothing was compared"


def test_domain_target_explains_each_frame_toward_its_own_domain(paired_demo, cli_encoder,
                                                                  loaders):
    from s2r.pipeline.saliency import pair_saliency, pair_targets
    from s2r.saliency import compute_saliency

    sim_rows = _sim_rows(paired_demo)
    real_rows = loaders.paired_real(paired_demo, sim_rows)
    cli = pair_targets(paired_demo, cli_encoder, "domain", sim_indices=sim_rows,
                       real_indices=real_rows)
    app = loaders.make_targets(paired_demo, ENCODER, "domain", sim_indices=sim_rows,
                               real_indices=real_rows)
    for t_sim, t_real in (cli, app):
        assert isinstance(t_sim, DomainTarget) and isinstance(t_real, DomainTarget)
        assert (t_sim.toward, t_real.toward) == ("sim", "real")
        np.testing.assert_array_equal(t_sim.w, t_real.w)  # one probe, two directions
    np.testing.assert_array_equal(app[0].w, cli[0].w)
    assert app[0].b == cli[0].b

    result = pair_saliency(paired_demo, cli_encoder, sim_rows[:1], target="domain",
                           method=METHOD)
    assert (result.sim.target, result.real.target) == ("domain[sim]", "domain[real]")
    # Explaining the sim frame toward "real" instead gives another map: the direction matters.
    s, r = int(sim_rows[0]), int(real_rows[0])
    app_maps, _ = loaders.saliency(paired_demo, ENCODER, s, r, method=METHOD, target="domain")
    toward_real = compute_saliency(cli_encoder, paired_demo.read_images([s]), method=METHOD,
                                   target=DomainTarget(cli[0].w, cli[0].b, toward="real"))
    assert not np.allclose(app_maps[0], toward_real.maps[0])
    np.testing.assert_allclose(app_maps[0], result.sim.maps[0], rtol=0, atol=1e-6)


def test_app_target_labels_follow_the_library_kinds(loaders):
    assert tuple(loaders.TARGETS) == TARGET_KINDS
    assert "own domain" in loaders.TARGETS["domain"]


# --------------------------------------------------------------------------- pure function
@pytest.fixture
def labels():
    """Six frames: three sim (episode 0), three real (episode 1), 2-D actions, 4-D Z."""
    rng = np.random.default_rng(0)
    domain = np.array(["sim"] * 3 + ["real"] * 3)
    return dict(Z=rng.normal(size=(6, 4)).astype(np.float32), domain=domain,
                actions=rng.normal(size=(6, 2)), episode=np.repeat([0, 1], 3))


def _targets(kind, labels, **kw):
    return saliency_targets(kind, labels["Z"], domain=labels["domain"],
                            actions=labels["actions"], episode=labels["episode"], **kw)


def test_saliency_targets_kinds(labels):
    t_sim, t_real = _targets("embedding", labels)
    assert isinstance(t_sim, EmbeddingTarget) and t_sim.reduce == "norm"

    t_sim, t_real = _targets("action", labels, action_dim=1)
    assert t_sim is t_real and isinstance(t_sim, ActionTarget) and t_sim.dim == 1

    t_sim, t_real = _targets("pair", labels, sim_indices=[0, 2], real_indices=[5, 3])
    assert isinstance(t_sim, PairSimilarityTarget)
    np.testing.assert_array_equal(t_sim.other, labels["Z"][[5, 3]])  # rows of Z, not re-embedded
    np.testing.assert_array_equal(t_real.other, labels["Z"][[0, 2]])


def test_saliency_targets_computes_embeddings_only_when_needed(labels):
    def must_not_run():
        raise AssertionError("embeddings computed for the embedding target")

    saliency_targets("embedding", must_not_run, domain=labels["domain"],
                     actions=labels["actions"], episode=labels["episode"])
    t_sim, _ = saliency_targets("pair", lambda: labels["Z"], domain=labels["domain"],
                                actions=labels["actions"], episode=labels["episode"],
                                sim_indices=[1], real_indices=[4])
    np.testing.assert_array_equal(t_sim.other, labels["Z"][[4]])


@pytest.mark.parametrize("kind, kw, message", [
    ("saliency", {}, "unknown saliency target 'saliency'"),
    ("pair", {}, "target 'pair' needs the frame pairs"),
    ("pair", {"sim_indices": [0]}, "give both sim_indices and real_indices"),
    ("pair", {"sim_indices": [0, 1], "real_indices": [3]}, "pair up row by row"),
    ("domain", {"sim_indices": [3], "real_indices": [4]}, r"must be sim frames, but rows \[3\]"),
    ("domain", {"sim_indices": [0], "real_indices": [9]}, "outside the FrameSet"),
    ("action", {"action_dim": 2}, "action dimension 2 is out of range"),
])
def test_saliency_targets_errors_name_the_problem(labels, kind, kw, message):
    with pytest.raises(S2RError, match=message):
        _targets(kind, labels, **kw)


def test_saliency_targets_checks_embeddings_and_labels(labels):
    with pytest.raises(S2RError, match=r"embeddings must be a float array of shape \(6, D\)"):
        saliency_targets("domain", labels["Z"][:5], domain=labels["domain"],
                         actions=labels["actions"], episode=labels["episode"])
    with pytest.raises(S2RError, match="domain values must be 'sim' or 'real'"):
        saliency_targets("domain", labels["Z"], domain=["sim", "Real"] * 3,
                         actions=labels["actions"], episode=labels["episode"])
    with pytest.raises(S2RError, match=r"actions must be a numeric array of shape \(6, A\)"):
        saliency_targets("action", labels["Z"], domain=labels["domain"],
                         actions=labels["actions"][:, 0], episode=labels["episode"])
