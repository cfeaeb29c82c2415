"""Robot data as upstream code writes it (issue 16): FurnitureBench's 1,000-frame zarr chunks,
zipped ``.zarr.zip`` stores, stores that are all named ``success.zarr``, raw robosuite demos,
empty robomimic masks, reward columns given as actions, and Git LFS pointers."""

from __future__ import annotations

import collections
import os
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest

from s2r.datasets import DataWarning, load_dataset, parse_spec, storage_identity
from s2r.lfs import is_lfs_pointer
from s2r.datasets._zarr import DirectChunks
from s2r.datasets.robomimic import load_robomimic
from s2r.errors import DataError
from tests.helpers.datafiles import (LFS_POINTER, frames, robomimic_demos, write_hdf5,
                                     write_robosuite_demo, write_zarr, zip_zarr_store)

UPSTREAM_CHUNK = 1000  # FurnitureBench's process_pickles.py writes images in 1,000-frame chunks


def _upstream_pair(root: Path, name: str = "success.zarr"):
    """FurnitureBench-like sim (2,500 frames) and real (1,100) stores, both named ``name`` as
    upstream names them, with 1,000-frame image chunks (small frames keep the test fast)."""
    sim_images, real_images = frames(2500, 6, 8, seed=1), frames(1100, 6, 8, seed=2)
    sim, real = root / "sim" / name, root / "real" / name
    write_zarr(sim, images=sim_images, episode_ends=np.array([1200, 2500], np.uint32),
               actions=np.zeros((2500, 10), np.float32), state=np.zeros((2500, 16), np.float32),
               chunk=UPSTREAM_CHUNK)
    write_zarr(real, images=real_images, episode_ends=np.array([1100], np.uint32),
               actions=np.zeros((1100, 10), np.float32), state=np.zeros((1100, 16), np.float32),
               chunk=UPSTREAM_CHUNK)
    return sim, real, np.concatenate([sim_images, real_images])


def _count_image_chunk_reads(monkeypatch, direct: bool) -> collections.Counter:
    """Count every image chunk decoded, by (store, chunk key): the chunks
    :class:`DirectChunks` decodes from their files (``direct``), else the ones zarr fetches
    (and so decodes); the other path must not read any."""
    import zarr.storage

    counts, other = collections.Counter(), collections.Counter()
    original_get, original_read = zarr.storage.LocalStore.get, DirectChunks.read

    async def spy_get(self, key, *args, **kwargs):
        if key.startswith("color_image2/") and not key.rsplit("/", 1)[-1].startswith("."):
            (other if direct else counts)[(str(self.root), key)] += 1
        return await original_get(self, key, *args, **kwargs)

    def spy_read(self, chunk_index, out, scratch=None):
        (counts if direct else other)[(str(self.array.store.root),
                                       f"color_image2/{chunk_index}.0.0.0")] += 1
        return original_read(self, chunk_index, out, scratch)

    monkeypatch.setattr(zarr.storage.LocalStore, "get", spy_get)
    monkeypatch.setattr(DirectChunks, "read", spy_read)
    counts.other = other
    return counts


# ----------------------------------------------------------------------------- chunks
@pytest.mark.parametrize("direct", [True, False], ids=["direct", "through-zarr"])
def test_upstream_chunks_are_decoded_once_per_pass_holding_one_chunk(tmp_path, monkeypatch,
                                                                     direct):
    """A chunk larger than the decoded-chunk budget (as 1,000 frames at 240x320 are: 230 MB) is
    decoded once per pass in storage order, and only one chunk is held between batches; both
    when the chunk files are decoded directly (plain v2 layout) and when zarr reads them."""
    import s2r.datasets._sources as sources

    sim, real, expected = _upstream_pair(tmp_path)
    chunk_bytes = UPSTREAM_CHUNK * 6 * 8 * 3
    monkeypatch.setattr(sources, "DEFAULT_CACHE_BYTES", chunk_bytes // 3)
    if not direct:
        monkeypatch.setattr(DirectChunks, "for_array", classmethod(lambda cls, array: None))
    fs = load_dataset([sim, real])
    assert all((part.direct is not None) == direct for part in fs.images.parts)
    counts = _count_image_chunk_reads(monkeypatch, direct)
    for _ in range(2):
        counts.clear()
        got, held = [], []
        for _, batch in fs.iter_batches(64):  # batches straddle chunk borders (1000 % 64 != 0)
            got.append(batch)
            held.append(max(part.cache.nbytes for part in fs.images.parts))
        np.testing.assert_array_equal(np.concatenate(got), expected)
        assert sorted(counts.values()) == [1] * 5  # sim: 3 chunks, real: 2, each decoded once
        assert max(held) <= chunk_bytes
    idx = np.array([3599, 5, 2400, 7, 1000])  # random order: each chunk needed read once
    counts.clear()
    np.testing.assert_array_equal(fs.read_images(idx), expected[idx])
    assert counts == {(str(sim), "color_image2/0.0.0.0"): 1, (str(sim), "color_image2/1.0.0.0"): 1,
                      (str(sim), "color_image2/2.0.0.0"): 1, (str(real), "color_image2/1.0.0.0"): 1}
    assert len(fs.images.parts[0].cache) == 1  # both stores share one budget: one chunk held
    assert not counts.other
@pytest.mark.parametrize("mapped", [True, False], ids=["mapped", "read"])
@pytest.mark.parametrize("layout", ["blosc", "none", "zstd-slash", "v3"])
def test_every_zarr_layout_reads_the_same_frames(tmp_path, monkeypatch, layout, mapped):
    """Plain v2 chunks are decoded from their files (mapped or read; no compressor, another
    codec, "/" chunk keys too); anything else (zarr v3) goes through zarr: the same frames
    either way, including the last, partial chunk."""
    import numcodecs
    import zarr

    import s2r.datasets._zarr
    from s2r.datasets._sources import ChunkedImages

    monkeypatch.setattr(s2r.datasets._zarr, "MAP_FILES", mapped)

    data = frames(23, 6, 8)
    compressors = {"blosc": numcodecs.Blosc(cname="lz4"), "none": None,
                   "zstd-slash": numcodecs.Zstd(), "v3": "auto"}[layout]
    slash = {"chunk_key_encoding": {"name": "v2", "separator": "/"}}
    extra = slash if layout == "zstd-slash" else {}
    g = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=3 if layout == "v3" else 2)
    arr = g.create_array("img", shape=data.shape, dtype="uint8", chunks=(5, 6, 8, 3),
                         compressors=compressors, **extra)
    arr[...] = data
    src = ChunkedImages(zarr.open_group(str(tmp_path / "s.zarr"), mode="r")["img"], cache_bytes=0)
    assert (src.direct is None) == (layout == "v3")
    np.testing.assert_array_equal(src.read(np.arange(23)), data)
    np.testing.assert_array_equal(src.read([22, 0, 21, 7]), data[[22, 0, 21, 7]])


def test_chunked_hdf5_is_read_whole_chunks_once(tmp_path, monkeypatch):
    """robomimic files written with compression are chunked: each chunk is read once."""
    from s2r.datasets._sources import H5Array

    images = frames(90, 6, 8)
    for name in ("s.hdf5", "r.hdf5"):
        with h5py.File(tmp_path / name, "w") as f:
            g = f.create_group("data/demo_0")
            g.create_dataset("actions", data=np.random.default_rng(0).normal(size=(90, 7)))
            g.create_dataset("obs/agentview_image", data=images, chunks=(40, 6, 8, 3),
                             compression="gzip")
    fs = load_dataset([tmp_path / "s.hdf5", tmp_path / "r.hdf5"])
    reads = []
    original = H5Array.__getitem__

    def spy(self, sel):
        reads.append((self.file.path, sel.start, sel.stop))
        return original(self, sel)

    monkeypatch.setattr(H5Array, "__getitem__", spy)
    got = np.concatenate([batch for _, batch in fs.iter_batches(16)])
    np.testing.assert_array_equal(got, np.concatenate([images, images]))
    spans = sorted((start, stop) for path, start, stop in reads if path.endswith("s.hdf5"))
    assert spans == [(0, 40), (40, 80), (80, 90)]


# ----------------------------------------------------------------------------- .zarr.zip
def test_zipped_stores_load_like_folders(tmp_path):
    sim, real, expected = _upstream_pair(tmp_path)
    sim_zip, real_zip = zip_zarr_store(sim), zip_zarr_store(real)
    assert parse_spec([sim_zip, real_zip]) == {"kind": "furniturebench", "sim": str(sim_zip),
                                               "real": str(real_zip)}
    assert parse_spec([sim, real_zip])["kind"] == "furniturebench"  # a folder and a zip mix
    fs = load_dataset([sim_zip, real_zip])
    np.testing.assert_array_equal(fs.read_images(np.arange(len(fs))), expected)
    assert fs.name == "success" and fs.source["sim"].endswith("success.zarr.zip")
    import pickle

    copy = pickle.loads(pickle.dumps(fs))
    np.testing.assert_array_equal(copy.read_images([1, 3000]), expected[[1, 3000]])
    # identity: the zip file's size and times, no decode; a rewritten zip is a new dataset
    ident, fingerprint = storage_identity([sim_zip, real_zip]), fs.fingerprint
    assert load_dataset([sim_zip, real_zip]).fingerprint == fingerprint
    st = os.stat(real_zip)
    os.utime(real_zip, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert storage_identity([sim_zip, real_zip]) != ident
    assert load_dataset([sim_zip, real_zip]).fingerprint != fingerprint
    with pytest.raises(DataError, match=r"give two, SIM REAL \(e.g. sim.zarr.zip real.zarr.zip\)"):
        parse_spec(str(sim_zip))


def test_zipped_store_missing_chunk_and_not_a_zip(tmp_path):
    import zipfile

    sim, real, _ = _upstream_pair(tmp_path)
    full = zip_zarr_store(sim)
    cut = tmp_path / "cut.zarr.zip"
    with zipfile.ZipFile(full) as src, zipfile.ZipFile(cut, "w") as dst:
        for item in src.infolist():
            if item.filename != "color_image2/1.0.0.0":
                dst.writestr(item, src.read(item))
    with pytest.raises(DataError,
                       match=r"sim \(.*cut.zarr.zip\[color_image2\]\): 1 of its 3 chunk"):
        load_dataset([cut, real])
    (tmp_path / "junk.zarr.zip").write_bytes(b"PK but not really a zip file")
    with pytest.raises(DataError, match=r"real \(.*junk.zarr.zip\): not a readable zarr group"):
        load_dataset([sim, tmp_path / "junk.zarr.zip"])


def test_damaged_array_metadata_and_an_unzipped_zip_folder(tmp_path):
    sim, real = tmp_path / "sim.zarr", tmp_path / "real.zarr.zip"
    write_zarr(sim)
    write_zarr(real)  # a folder that only looks like a zip (unzipped in place): read as one
    assert len(load_dataset([sim, real])) == 20
    (real / "color_image2" / ".zarray").write_text("{not json")
    with pytest.raises(DataError, match=r"real \(.*real.zarr.zip\): cannot read the metadata of "
                                        r"its arrays \(JSONDecodeError"):
        load_dataset([sim, real])


# ----------------------------------------------------------------------------- names
def test_errors_name_the_domain_and_both_files(tmp_path):
    """Upstream stores are all called success.zarr: messages say which domain's file."""
    sim, real = tmp_path / "sim" / "success.zarr", tmp_path / "real" / "success.zarr"
    write_zarr(sim)
    write_zarr(real, images=frames(6, 10, 10), episode_ends=np.array([6], np.uint32))
    with pytest.raises(DataError) as err:
        load_dataset([sim, real])
    msg = str(err.value)
    assert f"sim ({sim}): (12, 16, 3)" in msg and f"real ({real}): (10, 10, 3)" in msg
    actions = np.zeros((6, 10), np.float32)
    actions[2, 1] = np.inf
    write_zarr(real, images=frames(6), actions=actions, episode_ends=np.array([6], np.uint32))
    with pytest.raises(DataError, match=rf"^real \({real}\[action/pos\]\): actions contain NaN"):
        load_dataset([sim, real])
    write_zarr(real, images=frames(6), actions=np.zeros((6, 4), np.float32),
               episode_ends=np.array([6], np.uint32))
    with pytest.raises(DataError, match=rf"10-D in sim \({sim}\) but 4-D in real \({real}\)"):
        load_dataset([sim, real])


# ----------------------------------------------------------------------------- robomimic
def test_raw_robosuite_demo_says_how_to_render_frames(tmp_path):
    write_robosuite_demo(tmp_path / "demo.hdf5", [5, 4])
    write_hdf5(tmp_path / "real.hdf5", robomimic_demos([3]))
    with pytest.raises(DataError) as err:
        load_dataset([tmp_path / "demo.hdf5", tmp_path / "real.hdf5"])
    msg = str(err.value)
    assert msg.startswith(f"sim ({tmp_path / 'demo.hdf5'}[data/demo_1]): no image observations")
    assert "holds actions, states" in msg and "dataset_states_to_obs.py" in msg
    assert "--camera_names" in msg and "convert_robosuite.py" in msg
    demos = robomimic_demos([3], state=True)  # low-dim only: obs without any camera
    del demos["demo_0"]["images"]
    with h5py.File(tmp_path / "lowdim.hdf5", "w") as f:
        g = f.create_group("data/demo_0")
        g.create_dataset("actions", data=demos["demo_0"]["actions"])
        g.create_dataset("obs/robot0_eef_pos", data=demos["demo_0"]["robot0_eef_pos"])
    with pytest.raises(DataError, match=r"real \(.*lowdim.hdf5\[data/demo_0\]/obs\): no image "
                                        r"observations \(the demo holds robot0_eef_pos\)"):
        load_dataset([tmp_path / "real.hdf5", tmp_path / "lowdim.hdf5"])


def test_empty_filter_mask_is_named(tmp_path):
    write_hdf5(tmp_path / "s.hdf5", robomimic_demos([3, 4]),
               masks={"valid": [], "train": ["demo_0"], "old": ["demo_7"]})
    write_hdf5(tmp_path / "r.hdf5", robomimic_demos([3]), masks={"valid": ["demo_0"]})
    with pytest.raises(DataError, match=r"sim \(.*s.hdf5\): the filter mask mask/valid is empty "
                                        r"\(it lists no demos\); choose another filter key "
                                        r"\(old, train list demos\)"):
        load_robomimic(tmp_path / "s.hdf5", tmp_path / "r.hdf5", filter_key="valid")
    with pytest.raises(DataError, match="mask/old lists 1 demos .* but none of them is in data/"):
        load_robomimic(tmp_path / "s.hdf5", tmp_path / "r.hdf5", filter_key="old")


def _with_labels(path: Path, lengths, **labels) -> None:
    """A robomimic file whose demos also hold ``labels`` (name -> function of the length)."""
    write_hdf5(path, robomimic_demos(lengths))
    with h5py.File(path, "a") as f:
        for k, t in enumerate(lengths):
            for name, make in labels.items():
                f[f"data/demo_{k}"].create_dataset(name, data=make(t))


@pytest.mark.parametrize("key, reason", [("rewards", "only 0 and 1"), ("dones", "only 0 and 1"),
                                         ("timestep", "never decreasing")])
def test_reward_like_action_key_warns(tmp_path, key, reason):
    labels = {"rewards": lambda t: np.r_[np.zeros(t - 1), 1.0],
              "dones": lambda t: np.r_[np.zeros(t - 1, bool), True],
              "timestep": lambda t: np.arange(t) * 0.05}
    for name in ("s.hdf5", "r.hdf5"):
        _with_labels(tmp_path / name, [4, 5], **labels)
    spec = [tmp_path / "s.hdf5", tmp_path / "r.hdf5"]
    with pytest.warns(DataWarning, match=rf"action key '{key}' is 1-D and looks like a reward or "
                                         rf"done signal.*sim \(.*s.hdf5\): {reason}"):
        fs = load_dataset(spec, action_key=key)
    assert fs.action_dim == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        load_dataset(spec)  # 7-D actions: no warning


def test_cli_prints_the_action_key_warning_once(tmp_path, capsys):
    from s2r.cli import main

    for name in ("s.hdf5", "r.hdf5"):
        _with_labels(tmp_path / name, [4, 5], rewards=lambda t: np.r_[np.zeros(t - 1), 1.0])
    code = main(["info", str(tmp_path / "s.hdf5"), str(tmp_path / "r.hdf5"), "--action-key",
                 "rewards"])
    out, err = capsys.readouterr()
    assert code == 0 and '"action_dim": 1' in out
    lines = [line for line in err.splitlines() if "warning" in line.lower()]
    assert len(lines) == 1 and lines[0].startswith("warning: action key 'rewards' is 1-D")


# ----------------------------------------------------------------------------- Git LFS
def test_lfs_pointers_are_recognised_by_their_first_line(tmp_path):
    (tmp_path / "p.hdf5").write_bytes(LFS_POINTER)
    (tmp_path / "big").write_bytes(LFS_POINTER + b"x" * 4096)  # too big to be a pointer
    (tmp_path / "other").write_bytes(b"version 2\n")
    assert is_lfs_pointer(tmp_path / "p.hdf5")
    assert not any(is_lfs_pointer(tmp_path / n) for n in ("big", "other", "missing"))
    write_hdf5(tmp_path / "r.hdf5", robomimic_demos([3]))
    with pytest.raises(DataError, match=r"^sim \(.*p.hdf5\): the file is a Git LFS pointer, not "
                                        r"the data: run `git lfs pull`"):
        load_dataset([tmp_path / "p.hdf5", tmp_path / "r.hdf5"])


def test_lfs_pointers_in_zarr_stores(tmp_path):
    sim, real = tmp_path / "sim.zarr", tmp_path / "real.zarr"
    write_zarr(sim)
    write_zarr(real)
    (tmp_path / "ptr.zarr.zip").write_bytes(LFS_POINTER)
    with pytest.raises(DataError, match=r"real \(.*ptr.zarr.zip\): the file is a Git LFS pointer"):
        load_dataset([sim, tmp_path / "ptr.zarr.zip"])
    (real / "color_image2" / ".zarray").write_bytes(LFS_POINTER)  # an array's metadata
    with pytest.raises(DataError, match=r"real \(.*real.zarr\): .*color_image2/.zarray is a Git"):
        load_dataset([sim, real])
    (real / ".zgroup").write_bytes(LFS_POINTER)  # a whole store tracked by LFS
    with pytest.raises(DataError, match=r"real \(.*real.zarr\): .*real.zarr/.zgroup is a Git LFS"):
        load_dataset([sim, real])
    (sim / "color_image2" / "1.0.0.0").write_bytes(LFS_POINTER)  # only the chunks tracked
    fs = load_dataset([sim, sim])
    fs.read_images([0, 3])
    with pytest.raises(DataError, match=r"sim \(.*sim.zarr\[color_image2\]\): .*color_image2/"
                                        r"1.0.0.0 is a Git LFS pointer"):
        fs.read_images([5])
    zipped = zip_zarr_store(sim)
    with pytest.raises(DataError, match=r"sim.zarr.zip:color_image2/1.0.0.0 is a Git LFS pointer"):
        load_dataset([zipped, zipped]).read_images([5])


def test_lfs_pointers_in_a_folder_dataset(tmp_path):
    from s2r.datasets.folder import write_folder
    from tests.helpers.datafiles import synthetic_frameset

    write_folder(synthetic_frameset(masks=False), tmp_path / "ds")
    (tmp_path / "ds" / "sim" / "000003.png").write_bytes(LFS_POINTER)
    fs = load_dataset(str(tmp_path / "ds"))
    with pytest.raises(DataError, match=r"000003.png is a Git LFS pointer"):
        fs.read_images([3])
    (tmp_path / "ds" / "actions.csv").write_bytes(LFS_POINTER)
    with pytest.raises(DataError, match=r"actions.csv is a Git LFS pointer"):
        load_dataset(str(tmp_path / "ds"))
