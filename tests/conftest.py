"""Shared fixtures. Keep heavy fixtures session-scoped: the suite runs on 2 CPU cores."""

from __future__ import annotations

import os
import shutil

import pytest

# Tests never reach a model hub (there is no network in CI).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Every test gets its own cache and weights folders (never the user's ./cache).

    They are removed after the test: a full run writes several GB of embeddings, graphs and
    checkpoints, and a disk that fills stops the run (pyproject's `tmp_path_retention_policy`
    does the same for `tmp_path`).
    """
    root = tmp_path_factory.mktemp("s2r")
    monkeypatch.setenv("S2R_CACHE_DIR", str(root / "cache"))
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(root / "weights"))
    yield
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def swap_evidence(monkeypatch, tmp_path):
    """A function that makes hand-made evidence where DIS has the strongest record (singled
    out; :func:`tests.evidence.handmade.dis_strongest`) the evidence in effect
    (``S2R_EVIDENCE``) and returns its path."""
    from tests.evidence.handmade import dis_strongest, write_evidence

    def swap():
        path = write_evidence(tmp_path / "dis-strongest.json", dis_strongest())
        monkeypatch.setenv("S2R_EVIDENCE", str(path))
        return path

    return swap



@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("the network was touched")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture(scope="session")
def small_demo():
    """A small demo FrameSet: 4 sim + 4 real episodes of 12 steps, gap 0.5, 96x128 frames."""
    from s2r.worlds.demo.dataset import make_demo

    return make_demo(episodes=4, steps=12, gap=0.5, seed=0, height=96, width=128)


@pytest.fixture(scope="session")
def paired_demo():
    """A small paired demo: the same states rendered in both domains."""
    from s2r.worlds.demo.dataset import make_demo

    return make_demo(episodes=3, steps=10, gap=0.5, seed=1, paired=True, height=96, width=128)


@pytest.fixture(scope="module")
def cluster():
    """A local Ray instance for the whole module (2 CPUs, no dashboard), shut down after it."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def one_thread():
    """torch on one thread, like a CPU actor or task with num_cpus=1 (restored after)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
