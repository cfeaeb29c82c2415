"""The dataset fingerprint changes whenever any frame, mask, label or key changes, so the cache
never hands back embeddings of frames that are no longer there (issue 11, item 1).

Every edit below touches one frame (or one label) that the old 32-frame sample did not read,
and each kind of dataset (folder, FurnitureBench zarr v2 and v3, robomimic HDF5, the demo) is
edited the way a user would: rewrite a PNG, assign into a zarr array, write into an HDF5
dataset in place.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import numpy as np
import pandas as pd
import pytest

from s2r.cache import Cache
from s2r.datasets import load_dataset, storage_identity
from s2r.datasets.folder import write_folder
from s2r.embed import embed_frameset
from s2r.errors import DataError
from tests.helpers.datafiles import (frames, robomimic_demos, synthetic_frameset, write_hdf5,
                                     write_png, write_zarr)

# Linux stamps file times from a clock that ticks every few milliseconds: a test that edits
# a file right after writing it waits one tick, as any real edit does.
TICK = 0.02


def _edit_later(fn):
    time.sleep(TICK)
    fn()


def _folder(tmp_path, n_sim=40, n_real=40):
    fs = synthetic_frameset(sim_eps=(n_sim // 2, n_sim - n_sim // 2),
                            real_eps=(n_real // 2, n_real - n_real // 2))
    return write_folder(fs, tmp_path / "ds")


# ----------------------------------------------------------------------------- folder
def test_folder_one_frame_edited_changes_the_fingerprint(tmp_path):
    root = _folder(tmp_path)
    before = load_dataset(str(root)).fingerprint
    assert load_dataset(str(root)).fingerprint == before  # stable while nothing changes
    frame = root / "sim" / "000047.png"
    if not frame.exists():
        frame = sorted((root / "sim").glob("*.png"))[17]
    from PIL import Image

    pixels = np.asarray(Image.open(frame).convert("RGB"))
    _edit_later(lambda: write_png(frame, 255 - pixels))  # same size on disk is likely
    assert load_dataset(str(root)).fingerprint != before


def test_folder_times_put_back_still_change_the_fingerprint(tmp_path):
    """An edit whose modification time is put back (``touch -d``, ``rsync -t``) still moves
    the status-change time, which the fingerprint hashes too."""
    root = _folder(tmp_path)
    frame = sorted((root / "real").glob("*.png"))[5]
    st = frame.stat()
    before = load_dataset(str(root)).fingerprint
    data = bytearray(frame.read_bytes())
    _edit_later(lambda: frame.write_bytes(bytes(data)))  # same bytes, same size
    os.utime(frame, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert frame.stat().st_mtime_ns == st.st_mtime_ns and frame.stat().st_size == st.st_size
    assert load_dataset(str(root)).fingerprint != before


def test_folder_mask_label_and_names_change_the_fingerprint(tmp_path):
    root = _folder(tmp_path)
    before = load_dataset(str(root)).fingerprint
    mask = sorted((root / "masks" / "sim").glob("*.png"))[3]
    _edit_later(lambda: write_png(mask, np.zeros((12, 16, 3), np.uint8)))
    after_mask = load_dataset(str(root)).fingerprint
    assert after_mask != before
    df = pd.read_csv(root / "actions.csv")
    df.loc[33, "act1"] += 0.25
    df.to_csv(root / "actions.csv", index=False)
    after_label = load_dataset(str(root)).fingerprint
    assert after_label != after_mask
    df = df.rename(columns={"act2": "gripper"})  # same numbers, another name
    df.to_csv(root / "actions.csv", index=False)
    meta = json.loads((root / "s2r.json").read_text())
    meta["action_names"] = ["act0", "act1", "gripper"]
    (root / "s2r.json").write_text(json.dumps(meta))
    renamed = load_dataset(str(root))
    assert renamed.action_names[-1] == "gripper" and renamed.fingerprint != after_label


def test_folder_moved_keeps_its_fingerprint(tmp_path):
    """Names are relative to the dataset folder: moving it (a rename keeps file times) is
    not a change."""
    root = _folder(tmp_path)
    before = load_dataset(str(root)).fingerprint
    moved = tmp_path / "elsewhere" / "ds"
    moved.parent.mkdir()
    shutil.move(str(root), str(moved))
    assert load_dataset(str(moved)).fingerprint == before


def test_a_frame_deleted_after_loading_is_named(tmp_path):
    root = _folder(tmp_path)
    fs = load_dataset(str(root))
    (root / "sim" / "000010.png").unlink()
    with pytest.raises(DataError, match=r"000010\.png: file does not exist"):
        _ = fs.fingerprint


# ----------------------------------------------------------------------------- zarr
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_one_frame_edited_changes_the_fingerprint(tmp_path, zarr_format):
    import zarr

    sim, real = tmp_path / "sim.zarr", tmp_path / "real.zarr"
    write_zarr(sim, images=frames(80, seed=1), episode_ends=np.array([40, 80], np.uint32))
    write_zarr(real, images=frames(12, seed=2), episode_ends=np.array([12], np.uint32))
    if zarr_format == 3:  # the same store in zarr v3 format
        for path in (sim, real):
            src = zarr.open_group(str(path), mode="r")
            dst = zarr.open_group(str(path) + ".v3", mode="w", zarr_format=3)
            for key in ("color_image2", "action/pos", "episode_ends", "robot_state"):
                a = src[key]
                dst.create_array(key, shape=a.shape, dtype=a.dtype, chunks=a.chunks)[...] = a[...]
        sim, real = tmp_path / "sim.zarr.v3", tmp_path / "real.zarr.v3"
        sim, real = sim.rename(tmp_path / "sim3.zarr"), real.rename(tmp_path / "real3.zarr")
    spec = [str(sim), str(real)]
    before = load_dataset(spec).fingerprint
    assert load_dataset(spec).fingerprint == before
    images = zarr.open_group(str(sim), mode="r+")["color_image2"]
    _edit_later(lambda: images.__setitem__(45, 255 - images[45]))
    fs = load_dataset(spec)
    assert fs.fingerprint != before
    np.testing.assert_array_equal(fs.read_images([45])[0], 255 - frames(80, seed=1)[45])


# ----------------------------------------------------------------------------- HDF5
def test_hdf5_one_frame_edited_in_place_changes_the_fingerprint(tmp_path):
    import h5py

    sim, real = tmp_path / "sim.hdf5", tmp_path / "real.hdf5"
    write_hdf5(sim, robomimic_demos([30, 30]))
    write_hdf5(real, robomimic_demos([10], seed=1))
    before = load_dataset([str(sim), str(real)]).fingerprint

    def edit():
        with h5py.File(sim, "r+") as f:
            ds = f["data/demo_1/obs/agentview_image"]
            ds[17] = 255 - ds[17]

    _edit_later(edit)
    assert load_dataset([str(sim), str(real)]).fingerprint != before


# ----------------------------------------------------------------------------- demo
def test_demo_fingerprint_names_parameters_and_not_the_storage(monkeypatch):
    from s2r.worlds.demo.dataset import make_demo

    a = make_demo(episodes=2, steps=4, height=64, width=80)
    assert make_demo(episodes=2, steps=4, height=64, width=80).fingerprint == a.fingerprint
    assert make_demo(episodes=2, steps=4, height=64, width=80, gap=0.4).fingerprint != a.fingerprint
    assert make_demo(episodes=2, steps=4, height=64, width=80, seed=1).fingerprint != a.fingerprint


def test_in_memory_frames_are_hashed_whole():
    fs = synthetic_frameset()
    edited = synthetic_frameset()
    edited.images.array[9, 3, 4, 0] ^= 1  # one bit of one frame the old sample skipped
    assert edited.fingerprint != fs.fingerprint


# ----------------------------------------------------------------------------- end to end
def test_embedding_after_a_frame_edit_is_recomputed_not_served_stale(tmp_path):
    """The issue's reproduction: embed, invert one frame, embed again with the cache: the
    result equals a cache-free run on the edited data (it used to return the old rows)."""
    from s2r.worlds.demo.dataset import make_demo

    root = write_folder(make_demo(episodes=3, steps=20, height=64, width=80), tmp_path / "d")
    cache = Cache(tmp_path / "cache")
    first = np.array(embed_frameset(load_dataset(str(root)), "pixels", cache=cache))
    frame = root / "sim" / "000047.png"
    from PIL import Image

    _edit_later(lambda: write_png(frame, 255 - np.asarray(Image.open(frame).convert("RGB"))))
    again = np.array(embed_frameset(load_dataset(str(root)), "pixels", cache=cache))
    fresh = np.array(embed_frameset(load_dataset(str(root)), "pixels", cache=None))
    np.testing.assert_array_equal(again, fresh)
    assert np.abs(again[47] - first[47]).max() > 0.1
    np.testing.assert_array_equal(np.delete(again, 47, 0), np.delete(first, 47, 0))


def test_storage_identity_follows_the_files(tmp_path):
    root = _folder(tmp_path)
    before = storage_identity(str(root))
    assert storage_identity(str(root)) == before
    frame = sorted((root / "sim").glob("*.png"))[30]
    _edit_later(lambda: frame.write_bytes(frame.read_bytes()))
    assert storage_identity(str(root)) != before
    assert storage_identity("demo:episodes=2") == storage_identity("demo:episodes=3")
