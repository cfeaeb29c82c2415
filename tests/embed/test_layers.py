"""Every layer embedded in one pass, each under its own cache key; the final one is today's."""

from __future__ import annotations

import numpy as np
import pytest

import s2r.embed.layers as layers_module
from s2r.cache import Cache, NotCached, NullCache, ReadOnlyCache
from s2r.embed import embed_frameset, embeddings_key
from s2r.embed.layers import ColumnSplit, embed_layers, layer_key, plan_of
from s2r.encoders import build_encoder, get_spec
from s2r.settings import current


@pytest.fixture(scope="module")
def demo():
    from s2r.worlds.demo.dataset import make_demo

    return make_demo(episodes=2, steps=6, gap=0.5, seed=0, height=64, width=80)


@pytest.fixture(scope="module")
def resnet():
    return build_encoder("resnet18@random", device="cpu", settings=current())


def _counting_builds(monkeypatch):
    built = []
    real = layers_module.build

    def build(spec, device=None, settings=None, runtime=None):
        built.append(spec.id)
        return real(spec, device, settings, runtime)

    monkeypatch.setattr(layers_module, "build", build)
    return built


def test_final_layer_key_is_the_embeddings_key(demo, resnet):
    plan = plan_of(resnet.spec, cache=False)
    runs = "onnx" if resnet.runs_graphs else "torch"     # the default runtime on the CPU
    final = layer_key(demo, resnet.spec.id, resnet.weights_fingerprint, plan[-1], runs)
    assert final == embeddings_key(demo, resnet)
    assert (layer_key(demo, resnet.spec.id, resnet.weights_fingerprint, plan[-1], "torch")
            == embeddings_key(demo, "resnet18@random", device="cpu", settings=current(),
                              runtime="torch"))
    inner = {str(layer_key(demo, resnet.spec.id, resnet.weights_fingerprint, t))
             for t in plan[:-1]}
    assert len(inner) == len(plan) - 1 and str(final) not in inner
    assert layer_key(demo, "x", "w", plan[1])["layer"] == "layer1"


def test_a_cached_embedding_is_the_final_layer(tmp_path, demo, monkeypatch):
    cache = Cache(tmp_path / "c")
    Z = embed_frameset(demo, "resnet18@random", cache=cache)
    built = _counting_builds(monkeypatch)
    got = embed_layers(demo, "resnet18@random", "last", cache=cache)
    assert list(got) == ["layer4"] and built == []      # a read: nothing built
    np.testing.assert_array_equal(got["layer4"], Z)


def test_all_layers_in_one_pass_then_each_a_cache_read(tmp_path, demo, monkeypatch):
    cache = Cache(tmp_path / "c")
    built = _counting_builds(monkeypatch)
    calls = []
    real = layers_module.LayerEmbedder.embed
    monkeypatch.setattr(layers_module.LayerEmbedder, "embed",
                        lambda self, frames: calls.append(len(frames)) or real(self, frames))
    every = embed_layers(demo, "resnet18@random", "all", cache=cache, batch_size=8)
    assert list(every) == ["act1", "layer1", "layer2", "layer3", "layer4"]
    assert [Z.shape[1] for Z in every.values()] == [64, 64, 128, 256, 512]
    assert calls == [8, 8, 8] and built == ["resnet18@random"]   # one forward per batch
    one = embed_layers(demo, "resnet18@random", ["layer2"], cache=cache)
    assert built == ["resnet18@random"] and len(calls) == 3      # read back, not recomputed
    np.testing.assert_array_equal(one["layer2"], every["layer2"])
    # the plain embedding is a hit too, and equals the final layer
    np.testing.assert_array_equal(embed_frameset(demo, "resnet18@random", cache=cache),
                                  every["layer4"])
    # a read-only look-up of a layer never computed misses without building
    other = embed_layers(demo, "resnet18@random", "all", cache=ReadOnlyCache(cache))
    assert set(other) == set(every)
    with pytest.raises(NotCached):
        embed_layers(demo, "efficientnet-lite0", ["blocks.2"], cache=ReadOnlyCache(cache))


def test_layers_equal_an_all_in_memory_computation(demo, resnet):
    from s2r.encoders.taps import LayerEmbedder

    plan = plan_of(resnet.spec, cache=False)
    want = LayerEmbedder(resnet, plan).split(
        LayerEmbedder(resnet, plan).embed(demo.read_images(np.arange(len(demo)))))
    got = embed_layers(demo, resnet, "all", cache=NullCache(), batch_size=5)
    for name in want:
        assert isinstance(got[name], np.ndarray) and not isinstance(got[name], np.memmap)
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


def test_rows_go_to_each_layers_own_array():
    parts = [np.zeros((4, 2), np.float32), np.zeros((4, 3), np.float32)]
    split = ColumnSplit(parts)
    assert split.shape == (4, 5)
    split[1:3] = np.arange(10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(parts[0][1:3], [[0, 1], [5, 6]])
    np.testing.assert_array_equal(parts[1][1:3], [[2, 3, 4], [7, 8, 9]])
    assert not parts[0][0].any() and not parts[1][3].any()


def test_layers_are_written_to_files_as_they_are_made(tmp_path, demo, resnet):
    # no (N, sum of widths) array in memory: every layer is a memory-mapped file of its own
    plan = plan_of(resnet.spec, cache=False)
    made = layers_module._embed_pass(demo, resnet, plan, str(tmp_path), batch_size=4,
                                     progress=None)
    assert all(isinstance(Z, np.memmap) for Z in made.values())
    assert len({Z.filename for Z in made.values()}) == len(plan)
    assert all(str(Z.filename).startswith(str(tmp_path)) for Z in made.values())


def test_state_has_one_layer(demo):
    got = embed_layers(demo, "state", "all", cache=False)
    assert list(got) == ["state"]
    np.testing.assert_array_equal(got["state"], demo.state)


def test_the_plan_is_cached_by_architecture(tmp_path):
    cache = Cache(tmp_path / "c")
    a = plan_of(get_spec("resnet18"), cache=cache)
    b = plan_of(get_spec("resnet18@random"), cache=cache)
    assert a == b
    assert sum(1 for e in cache.ls() if e.key.get("kind") == "layer-plan") == 1
