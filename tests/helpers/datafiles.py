"""Tiny dataset files for the loader tests, written by the tests themselves (no downloads).

Each builder returns what it wrote so tests can compare the loaded FrameSet with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from s2r.frameset import FrameSet


def frames(n: int, h: int = 12, w: int = 16, seed: int = 0) -> np.ndarray:
    """``uint8 (n, h, w, 3)`` random frames."""
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def synthetic_frameset(*, sim_eps=(3, 4), real_eps=(5, 2), h=12, w=16, action_dim=3,
                       state_dim=4, masks=True, seed=0) -> FrameSet:
    """An in-memory FrameSet: episodes of the given lengths, sim first, random labels."""
    rng = np.random.default_rng(seed)
    lengths = list(sim_eps) + list(real_eps)
    n = sum(lengths)
    episode = np.repeat(np.arange(len(lengths)), lengths)
    step = np.concatenate([np.arange(k) for k in lengths])
    domain = np.repeat(["sim"] * len(sim_eps) + ["real"] * len(real_eps), lengths)
    return FrameSet(
        images=frames(n, h, w, seed), actions=rng.normal(size=(n, action_dim)).astype(np.float32),
        domain=domain, episode=episode, step=step,
        masks=(rng.random((n, h, w)) > 0.5).astype(np.uint8) if masks else None,
        state=rng.normal(size=(n, state_dim)).astype(np.float32) if state_dim else None,
        action_names=[f"act{j}" for j in range(action_dim)], name="synthetic")


def write_zarr(path, *, images=None, actions=None, episode_ends=None, state=None,
               image_key="color_image2", action_key="action/pos", state_key="robot_state",
               chunk=4, attrs=None, skip=()) -> dict:
    """A FurnitureBench-like zarr v2 store (blosc lz4 images chunked along N).

    Defaults: 10 frames of 12x16 in episodes ending at [4, 10], 10-D actions, 16-D state.
    ``skip`` names keys not to write. Returns the arrays written.
    """
    import numcodecs
    import zarr

    n = 10 if images is None else len(images)
    images = frames(n) if images is None else images
    rng = np.random.default_rng(1)
    actions = rng.normal(size=(n, 10)).astype(np.float32) if actions is None else actions
    state = rng.normal(size=(n, 16)).astype(np.float32) if state is None else state
    episode_ends = np.array([4, n], dtype=np.uint32) if episode_ends is None else episode_ends
    g = zarr.open_group(str(path), mode="w", zarr_format=2)
    data = {image_key: images, action_key: actions, "episode_ends": episode_ends,
            state_key: state}
    for key, arr in data.items():
        if key in skip:
            continue
        arr = np.asarray(arr)
        chunks = (chunk,) + arr.shape[1:] if arr.ndim > 1 else (max(1, arr.shape[0]),)
        compressor = numcodecs.Blosc(cname="lz4", clevel=5) if key == image_key else None
        g.create_array(key, shape=arr.shape, dtype=arr.dtype, chunks=chunks,
                       compressors=compressor)[...] = arr
    g.attrs.update(attrs or {})
    return data


def write_hdf5(path, demos, *, camera="agentview_image", env_args=None, masks=None) -> None:
    """A robomimic-like HDF5 file; ``demos`` maps ``demo_N`` to dicts of ``actions``,
    ``images`` and any extra obs arrays (``robot0_eef_pos`` ...)."""
    import h5py

    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["total"] = sum(len(d["actions"]) for d in demos.values())
        data.attrs["env_args"] = json.dumps(env_args or {"env_name": "Lift"})
        for name, d in demos.items():
            g = data.create_group(name)
            g.attrs["num_samples"] = len(d["actions"])
            g.create_dataset("actions", data=d["actions"])
            obs = g.create_group("obs")
            obs.create_dataset(camera, data=d["images"], chunks=(1,) + d["images"].shape[1:])
            for key, value in d.items():
                if key not in ("actions", "images"):
                    obs.create_dataset(key, data=value)
        for key, names in (masks or {}).items():
            f.create_dataset(f"mask/{key}", data=np.array(names, dtype="S"))


def zip_zarr_store(folder) -> Path:
    """``folder`` (a zarr store) zipped next to it as ``<folder>.zip``, entries named as zarr's
    ``ZipStore`` names them (``.zgroup``, ``color_image2/0.0.0.0``, ...)."""
    import shutil

    return Path(shutil.make_archive(str(folder), "zip", root_dir=folder))


#: What a clone without ``git lfs pull`` leaves in place of a data file.
LFS_POINTER = (b"version https://git-lfs.github.com/spec/v1\noid sha256:"
               b"4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 8404224\n")


def write_robosuite_demo(path, lengths, *, seed=0) -> None:
    """A raw robosuite ``demo.hdf5`` (as robosuite's demonstration collection writes it):
    per demo only ``states`` and ``actions``, no ``obs`` group, demos numbered from 1."""
    import h5py

    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs.update({"date": "12-01-2026", "time": "10:00:00", "repository_version": "1.4.1",
                           "env": "Lift"})
        for k, t in enumerate(lengths, start=1):
            ep = data.create_group(f"demo_{k}")
            ep.attrs["model_file"] = "<mujoco model='base'></mujoco>"
            ep.create_dataset("states", data=rng.normal(size=(t, 32)))
            ep.create_dataset("actions", data=rng.uniform(-1, 1, (t, 7)))


def robomimic_demos(lengths, *, h=10, w=10, action_dim=7, seed=0, state=True) -> dict:
    """Random demos of the given lengths for :func:`write_hdf5`."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, t in enumerate(lengths):
        d = {"actions": rng.uniform(-1, 1, (t, action_dim)).astype(np.float32),
             "images": rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)}
        if state:
            d["robot0_eef_pos"] = rng.normal(size=(t, 3)).astype(np.float32)
            d["robot0_eef_quat"] = rng.normal(size=(t, 4)).astype(np.float32)
            d["robot0_gripper_qpos"] = rng.normal(size=(t, 2)).astype(np.float32)
        out[f"demo_{k}"] = d
    return out


def write_png(path: Path, image: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)


def all_pixels(fs) -> np.ndarray:
    """Every frame of a FrameSet."""
    return fs.read_images(np.arange(len(fs)))


def assert_same_frameset(a, b, *, masks=True) -> None:
    """Same pixels, labels, state, masks (unless ``masks=False``) and action names."""
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
