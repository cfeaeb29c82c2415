"""FurnitureBench zarr stores (s2r.datasets.furniturebench): round trip, other keys, optional
state, pixels read lazily."""

from __future__ import annotations

import pickle

import numpy as np

from s2r.datasets import load_dataset
from s2r.datasets._sources import ChunkedImages
from s2r.datasets._zarr import DirectChunks
from s2r.datasets.furniturebench import ACTION_NAMES_10, load_furniturebench
from tests.helpers.datafiles import all_pixels, frames, write_zarr


def test_furniturebench_round_trip(zarr_pair):
    sim_path, real_path, sim, real = zarr_pair
    fs = load_furniturebench(sim_path, real_path)
    assert len(fs) == 17
    np.testing.assert_array_equal(all_pixels(fs),
                                  np.concatenate([sim["color_image2"], real["color_image2"]]))
    np.testing.assert_array_equal(fs.actions,
                                  np.concatenate([sim["action/pos"], real["action/pos"]]))
    np.testing.assert_array_equal(fs.state,
                                  np.concatenate([sim["robot_state"], real["robot_state"]]))
    # episode_ends [4, 10] then [2, 5, 7]: real ids continue after the sim ones
    np.testing.assert_array_equal(fs.episode, [0] * 4 + [1] * 6 + [2] * 2 + [3] * 3 + [4] * 2)
    np.testing.assert_array_equal(fs.step, [0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 0, 1, 0, 1, 2, 0, 1])
    np.testing.assert_array_equal(fs.domain, ["sim"] * 10 + ["real"] * 7)
    assert fs.action_names == ACTION_NAMES_10
    assert fs.name == "one_leg"
    assert fs.source["kind"] == "furniturebench" and fs.source["state_key"] == "robot_state"
    assert isinstance(fs.images.parts[0], ChunkedImages)
    copy = pickle.loads(pickle.dumps(fs))  # Streamlit caches and worker processes need this
    np.testing.assert_array_equal(copy.read_images([3, 12]), fs.read_images([3, 12]))


def test_furniturebench_other_keys_and_optional_state(tmp_path):
    img1 = frames(6, seed=5)
    delta = np.random.default_rng(2).normal(size=(6, 4)).astype(np.float32)
    for name in ("a.zarr", "b.zarr"):
        write_zarr(tmp_path / name, images=img1, actions=delta, image_key="color_image1",
                   action_key="action/delta", episode_ends=np.array([6], np.uint32),
                   skip=("robot_state",))
    fs = load_dataset([tmp_path / "a.zarr", tmp_path / "b.zarr"], image_key="color_image1",
                      action_key="action/delta")
    assert fs.state is None and fs.source["state_key"] is None
    assert fs.action_names == ["a0", "a1", "a2", "a3"]  # only 10-D actions get FurnitureBench names
    np.testing.assert_array_equal(fs.read_images([7]), img1[[1]])
    np.testing.assert_array_equal(fs.actions[6:], delta)


def test_furniturebench_reads_pixels_lazily(zarr_pair, monkeypatch):
    """Loading fetches no image chunk; reading frame 5 fetches only the chunk holding it."""
    import zarr.storage

    fetched = []
    original = zarr.storage.LocalStore.get

    async def spy(self, key, *args, **kwargs):
        fetched.append(key)
        return await original(self, key, *args, **kwargs)

    monkeypatch.setattr(zarr.storage.LocalStore, "get", spy)
    sim_path, real_path, sim, _ = zarr_pair
    fs = load_furniturebench(sim_path, real_path)
    image_chunks = [k for k in fetched if k.startswith("color_image2/")
                    and not k.split("/")[-1].startswith(".")]
    assert image_chunks == []
    assert "action/pos/0.0" in fetched  # labels are read eagerly
    fetched.clear()
    decoded = []
    original_read = DirectChunks.read

    def spy_read(self, chunk_index, out, scratch=None):  # image chunks: decoded from files
        decoded.append(chunk_index)
        return original_read(self, chunk_index, out, scratch)

    monkeypatch.setattr(DirectChunks, "read", spy_read)
    np.testing.assert_array_equal(fs.read_images([5]), sim["color_image2"][[5]])
    assert decoded == [1] and fetched == []  # chunks hold 4 frames: frame 5 is in chunk 1
    fs.read_images([4, 6, 7])  # same chunk: served from the decoded-chunk cache
    assert decoded == [1] and fetched == []
