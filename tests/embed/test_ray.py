"""The Ray backend (issue 15) on a local Ray cluster started here (2 CPUs, no dashboard).

Bit-identity: fp32 sums on a CPU depend on torch's thread count, so the local reference runs
with one thread, as each CPU actor does (``num_cpus=1``); shard edges are multiples of the
batch size, so every batch is the local run's batch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from s2r.cache import Cache
from s2r.cli import main
from s2r.datasets import load_dataset
from s2r.worlds.demo.dataset import make_demo
from s2r.embed import embed_frameset, embeddings_key, ray_run
from s2r.embed.ray_backend import (MAX_RESTARTS, MAX_TASK_RETRIES, RAY_ADDRESS_ENV,
                                   actor_options, check_address)
from s2r.pipeline.ray_grid import score_encoders_ray
from s2r.embed.ray_run import dataset_reference, embed_encoders_ray, embed_frameset_ray
from s2r.embed.ray_shards import plan_shards, storage_edges
from s2r.embed.ray_worker import EncoderWorker
from s2r.errors import DataError, S2RError
from s2r.frameset import FrameSet
from s2r.settings import current
from s2r.images import ConcatImages
from s2r.metrics.params import ScoreParams
from s2r.pipeline import score_encoders
from tests.helpers import REPO
from tests.helpers.datafiles import frames, write_zarr

IDS = ("pixels", "efficientnet-lite0", "resnet18@random")
TINY_DEMO = "demo:episodes=2,steps=4,height=64,width=80"


@pytest.fixture(scope="module")
def demo():
    return make_demo(episodes=2, steps=4, height=96, width=128)


def _local(fs, encoder_id: str, batch_size: int) -> np.ndarray:
    return embed_frameset(fs, encoder_id, cache=False, batch_size=batch_size)


def _no_ray(monkeypatch):
    """Make any attempt to reach Ray fail the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("Ray was contacted although everything is cached")

    monkeypatch.setattr(ray_run, "ray_session", refuse)


# ---------------------------------------------------------------- on the cluster
def test_ray_equals_local_bit_for_bit_and_shares_the_cache(cluster, demo, one_thread,
                                                           tmp_path, monkeypatch):
    cache = Cache(tmp_path / "cache")
    seen = []
    got = dict(embed_encoders_ray(demo, IDS, cache=cache, batch_size=4, shard_frames=4,
                                  progress=lambda d, t, m: seen.append((d, t, m))))
    assert set(got) == set(IDS)
    for encoder_id in IDS:
        local = _local(demo, encoder_id, 4)
        assert got[encoder_id].dtype == np.float32
        np.testing.assert_array_equal(got[encoder_id], local)
        assert cache.contains(embeddings_key(demo, encoder_id))  # the local run's key
    assert seen[-1][:2] == (3 * len(demo), 3 * len(demo))
    assert sum("shard 4/4" in m for _, _, m in seen) == 3  # 4 shards of 4 frames each

    # A rerun is a cache hit without Ray; a local run reads the entry Ray wrote.
    _no_ray(monkeypatch)
    again = dict(embed_encoders_ray(demo, IDS, cache=cache, batch_size=4, shard_frames=4))
    monkeypatch.setattr("s2r.embed.cached.build", lambda *a: pytest.fail("model built"))
    for encoder_id in IDS:
        np.testing.assert_array_equal(again[encoder_id], got[encoder_id])
        np.testing.assert_array_equal(embed_frameset(demo, encoder_id, cache=cache),
                                      got[encoder_id])


def test_ray_keys_by_the_runtime_its_cpu_workers_run(cluster, demo, one_thread, tmp_path,
                                                     monkeypatch):
    """runtime onnx: the CPU actor runs ONNX Runtime, and its entry is the one a local ONNX
    Runtime run writes (not torch's), equal to the local embeddings within 1e-5 of the
    largest value (ONNX Runtime rounds differently from torch, not more coarsely)."""
    cache = Cache(tmp_path / "cache")
    Z = embed_frameset_ray(demo, "efficientnet-lite0", cache=cache, device="cpu", batch_size=4,
                           shard_frames=4, runtime="onnx")
    onnx_key = embeddings_key(demo, "efficientnet-lite0", device="cpu", runtime="onnx")
    assert onnx_key["runtime"] == "onnxruntime/v1"
    np.testing.assert_array_equal(cache.get_array(onnx_key), Z)
    assert not cache.contains(embeddings_key(demo, "efficientnet-lite0", device="cpu"))
    local = embed_frameset(demo, "efficientnet-lite0", cache=False, device="cpu", batch_size=4,
                           runtime="onnx")
    assert float(np.abs(Z - local).max()) <= 1e-5 * float(np.abs(local).max())

    # device None: the entry of a CPU actor answers without Ray; a torch run does not
    _no_ray(monkeypatch)
    again = embed_frameset_ray(demo, "efficientnet-lite0", cache=cache, batch_size=4,
                               shard_frames=4, runtime="onnx")
    np.testing.assert_array_equal(again, Z)
    with pytest.raises(AssertionError, match="Ray was contacted"):
        embed_frameset_ray(demo, "efficientnet-lite0", cache=cache, device="cpu",
                           batch_size=4, shard_frames=4, runtime="torch")


def _worker_killed_once(shard: int, marker: str):
    """An :class:`EncoderWorker` whose actor exits hard (``os._exit(1)``) in the middle of
    shard ``shard``, once: it creates ``marker`` first, and a restarted actor finding it goes
    on. Defined here, so it travels to the Ray workers by value (cloudpickle); production
    code has no test hook."""

    class KilledOnce(EncoderWorker):
        def shard_progress(self, index):
            if index != shard:
                return None

            def die_mid_shard(done, total, message=""):
                if 0 < done < total:
                    try:
                        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    except FileExistsError:
                        return
                    os.close(fd)
                    os._exit(1)
            return die_mid_shard

    return KilledOnce


def test_a_killed_worker_is_retried_and_the_result_still_matches(cluster, demo, one_thread,
                                                                 tmp_path, monkeypatch):
    marker = tmp_path / "killed-once"
    monkeypatch.setattr("s2r.embed.ray_run.EncoderWorker", _worker_killed_once(1, str(marker)))
    cache = Cache(tmp_path / "cache")
    Z = embed_frameset_ray(demo, "efficientnet-lite0", cache=cache, batch_size=2,
                           shard_frames=4)
    assert marker.exists()  # the worker of shard 1 did die after its first batch
    np.testing.assert_array_equal(Z, _local(demo, "efficientnet-lite0", 2))
    np.testing.assert_array_equal(cache.get_array(embeddings_key(demo, "efficientnet-lite0")),
                                  Z)


def _zarr_pair(root: Path, seed: int = 0) -> list:
    for name, n, s in (("sim", 12, seed), ("real", 8, seed + 1)):
        write_zarr(root / f"{name}.zarr", images=frames(n, 32, 40, seed=s), chunk=4,
                   episode_ends=np.array([4, n], dtype=np.uint32))
    return [str(root / "sim.zarr"), str(root / "real.zarr")]


def test_zarr_workers_open_the_dataset_from_its_spec(cluster, one_thread, tmp_path):
    spec = _zarr_pair(tmp_path)
    fs = load_dataset(spec)
    assert [(s.start, s.stop) for s in plan_shards(fs, target=8, align=4)] == \
        [(0, 8), (8, 16), (16, 20)]  # whole chunks of 4 (sim 0-11, real 12-19)
    dataset = {"spec": spec, "keys": {"image_key": None}}
    settings = current()  # the driver's, sent to the workers
    assert dataset_reference(fs, dataset, settings) == {
        "spec": spec, "keys": {}, "fingerprint": fs.fingerprint, "settings": settings}
    Z = embed_frameset_ray(fs, "pixels", cache=False, dataset=dataset, batch_size=4,
                           shard_frames=4)
    np.testing.assert_array_equal(Z, _local(fs, "pixels", 4))

    # Workers really open the spec: one naming other files is refused by them, in one line.
    other = _zarr_pair(tmp_path / "other", seed=5)
    with pytest.raises(DataError, match="fingerprint .* on Ray worker .* on the driver"):
        embed_frameset_ray(fs, "pixels", cache=False, dataset={"spec": other, "keys": {}},
                           batch_size=4, shard_frames=4)


def test_cli_score_on_ray_equals_local_and_reruns_from_the_cache(cluster, one_thread,
                                                                 tmp_path, monkeypatch):
    common = ["score", TINY_DEMO, "--encoders", "pixels,state", "--n-boot", "0",
              "--pca-dim", "4"]
    assert main([*common, "--out", str(tmp_path / "local.json"), "--cache-dir",
                 str(tmp_path / "c1")]) == 0
    assert main([*common, "--out", str(tmp_path / "ray.json"), "--cache-dir",
                 str(tmp_path / "c2"), "--backend", "ray"]) == 0
    local = json.loads((tmp_path / "local.json").read_text())
    remote = json.loads((tmp_path / "ray.json").read_text())
    assert remote == local

    _no_ray(monkeypatch)  # everything is cached now: neither scores nor embeddings need Ray
    assert main([*common, "--out", str(tmp_path / "again.json"), "--cache-dir",
                 str(tmp_path / "c2"), "--backend", "ray"]) == 0
    assert json.loads((tmp_path / "again.json").read_text()) == local
    assert main(["embed", TINY_DEMO, "--encoder", "pixels", "--out", str(tmp_path / "e.npz"),
                 "--cache-dir", str(tmp_path / "c2"), "--backend", "ray"]) == 0
    fs = load_dataset(TINY_DEMO)
    np.testing.assert_array_equal(np.load(tmp_path / "e.npz")["embeddings"],
                                  _local(fs, "pixels", 64))


# ---------------------------------------------------------------- without a cluster
class _Chunked:
    """A stand-in chunked source (what ChunkedImages exposes)."""

    def __init__(self, n: int, chunk_len: int):
        self.shape = (n, 2, 2, 3)
        self.chunk_len = chunk_len

    def read(self, indices):
        return np.zeros((len(indices), 2, 2, 3), np.uint8)


def _frameset(images) -> FrameSet:
    n = images.shape[0]
    return FrameSet(images=images, actions=np.zeros((n, 1)), domain=["sim"] * n,
                    episode=np.zeros(n), step=np.arange(n))


def test_shards_are_whole_chunks_of_at_least_target_frames():
    fs = _frameset(_Chunked(18, 4))
    assert storage_edges(fs.images).tolist() == [0, 4, 8, 12, 16, 18]
    assert [(s.start, s.stop) for s in plan_shards(fs, target=5)] == [(0, 8), (8, 16), (16, 18)]
    assert [(s.start, s.stop) for s in plan_shards(fs, target=1, align=8)] == \
        [(0, 8), (8, 16), (16, 18)]
    joined = _frameset(ConcatImages([_Chunked(10, 4), _Chunked(6, 4)]))
    assert storage_edges(joined.images).tolist() == [0, 4, 8, 10, 14, 16]
    memory = _frameset(np.zeros((5, 2, 2, 3), np.uint8))
    assert [(s.start, s.stop) for s in plan_shards(memory, target=2)] == [(0, 2), (2, 4), (4, 5)]
    with pytest.raises(S2RError, match="shard target must be a positive integer"):
        plan_shards(fs, target=0)


def test_addresses(monkeypatch):
    monkeypatch.setenv(RAY_ADDRESS_ENV, "10.9.9.9:1")  # never read by the library
    assert check_address(None) is None
    assert check_address("10.0.0.1:6379") == "10.0.0.1:6379"
    assert check_address("ray://head:10001") == "ray://head:10001"
    # the default ($S2R_RAY_ADDRESS) is a setting the caller hands down
    assert check_address(None, "auto") == "auto" and check_address(" ", "auto") == "auto"
    assert check_address("10.0.0.1:6379", "auto") == "10.0.0.1:6379"
    for bad in ("head", "head:port", "10.0.0.1:99999", "http://x:1/y"):
        with pytest.raises(S2RError, match="--address must be HOST:PORT"):
            check_address(bad)


def test_int8_and_built_encoders_are_refused_on_ray(demo):
    with pytest.raises(S2RError, match="--precision int8 runs on the local backend only"):
        embed_frameset_ray(demo, "resnet18@random", cache=False, precision="int8")
    from s2r.encoders import build_encoder

    with pytest.raises(S2RError, match="builds encoders on its workers: give the id 'pixels'"):
        embed_frameset_ray(demo, build_encoder("pixels", device="cpu"), cache=False)


def test_the_local_path_never_imports_ray():
    code = ("import sys, s2r.embed, s2r.pipeline, s2r.cli\n"
            "s2r.cli.build_parser()\n"
            "from s2r.worlds.demo.dataset import make_demo\n"
            "s2r.embed.embed_frameset(make_demo(episodes=1, steps=2, height=64, width=64),"
            " 'pixels', cache=False)\n"
            "assert 'ray' not in sys.modules, 'ray imported'\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    importers = [str(p.relative_to(REPO)) for p in (REPO / "s2r").rglob("*.py")
                 if any(line.strip().startswith(("import ray", "from ray"))
                        for line in p.read_text().splitlines())]
    assert importers == ["s2r/embed/ray_backend.py"]


class _FakeRay:
    """What :func:`actor_options` reads of Ray: the cluster's resources."""

    def __init__(self, gpus: float):
        self.gpus = gpus

    def cluster_resources(self) -> dict:
        return {"CPU": 16.0, "GPU": self.gpus} if self.gpus else {"CPU": 16.0}


def test_actor_resources_and_fault_tolerance_are_explicit():
    options, device = actor_options(_FakeRay(2), None, num_gpus=0.5)
    assert device == "cuda"
    assert options == {"num_gpus": 0.5, "num_cpus": 1.0, "max_restarts": MAX_RESTARTS,
                       "max_task_retries": MAX_TASK_RETRIES}
    assert MAX_RESTARTS >= 1 and MAX_TASK_RETRIES >= 1
    assert actor_options(_FakeRay(2), "cpu")[1] == "cpu"
    options, device = actor_options(_FakeRay(0), None, num_cpus=2)
    assert (device, options["num_gpus"], options["num_cpus"]) == ("cpu", 0, 2.0)
    with pytest.raises(S2RError, match="--device cuda: the Ray cluster has no GPU"):
        actor_options(_FakeRay(0), "cuda")
    with pytest.raises(S2RError, match="GPUs per actor must be a fraction"):
        actor_options(_FakeRay(2), None, num_gpus=1.5)


def test_a_worker_with_other_weights_refuses_to_embed(demo):
    from s2r.encoders import get_spec

    # The constructor keeps the error (raising there would make Ray restart the actor in
    # vain); every shard then raises it, and the driver passes it on as it is.
    worker = EncoderWorker(get_spec("pixels"), "not-these", "cpu")
    with pytest.raises(S2RError, match="has weights .* but the driver expects not-these"):
        worker.embed_shard(demo, 0, 0, 4)


def test_a_worker_is_built_in_the_runtime_the_driver_keyed_by_on_its_cpus(demo):
    from s2r.encoders import get_spec
    from s2r.encoders.runtime import OnnxModel

    assert [ray_run.worker_runtime(d, "onnx") for d in ("cpu", "cuda")] == ["onnx", "torch"]
    assert ray_run.worker_runtime("cpu", "auto") == "onnx"
    assert ray_run.worker_runtime("cpu") == "torch"                # no settings: torch
    assert ray_run.worker_runtime("cpu", settings=dataclasses.replace(current(),
                                                                      runtime="auto")) == "onnx"
    spec = get_spec("simcnn-dr1@random")
    weights = str(ray_run.weights_fingerprint(spec))
    worker = EncoderWorker(spec, weights, "cpu", 4, 1, None, "onnx")
    assert worker.error is None and worker.encoder.runs_graphs and worker.encoder.threads == 1
    worker.embed_shard(demo, 0, 0, 4)
    assert isinstance(worker.encoder._graphs["embed"], OnnxModel)
    assert worker.encoder._graphs["embed"].threads == 1
    assert not EncoderWorker(spec, weights, "cpu", 4, 1).encoder.runs_graphs


def test_score_without_cache_keeps_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "default-cache"))
    _no_ray(monkeypatch)  # 'state' has no image model: answered on the driver
    fs = load_dataset(TINY_DEMO)
    params = ScoreParams(n_boot=0, pca_dim=4)
    (record,) = score_encoders_ray(fs, ["state"], params=params, cache=False)
    (local,) = score_encoders(fs, ["state"], params=params, cache=False)
    assert record == local
    assert not (tmp_path / "default-cache").exists()
