"""Dataset loaders: FurnitureBench zarr, s2r folder, robomimic HDF5, specs and lazy reads."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from s2r.datasets import DEMO_DEFAULTS, load_dataset, parse_spec
from s2r.datasets._sources import ChunkedImages
from s2r.datasets.folder import load_folder, write_folder
from s2r.datasets.furniturebench import ACTION_NAMES_10, load_furniturebench
from s2r.datasets.robomimic import OSC_POSE_NAMES, load_robomimic
from s2r.errors import DataError
from s2r.images import FileImages
from tests.helpers.datafiles import (frames, robomimic_demos, synthetic_frameset, write_hdf5,
                                     write_png, write_zarr)


def all_pixels(fs):
    return fs.read_images(np.arange(len(fs)))


def assert_same_frameset(a, b, *, masks=True):
    np.testing.assert_array_equal(all_pixels(a), all_pixels(b))
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(a.domain, b.domain)
    np.testing.assert_array_equal(a.episode, b.episode)
    np.testing.assert_array_equal(a.step, b.step)
    if a.state is None:
        assert b.state is None
    else:
        np.testing.assert_array_equal(a.state, b.state)
    if masks:
        assert a.has_masks == b.has_masks
        if a.has_masks:
            np.testing.assert_array_equal(a.read_masks(np.arange(len(a))),
                                          b.read_masks(np.arange(len(b))))
    assert list(a.action_names) == list(b.action_names)
    # Same content in another storage: the fingerprint names the storage (file sizes and
    # times, see s2r.identity), so a written copy is its own cache key.


# ----------------------------------------------------------------------------- zarr
@pytest.fixture
def zarr_pair(tmp_path):
    sim = write_zarr(tmp_path / "sim.zarr", attrs={"task": "one_leg"})
    real = write_zarr(tmp_path / "real.zarr", images=frames(7, seed=3),
                      actions=np.arange(70, dtype=np.float32).reshape(7, 10),
                      state=np.full((7, 16), 2.0, np.float32),
                      episode_ends=np.array([2, 5, 7], np.uint32), attrs={"task": "one_leg"})
    return tmp_path / "sim.zarr", tmp_path / "real.zarr", sim, real


def test_furniturebench_round_trip(zarr_pair):
    sim_path, real_path, sim, real = zarr_pair
    fs = load_furniturebench(sim_path, real_path)
    assert len(fs) == 17
    np.testing.assert_array_equal(all_pixels(fs),
                                  np.concatenate([sim["color_image2"], real["color_image2"]]))
    np.testing.assert_array_equal(fs.actions, np.concatenate([sim["action/pos"], real["action/pos"]]))
    np.testing.assert_array_equal(fs.state, np.concatenate([sim["robot_state"], real["robot_state"]]))
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
    image_chunks = [k for k in fetched if k.startswith("color_image2/") and not k.split("/")[-1].startswith(".")]
    assert image_chunks == []
    assert "action/pos/0.0" in fetched  # labels are read eagerly
    fetched.clear()
    np.testing.assert_array_equal(fs.read_images([5]), sim["color_image2"][[5]])
    assert fetched == ["color_image2/1.0.0.0"]  # chunks hold 4 frames: frame 5 is in chunk 1
    fetched.clear()
    fs.read_images([4, 6, 7])  # same chunk: served from the decoded-chunk cache
    assert fetched == []


class CountingArray:
    """An ndarray with a ``chunks`` attribute that records every read."""

    def __init__(self, data, chunk):
        self.data, self.shape, self.dtype, self.chunks = data, data.shape, data.dtype, (chunk,)
        self.reads = []

    def __getitem__(self, sel):
        assert isinstance(sel, slice), "ChunkedImages must read slices only"
        self.reads.append((sel.start, sel.stop))
        return self.data[sel]


def test_chunked_images_decodes_each_chunk_once_in_batches():
    data = frames(50, 4, 5)
    arr = CountingArray(data, chunk=8)
    src = ChunkedImages(arr, cache_bytes=10**6)
    for start in range(0, 50, 6):  # batches of 6 straddle chunk borders
        np.testing.assert_array_equal(src.read(np.arange(start, min(50, start + 6))),
                                      data[start:start + 6])
    spans = sorted(arr.reads)
    assert spans == [(a, min(a + 8, 50)) for a in range(0, 50, 8)]


def test_chunked_images_random_order_and_bounded_cache():
    data = frames(40, 4, 5)
    frame_bytes = 4 * 5 * 3
    arr = CountingArray(data, chunk=10)
    src = ChunkedImages(arr, cache_bytes=2 * 10 * frame_bytes)  # room for 2 chunks
    idx = np.array([35, 3, 3, 17, 0, 39, 21])  # 4 chunks at once: too many to cache
    np.testing.assert_array_equal(src.read(idx), data[idx])
    assert all(stop - start <= 10 for start, stop in arr.reads)  # never more than one chunk
    arr.reads.clear()
    src.read(idx)
    assert len(arr.reads) == 4  # nothing was kept: every chunk is read again
    src.read([1, 12])
    src.read([25])  # third chunk evicts the least recently used one (chunk 0)
    arr.reads.clear()
    src.read([12, 25])
    assert arr.reads == []  # chunks 1 and 2 are cached
    src.read([1])
    assert arr.reads == [(0, 10)]  # chunk 0 was evicted
    copy = pickle.loads(pickle.dumps(src))
    np.testing.assert_array_equal(copy.read(idx), data[idx])


# ----------------------------------------------------------------------------- folder
@pytest.mark.parametrize("table", ["csv", "parquet"])
def test_folder_round_trip(tmp_path, table):
    fs = synthetic_frameset()
    out = write_folder(fs, tmp_path / "ds", table=table)
    assert (out / f"actions.{table}").is_file() and (out / "masks" / "real").is_dir()
    back = load_folder(out)
    assert_same_frameset(fs, back)
    assert back.name == "synthetic"
    assert back.source["unlisted_frames"] == {"sim": 0, "real": 0}
    assert isinstance(back.images, FileImages)


def test_write_folder_reports_progress_and_guards_existing(tmp_path):
    fs = synthetic_frameset(masks=False, state_dim=0)
    calls = []
    write_folder(fs, tmp_path / "ds", batch_size=4, progress=lambda d, t, m: calls.append((d, t)))
    assert calls[0] == (0, len(fs)) and calls[-1] == (len(fs), len(fs))
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    with pytest.raises(DataError, match="not empty"):
        write_folder(fs, tmp_path / "ds")
    (tmp_path / "ds" / "notes.txt").write_text("mine")
    other = synthetic_frameset(sim_eps=(2,), real_eps=(2,), masks=False, state_dim=0, seed=4)
    write_folder(other, tmp_path / "ds", overwrite=True)
    assert (tmp_path / "ds" / "notes.txt").read_text() == "mine"
    assert_same_frameset(other, load_folder(tmp_path / "ds"))


def test_folder_made_by_hand(tmp_path):
    """A user's folder: JPEG and PNG in subfolders, per-domain episode ids, no step column,
    named state columns, s2r.json picking action columns, an unlisted frame."""
    import pandas as pd

    root = tmp_path / "mine"
    img = frames(6, 8, 10, seed=7)
    names = {"sim": ["ep0/a.png", "ep0/b.png", "ep1/c.png"], "real": ["r0.png", "r1.png", "r2.png"]}
    rows = []
    for d, files in names.items():
        for k, f in enumerate(files):
            write_png(root / d / f, img[len(rows)])
            rows.append({"domain": d, "file": f, "episode": 0 if (d == "real" or k < 2) else 1,
                         "x": len(rows) * 0.5, "y": -1.0, "unused": 7, "state.q": float(k)})
    write_png(root / "sim" / "stray.png", img[0])
    pd.DataFrame(rows).to_csv(root / "actions.csv", index=False)
    (root / "s2r.json").write_text('{"name": "my robot", "action_names": ["y", "x"]}')
    fs = load_dataset(str(root))
    np.testing.assert_array_equal(all_pixels(fs), img)
    np.testing.assert_array_equal(fs.actions, [[-1.0, 0.5 * i] for i in range(6)])
    assert fs.action_names == ["y", "x"]
    # sim episodes 0, 1; real episode 0 overlaps, so it is shifted after the sim ones
    np.testing.assert_array_equal(fs.episode, [0, 0, 1, 2, 2, 2])
    np.testing.assert_array_equal(fs.step, [0, 1, 0, 0, 1, 2])
    np.testing.assert_array_equal(fs.state[:, 0], [0, 1, 2, 0, 1, 2])
    assert fs.name == "my robot" and not fs.has_masks
    assert fs.source["unlisted_frames"] == {"sim": 1, "real": 0}


def test_folder_jpeg_frames_load(tmp_path):
    from PIL import Image

    import pandas as pd

    root = tmp_path / "jpg"
    flat = np.full((8, 8, 3), 120, np.uint8)  # flat colour survives JPEG exactly
    for d in ("sim", "real"):
        (root / d).mkdir(parents=True)
        Image.fromarray(flat).save(root / d / "f.jpg", quality=95)
    pd.DataFrame({"domain": ["sim", "real"], "file": ["f.jpg", "f.jpg"], "episode": [3, 9],
                  "a0": [1.0, 2.0]}).to_parquet(root / "actions.parquet")
    fs = load_folder(root)
    np.testing.assert_array_equal(fs.read_images([0, 1]), np.stack([flat, flat]))
    np.testing.assert_array_equal(fs.episode, [3, 9])  # disjoint ids are kept as written


# ----------------------------------------------------------------------------- robomimic
def test_robomimic_round_trip(tmp_path):
    sim_demos = robomimic_demos([3, 4, 2])
    sim_demos = {"demo_10": sim_demos["demo_0"], "demo_2": sim_demos["demo_1"],
                 "demo_1": sim_demos["demo_2"]}
    real_demos = robomimic_demos([5], seed=3)
    env = {"env_name": "Lift", "env_kwargs": {"controller_configs": {"type": "OSC_POSE"}}}
    write_hdf5(tmp_path / "sim.hdf5", sim_demos, env_args=env)
    write_hdf5(tmp_path / "real.h5", real_demos, env_args=env)
    fs = load_dataset([str(tmp_path / "sim.hdf5"), str(tmp_path / "real.h5")])
    order = [sim_demos["demo_1"], sim_demos["demo_2"], sim_demos["demo_10"], real_demos["demo_0"]]
    np.testing.assert_array_equal(all_pixels(fs), np.concatenate([d["images"] for d in order]))
    np.testing.assert_array_equal(fs.actions, np.concatenate([d["actions"] for d in order]))
    np.testing.assert_array_equal(fs.episode, np.repeat([0, 1, 2, 3], [2, 4, 3, 5]))
    np.testing.assert_array_equal(fs.step[:6], [0, 1, 0, 1, 2, 3])
    expected_state = np.concatenate([np.concatenate(
        [d["robot0_eef_pos"], d["robot0_eef_quat"], d["robot0_gripper_qpos"]], axis=1) for d in order])
    np.testing.assert_array_equal(fs.state, expected_state)
    assert fs.action_names == OSC_POSE_NAMES
    assert fs.source["demos"]["sim"] == ["demo_1", "demo_2", "demo_10"]
    copy = pickle.loads(pickle.dumps(fs))  # h5py handles reopen in the copy
    np.testing.assert_array_equal(copy.read_images([8, 2, 10]), fs.read_images([8, 2, 10]))


def test_robomimic_camera_state_and_filter_options(tmp_path):
    demos = robomimic_demos([2, 3, 4], state=False)
    for d in demos.values():
        d["robot0_joint_pos"] = np.ones((len(d["actions"]), 7), np.float32)
    write_hdf5(tmp_path / "s.hdf5", demos, camera="robot0_eye_in_hand_image",
               masks={"train": ["demo_0", "demo_2"]})
    write_hdf5(tmp_path / "r.hdf5", demos, camera="robot0_eye_in_hand_image",
               masks={"train": ["demo_1"]})
    fs = load_robomimic(tmp_path / "s.hdf5", tmp_path / "r.hdf5", camera="robot0_eye_in_hand",
                        state_key="robot0_joint_pos", filter_key="train")
    assert (fs.n_frames("sim"), fs.n_frames("real")) == (6, 3)
    assert fs.state.shape == (9, 7) and fs.action_names == [f"a{j}" for j in range(7)]
    np.testing.assert_array_equal(fs.read_images([2]), demos["demo_2"]["images"][[0]])
    fs2 = load_robomimic(tmp_path / "s.hdf5", tmp_path / "r.hdf5",
                         camera="robot0_eye_in_hand_image")
    assert len(fs2) == 18 and fs2.state is None  # default state keys absent: no state


# ----------------------------------------------------------------------------- specs
def test_parse_spec_demo_options():
    assert DEMO_DEFAULTS == {"episodes": 12, "steps": 24, "gap": 0.5, "seed": 0, "paired": False,
                             "height": 240, "width": 320}  # make_demo's defaults, as documented
    assert parse_spec("demo") == {"kind": "demo", "options": DEMO_DEFAULTS}
    opts = parse_spec("demo:gap=0.25, episodes=3,seed=7,paired=TRUE,height=64,width=96,steps=5")
    assert opts["options"] == {"episodes": 3, "steps": 5, "gap": 0.25, "seed": 7, "paired": True,
                               "height": 64, "width": 96}
    assert parse_spec(["demo:paired=no"])["options"]["paired"] is False


@pytest.mark.parametrize("spec, words", [
    ("demo:gapp=0.5", ["unknown demo option 'gapp'", "episodes"]),
    ("demo:episodes=two", ["episodes='two'", "integer"]),
    ("demo:episodes=0", ["episodes must be >= 1, got 0"]),
    ("demo:height=20", ["height must be in [64, 4096], got 20"]),
    ("demo:gap=1.5", ["gap must be in [0, 1]"]),
    ("demo:gap=big", ["gap='big'", "must be a number"]),
    ("demo:paired=maybe", ["true or false"]),
    ("demo:seed", ["needs a value"]),
])
def test_parse_spec_demo_errors(spec, words):
    with pytest.raises(DataError) as err:
        parse_spec(spec)
    for w in words:
        assert w in str(err.value)


def test_parse_spec_paths(tmp_path, zarr_pair):
    sim_path, real_path, _, _ = zarr_pair
    assert parse_spec(str(tmp_path)) == {"kind": "folder", "path": str(tmp_path)}
    assert parse_spec((sim_path, real_path))["kind"] == "furniturebench"
    (tmp_path / "x.hdf5").write_bytes(b"")
    with pytest.raises(DataError, match="same kind"):
        parse_spec([str(sim_path), str(tmp_path / "x.hdf5")])
    with pytest.raises(DataError, match="give two, SIM REAL"):
        parse_spec(str(sim_path))
    with pytest.raises(DataError, match="3 paths"):
        parse_spec(["a", "b", "c"])
    with pytest.raises(DataError, match=r"\.zarr \(FurnitureBench\) or \.hdf5"):
        parse_spec([str(tmp_path), str(tmp_path)])
    with pytest.raises(DataError, match="image-key applies to zarr and HDF5"):
        load_dataset(str(tmp_path), image_key="color_image1")
