"""The hostile-input catalogue: every bad input a user can give gets one clear line, exit 2,
and nothing written.

Each ``case_*`` function builds its own small broken files under ``root`` and returns a
:class:`Case`: the command line to run, the words the one-line error must contain, and
(for dataset faults) the library call that must raise the same error. Every case runs through
``s2r.cli.main`` (what ``python -m s2r`` runs) in process; two run in real ``python -m s2r``
processes. Add a case here for every fault found, so none can come back.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from s2r.datasets import load_dataset
from s2r.datasets.folder import write_folder
from s2r.errors import S2RError
from tests.helpers import REPO
from tests.helpers.hostile import Case, assert_clean_failure, run_case
from tests.helpers.datafiles import (LFS_POINTER, frames, robomimic_demos, synthetic_frameset,
                                     write_hdf5, write_png, write_robosuite_demo, write_zarr,
                                     zip_zarr_store)

TINY_DEMO = "demo:episodes=2,steps=4,height=64,width=80"


def dataset_case(root: Path, spec, kwargs: dict, words: list, read=None) -> Case:
    """A dataset fault: ``load_dataset`` raises it, or (``read``: frame indices) reading those
    frames does. The CLI runs ``info`` for load-time faults and ``embed`` (which reads every
    frame) for read-time ones."""
    spec = [spec] if isinstance(spec, str) else list(spec)
    options = []
    for key, value in kwargs.items():
        options += [f"--{key.replace('_', '-')}", value]

    def library():
        fs = load_dataset(spec, **kwargs)
        assert read is not None, "loading should have failed"
        fs.read_images(read)

    if read is None:
        return Case(["info", *spec, *options], words, library)
    out = root / "out.npz"
    return Case(["embed", *spec, *options, "--encoder", "pixels", "--no-cache", "--out",
                 str(out)], words, library, [out])


def _zarr_pair(root: Path, **sim_kwargs) -> list:
    write_zarr(root / "sim.zarr", **sim_kwargs)
    write_zarr(root / "real.zarr", images=frames(6, seed=2), episode_ends=np.array([6], np.uint32))
    return [str(root / "sim.zarr"), str(root / "real.zarr")]


def _folder(root: Path, **kwargs) -> Path:
    out = root / "ds"
    write_folder(synthetic_frameset(masks=False, **kwargs), out)
    return out


def _edit_table(folder: Path, edit) -> str:
    df = pd.read_csv(folder / "actions.csv")
    edit(df).to_csv(folder / "actions.csv", index=False)
    return str(folder)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def case_missing_folder(root):
    return [str(root / "no_such_folder")], {}, ["no_such_folder", "does not exist"]


def case_missing_zarr(root):
    spec = _zarr_pair(root)
    return [str(root / "gone.zarr"), spec[1]], {}, ["gone.zarr", "does not exist"]


def case_single_zarr(root):
    return [_zarr_pair(root)[0]], {}, ["sim.zarr", "give two, SIM REAL"]


def case_not_a_zarr_group(root):
    (root / "empty.zarr").mkdir()
    spec = _zarr_pair(root)
    return [str(root / "empty.zarr"), spec[1]], {}, ["empty.zarr", "not a readable zarr group"]


def case_image_key_missing(root):
    return _zarr_pair(root), {"image_key": "color_image3"}, [
        "sim.zarr", "no image key 'color_image3'", "did you mean 'color_image2'",
        "available: action/pos, color_image2, episode_ends, robot_state"]


def case_action_key_missing(root):
    return _zarr_pair(root), {"action_key": "actions"}, [
        "sim.zarr", "no action key 'actions'", "action/pos"]


def case_state_key_missing(root):
    return (_zarr_pair(root), {"state_key": "parts_poses"},
            ["sim.zarr", "no state key 'parts_poses'"])


def case_camera_missing(root):
    for name in ("s.hdf5", "r.hdf5"):
        write_hdf5(root / name, robomimic_demos([3]))
    return [str(root / "s.hdf5"), str(root / "r.hdf5")], {"image_key": "frontview"}, [
        "s.hdf5[data/demo_0]/obs", "no camera 'frontview'", "agentview_image"]


def case_not_hdf5(root):
    (root / "s.hdf5").write_bytes(b"not hdf5 at all")
    write_hdf5(root / "r.hdf5", robomimic_demos([3]))
    return [str(root / "s.hdf5"), str(root / "r.hdf5")], {}, ["s.hdf5", "not a readable HDF5 file"]


def case_images_float(root):
    return _zarr_pair(root, images=frames(10).astype(np.float32)), {}, [
        "sim.zarr[color_image2]", "uint8 of shape (N, H, W, 3)", "got float32"]


def case_images_gray(root):
    return _zarr_pair(root, images=frames(10)[..., 0]), {}, [
        "sim.zarr[color_image2]", "(N, H, W, 3)", "(10, 12, 16)"]


def case_hdf5_images_not_rgb(root):
    demos = robomimic_demos([3, 2])
    demos["demo_1"]["images"] = demos["demo_1"]["images"][..., :2].copy()
    write_hdf5(root / "s.hdf5", demos)
    write_hdf5(root / "r.hdf5", robomimic_demos([3]))
    return [str(root / "s.hdf5"), str(root / "r.hdf5")], {}, [
        "s.hdf5[data/demo_1]/obs/agentview_image", "(N, H, W, 3)", "(2, 10, 10, 2)"]


def case_actions_nan(root):
    actions = np.zeros((10, 10), np.float32)
    actions[6, 2] = np.nan
    return _zarr_pair(root, actions=actions), {}, [
        "sim.zarr[action/pos]", "NaN or inf", "frame 6", "episode 1", "column 2"]


def case_actions_inf_in_table(root):
    def edit(df):
        df.loc[2, "act1"] = np.inf
        return df
    return [_edit_table(_folder(root), edit)], {}, [
        "actions.csv", "NaN or inf", "frame 2 (sim/000002.png)", "episode 0"]


def case_action_column_text(root):
    def edit(df):
        df["act1"] = df["act1"].astype(object)
        df.loc[4, "act1"] = "fast"
        return df
    return [_edit_table(_folder(root), edit)], {}, [
        "actions.csv", "action column 'act1' must be numeric", "row 4", "'fast'"]


def case_lengths_disagree(root):
    return _zarr_pair(root, actions=np.zeros((9, 10), np.float32)), {}, [
        "sim.zarr", "lengths disagree", "color_image2 has 10", "action/pos has 9"]


def case_episode_ends_not_increasing(root):
    return _zarr_pair(root, episode_ends=np.array([6, 4, 10], np.uint32)), {}, [
        "sim.zarr[episode_ends]", "strictly increasing", "entry 1 is 4 after 6"]


def case_episode_ends_short(root):
    return _zarr_pair(root, episode_ends=np.array([4, 8], np.uint32)), {}, [
        "sim.zarr[episode_ends]", "must end at the number of frames 10", "last entry is 8"]


def case_empty_domain_zarr(root):
    write_zarr(root / "sim.zarr")
    write_zarr(root / "real.zarr", images=frames(0), actions=np.zeros((0, 10), np.float32),
               state=np.zeros((0, 16), np.float32), episode_ends=np.zeros(0, np.uint32))
    return [str(root / "sim.zarr"), str(root / "real.zarr")], {}, [
        "real.zarr", "the real domain has no frames"]


def case_empty_domain_folder(root):
    return [_edit_table(_folder(root), lambda df: df[df["domain"] == "sim"])], {}, [
        "actions.csv", "no rows with domain=real", "the real domain has no frames"]


def case_table_missing_column(root):
    return [_edit_table(_folder(root), lambda df: df.drop(columns="episode"))], {}, [
        "actions.csv", "no column 'episode'", "available: act0"]


def case_no_table(root):
    folder = _folder(root)
    (folder / "actions.csv").unlink()
    return [str(folder)], {}, ["ds", "no actions table (actions.csv or actions.parquet)"]


def case_listed_file_missing(root):
    folder = _folder(root)
    (folder / "real" / "000009.png").unlink()
    return [str(folder)], {}, ["1 of the 14 listed frame files do not exist", "real/000009.png"]


def case_truncated_first_frame(root):
    folder = _folder(root)
    _truncate(folder / "real" / "000007.png")  # first real frame: decoded at load time
    return [str(folder)], {}, ["real/000007.png", "unreadable or truncated image file"]


def case_garbage_later_frame(root):
    folder = _folder(root)
    (folder / "sim" / "000003.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    # Loading succeeds (only first frames are decoded); the read names the file. `info`
    # reads frames for the fingerprint, so the CLI reports it.
    return [str(folder)], {}, ["sim/000003.png", "unreadable or truncated image file"], [3]


def case_frame_size_differs(root):
    folder = _folder(root)
    write_png(folder / "sim" / "000005.png", frames(1, 7, 9)[0])
    return [str(folder)], {}, ["sim/000005.png", "is 7x9, expected 12x16"], [5]


# ----------------------------------------------------------------------------- issue 11
def case_table_file_outside_folder(root):
    folder = _folder(root)
    other = root / "other"
    other.mkdir()
    write_png(other / "000005.png", frames(1)[0])

    def edit(df):
        df.loc[5, "file"] = "../../other/000005.png"
        return df
    return [_edit_table(folder, edit)], {}, [
        "actions.csv", "row 5 column 'file' is '../../other/000005.png'", "stay inside it"]


def case_table_file_absolute(root):
    folder = _folder(root)
    write_png(root / "elsewhere.png", frames(1)[0])

    def edit(df):
        df.loc[2, "file"] = str(root / "elsewhere.png")
        return df
    return [_edit_table(folder, edit)], {}, [
        "actions.csv", "row 2 column 'file'", "no absolute path"]


def case_table_duplicate_step(root):
    def edit(df):
        df.loc[1, "step"] = df.loc[0, "step"]  # rows 0 and 1: sim episode 0, both step 0
        return df
    return [_edit_table(_folder(root), edit)], {}, [
        "actions.csv", "rows 0 and 1", "both step 0 of sim episode 0",
        "each (domain, episode, step) must name one frame"]


def _chunk_file(store: Path, key: str, first_frame: int, chunk: int = 4) -> Path:
    return store / key / f"{first_frame // chunk}.0.0.0"


def case_zarr_missing_chunk(root):
    spec = _zarr_pair(root)
    _chunk_file(Path(spec[0]), "color_image2", 4).unlink()
    return spec, {}, ["sim (", "sim.zarr[color_image2])", "1 of its 3 chunk files are missing",
                      "frames 4..7", "black frames"]


def case_zarr_corrupt_chunk(root):
    spec = _zarr_pair(root)
    path = _chunk_file(Path(spec[0]), "color_image2", 4)
    path.write_bytes(b"overwritten by something else " * 3)  # not a blosc stream any more
    return spec, {}, ["sim (", "sim.zarr[color_image2])", "cannot decode frames 4..7",
                      "chunk file of the store is damaged"], [5]


# ----------------------------------------------------------------------------- LeRobot
LEROBOT = REPO / "tests" / "data" / "lerobot"
LEROBOT_VIDEO = "videos/observation.images.cam/chunk-000/file-000.mp4"


def _lerobot_pair(root: Path) -> list:
    """Writable copies of the LeRobot fixtures (v3.0 AV1 sim, image-mode real)."""
    import shutil

    out = []
    for name, src in (("sim", "one_leg_sim"), ("real", "one_leg_real")):
        shutil.copytree(LEROBOT / src, root / name)
        for p in (root / name).rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        out.append(str(root / name))
    return out


def case_lerobot_camera_missing(root):
    return _lerobot_pair(root), {"image_key": "observation.images.wrist"}, [
        "info.json", "no camera 'observation.images.wrist'", "observation.images.cam"]


def case_lerobot_missing_parquet(root):
    spec = _lerobot_pair(root)
    (Path(spec[0]) / "data/chunk-000/file-000.parquet").unlink()
    return spec, {}, ["sim/data/chunk-000/file-000.parquet", "missing parquet file"]


def case_lerobot_missing_video(root):
    spec = _lerobot_pair(root)
    (Path(spec[0]) / LEROBOT_VIDEO).unlink()
    return spec, {}, ["file-000.mp4", "video file does not exist"]


def case_lerobot_truncated_video(root):
    spec = _lerobot_pair(root)
    _truncate(Path(spec[0]) / LEROBOT_VIDEO)
    return spec, {}, ["file-000.mp4", "the video is corrupt or truncated"], [59]


def case_lerobot_corrupt_video(root):
    spec = _lerobot_pair(root)
    path = Path(spec[0]) / LEROBOT_VIDEO
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    data[third:third + 2000] = np.random.default_rng(0).integers(0, 256, 2000, np.uint8).tobytes()
    path.write_bytes(bytes(data))
    return spec, {}, ["file-000.mp4", "the video is corrupt or truncated"], list(range(60))


def case_lerobot_not_a_video(root):
    spec = _lerobot_pair(root)
    (Path(spec[0]) / LEROBOT_VIDEO).write_bytes(b"not an mp4 at all " * 10)
    return spec, {}, ["file-000.mp4", "not a readable video"]


def case_lerobot_lengths_disagree(root):
    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = _lerobot_pair(root)
    path = Path(spec[1]) / "meta/episodes/chunk-000/file-000.parquet"
    table = pq.read_table(path)
    table = table.set_column(table.column_names.index("length"), "length",
                             pa.array([20, 21, 20], pa.int64()))
    pq.write_table(table, path)
    return spec, {}, ["real/data/chunk-000/file-000.parquet", "episode 1 has 20 rows",
                      "says length 21", "mismatched lengths"]


def case_lerobot_garbage_image_bytes(root):
    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = _lerobot_pair(root)
    path = Path(spec[1]) / "data/chunk-000/file-000.parquet"
    table = pq.read_table(path)
    k = table.column_names.index("observation.images.cam")
    rows = table.column(k).to_pylist()
    rows[5] = {"bytes": b"garbage, not a PNG", "path": rows[5]["path"]}
    pq.write_table(table.set_column(k, "observation.images.cam",
                                    pa.array(rows, table.schema.field(k).type)), path)
    return spec, {}, ["real/data/chunk-000/file-000.parquet[observation.images.cam] row 5",
                      "unreadable or truncated image bytes"], [65]

def case_lerobot_with_a_plain_folder(root):
    spec = _lerobot_pair(root)
    (root / "plain").mkdir()
    return [spec[0], str(root / "plain")], {}, ["plain", "has no meta/info.json",
                                                "give two LeRobot dataset folders"]

# ----------------------------------------------------------------------------- issue 33 item 9
# A sim and a real dataset whose pairing states differ in width: one line naming both widths,
# both places and --state-key, never a silent drop of the state.
def case_state_width_differs_furniturebench(root):
    write_zarr(root / "sim.zarr")
    write_zarr(root / "real.zarr", images=frames(6, seed=2), episode_ends=np.array([6], np.uint32),
               state=np.zeros((6, 14), np.float32))
    return [str(root / "sim.zarr"), str(root / "real.zarr")], {}, [
        "'robot_state' is 16-D in sim (", "sim.zarr) but 14-D in real (", "--state-key"]


def _robomimic_other_gripper(root: Path) -> list:
    """A real file whose gripper has 6 joint positions where the sim's has 2."""
    write_hdf5(root / "sim.hdf5", robomimic_demos([3, 4]))
    real = robomimic_demos([4], seed=1)
    real["demo_0"]["robot0_gripper_qpos"] = np.zeros((4, 6), np.float32)
    write_hdf5(root / "real.hdf5", real)
    return [str(root / "sim.hdf5"), str(root / "real.hdf5")]


def case_state_width_differs_robomimic_default_keys(root):
    return _robomimic_other_gripper(root), {}, [
        "'robot0_eef_pos,robot0_eef_quat,robot0_gripper_qpos' is 9-D in sim (",
        "but 13-D in real (", "real.hdf5", "--state-key"]


def case_state_width_differs_robomimic_state_key(root):
    return _robomimic_other_gripper(root), {"state_key": "robot0_gripper_qpos"}, [
        "'robot0_gripper_qpos' is 2-D in sim (", "but 6-D in real (", "--state-key"]


def case_state_width_differs_lerobot(root):
    """The real fixture's observation.state cut to its first 10 columns (data and info.json)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = _lerobot_pair(root)
    real = Path(spec[1])
    for path in (real / "data").rglob("*.parquet"):
        table = pq.read_table(path)
        k = table.column_names.index("observation.state")
        rows = np.asarray(table.column(k).to_pylist(), np.float32)[:, :10]
        pq.write_table(table.set_column(k, "observation.state", pa.FixedSizeListArray.from_arrays(
            pa.array(rows.reshape(-1), pa.float32()), 10)), path)
    info = json.loads((real / "meta" / "info.json").read_text())
    feature = info["features"]["observation.state"]
    feature["shape"], feature["names"] = [10], feature["names"][:10]
    (real / "meta" / "info.json").write_text(json.dumps(info))
    return spec, {}, ["'observation.state' is 22-D in sim (", "but 10-D in real (",
                      "real)", "--state-key"]


# ----------------------------------------------------------------------------- issue 16
def case_frame_size_differs_between_success_stores(root):
    """Upstream names every store success.zarr: the message names the domains and both paths."""
    sim, real = root / "sim" / "success.zarr", root / "real" / "success.zarr"
    write_zarr(sim)
    write_zarr(real, images=frames(6, 10, 10), episode_ends=np.array([6], np.uint32))
    return [str(sim), str(real)], {}, [f"sim ({sim}): (12, 16, 3)", f"real ({real}): (10, 10, 3)",
                                       "differ in size between domains"]


def case_raw_robosuite_demo(root):
    write_robosuite_demo(root / "demo.hdf5", [4, 3])
    write_hdf5(root / "r.hdf5", robomimic_demos([3]))
    return [str(root / "demo.hdf5"), str(root / "r.hdf5")], {}, [
        "sim (", "demo.hdf5[data/demo_1])", "no image observations",
        "dataset_states_to_obs.py --dataset FILE", "--camera_names"]


def case_zarr_zip_missing_store(root):
    spec = _zarr_pair(root)
    return [spec[0], str(root / "gone.zarr.zip")], {}, ["gone.zarr.zip", "does not exist"]


def case_zarr_zip_not_a_zip(root):
    spec = _zarr_pair(root)
    (root / "bad.zarr.zip").write_bytes(b"not a zip archive at all")
    return [spec[0], str(root / "bad.zarr.zip")], {}, [
        "real (", "bad.zarr.zip)", "not a readable zarr group"]


def case_zarr_zip_corrupt_chunk(root):
    import zipfile

    spec = _zarr_pair(root)
    _chunk_file(Path(spec[0]), "color_image2", 4).write_bytes(b"not a blosc stream " * 3)
    zipped = zip_zarr_store(Path(spec[0]))
    assert "color_image2/1.0.0.0" in zipfile.ZipFile(zipped).namelist()
    return [str(zipped), spec[1]], {}, ["sim (", "sim.zarr.zip[color_image2])",
                                        "cannot decode frames 4..7"], [5]


def case_lfs_pointer_hdf5(root):
    (root / "s.hdf5").write_bytes(LFS_POINTER)
    write_hdf5(root / "r.hdf5", robomimic_demos([3]))
    return [str(root / "s.hdf5"), str(root / "r.hdf5")], {}, [
        "sim (", "s.hdf5)", "the file is a Git LFS pointer, not the data", "git lfs pull"]


def case_lfs_pointer_zarr_zip(root):
    spec = _zarr_pair(root)
    (root / "real.zarr.zip").write_bytes(LFS_POINTER)
    return [spec[0], str(root / "real.zarr.zip")], {}, [
        "real (", "real.zarr.zip)", "Git LFS pointer", "git lfs pull"]


def case_lfs_pointer_zarr_metadata(root):
    spec = _zarr_pair(root)
    (Path(spec[1]) / "color_image2" / ".zarray").write_bytes(LFS_POINTER)
    return spec, {}, ["real (", "color_image2/.zarray is a Git LFS pointer", "git lfs pull"]


def case_lfs_pointer_zarr_chunk(root):
    spec = _zarr_pair(root)
    _chunk_file(Path(spec[0]), "color_image2", 4).write_bytes(LFS_POINTER)
    return spec, {}, ["sim (", "color_image2/1.0.0.0 is a Git LFS pointer", "git lfs pull"], [5]


def case_lfs_pointer_frame_png(root):
    folder = _folder(root)
    (folder / "sim" / "000003.png").write_bytes(LFS_POINTER)
    return [str(folder)], {}, ["sim/000003.png is a Git LFS pointer", "git lfs pull"], [3]


def case_lfs_pointer_lerobot_parquet(root):
    spec = _lerobot_pair(root)
    (Path(spec[0]) / "data/chunk-000/file-000.parquet").write_bytes(LFS_POINTER)
    return spec, {}, ["sim/data/chunk-000/file-000.parquet is a Git LFS pointer",
                      "git lfs pull"]


def case_lfs_pointer_lerobot_video(root):
    spec = _lerobot_pair(root)
    (Path(spec[0]) / LEROBOT_VIDEO).write_bytes(LFS_POINTER)
    return spec, {}, ["file-000.mp4 is a Git LFS pointer", "git lfs pull"]


# ----------------------------------------------------------------------------- issue 21
# LeRobot metadata is untrusted: typed, ranged, and the timestamps checked as LeRobot does.
LEROBOT_DATA = "data/chunk-000/file-000.parquet"
LEROBOT_EPISODES = "meta/episodes/chunk-000/file-000.parquet"


def _edit_info(spec: list, k: int, **fields) -> list:
    import json

    path = Path(spec[k]) / "meta" / "info.json"
    info = json.loads(path.read_text())
    info.update(fields)
    path.write_text(json.dumps(info))
    return spec


def _edit_column(path: Path, column: str, values, type_=None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    k = table.column_names.index(column)
    array = pa.array(values, type_ or table.schema.field(k).type)
    pq.write_table(table.set_column(k, column, array),
                   path)


def _lerobot_column_case(root, domain: int, column: str, edit, type_=None, rel=LEROBOT_DATA):
    import pyarrow.parquet as pq

    spec = _lerobot_pair(root)
    path = Path(spec[domain]) / rel
    values = pq.read_table(path, columns=[column]).column(0).to_pylist()
    _edit_column(path, column, edit(values), type_)
    return spec


def case_lerobot_timestamps_duplicated(root):
    def edit(t):
        t[5] = t[4]  # episode 0: frame 5 repeats frame 4's time
        return t
    return _lerobot_column_case(root, 0, "timestamp", edit), {}, [
        "sim/data/chunk-000/file-000.parquet", "column 'timestamp' goes from 0.400000 s (row 4)",
        "to 0.400000 s (row 5) in episode 0", "0.100000 s apart", "LeRobot's tolerance 0.0001 s"]


def case_lerobot_timestamps_all_zero(root):
    return _lerobot_column_case(root, 1, "timestamp", lambda t: [0.0] * len(t)), {}, [
        "real/data/chunk-000/file-000.parquet", "from 0.000000 s (row 0) to 0.000000 s (row 1)",
        "duplicated, reversed or missing frames"]


def case_lerobot_timestamps_reversed(root):
    def edit(t):
        t[0:20] = t[0:20][::-1]
        return t
    return _lerobot_column_case(root, 0, "timestamp", edit), {}, [
        "column 'timestamp' goes from 1.900000 s (row 0) to 1.800000 s (row 1) in episode 0"]


def case_lerobot_timestamps_off_by_more_than_tolerance(root):
    def edit(t):
        t[25] = t[25] + 0.001  # 1 ms: ten times LeRobot's tolerance
        return t
    return _lerobot_column_case(root, 1, "timestamp", edit), {}, [
        "(row 24) to 0.501000 s (row 25) in episode 1"]


def case_lerobot_frame_index_repeated(root):
    def edit(f):
        f[3] = 2
        return f
    return _lerobot_column_case(root, 1, "frame_index", edit), {}, [
        "real/data/chunk-000/file-000.parquet", "column 'frame_index' row 3 is 2 in episode 0",
        "expected 3"]


def case_lerobot_episode_index_nan(root):
    import pyarrow as pa

    def edit(e):
        e = [float(x) for x in e]
        e[7] = float("nan")
        return e
    return _lerobot_column_case(root, 1, "episode_index", edit, pa.float64()), {}, [
        "real/data/chunk-000/file-000.parquet", "column 'episode_index' must hold integers",
        "row 7 is nan"]


def case_lerobot_episode_index_huge(root):
    import pyarrow as pa

    def edit(e):
        e = [float(x) for x in e]
        e[0] = float("inf")  # what 1e400 in a JSON or CSV file becomes
        return e
    return _lerobot_column_case(root, 0, "episode_index", edit, pa.float64()), {}, [
        "column 'episode_index'", "row 0 is inf"]


def case_lerobot_episode_length_null(root):
    return _lerobot_column_case(root, 1, "length", lambda v: [None] + v[1:],
                                rel=LEROBOT_EPISODES), {}, [
        "real/meta/episodes row 0", "field 'length' must be an integer", "got None"]


def case_lerobot_fps_text(root):
    return _edit_info(_lerobot_pair(root), 0, fps="30"), {}, [
        "sim/meta/info.json", "field 'fps' must be a number in (0, 10000]", "got '30'"]


def case_lerobot_fps_list(root):
    return _edit_info(_lerobot_pair(root), 1, fps=[30]), {}, [
        "real/meta/info.json", "field 'fps'", "got [30]"]


def case_lerobot_fps_zero_text(root):
    return _edit_info(_lerobot_pair(root), 1, fps="0"), {}, ["field 'fps'", "got '0'"]


def case_lerobot_fps_huge(root):
    return _edit_info(_lerobot_pair(root), 1, fps=1e400), {}, ["field 'fps'", "got inf"]


def case_lerobot_chunks_size_text(root):
    return _edit_info(_lerobot_pair(root), 0, chunks_size="many"), {}, [
        "sim/meta/info.json", "field 'chunks_size' must be an integer in [1, 2147483647]",
        "got 'many'"]


def case_lerobot_total_episodes_negative(root):
    return _edit_info(_lerobot_pair(root), 1, total_episodes=-1), {}, [
        "field 'total_episodes' must be an integer", "got -1"]


def case_lerobot_data_path_absolute(root):
    return _edit_info(_lerobot_pair(root), 1, data_path="/etc/{chunk_index}{file_index}"), {}, [
        "real/meta/info.json", "field 'data_path' gives '/etc/00'", "an absolute path"]


def case_lerobot_data_path_leaves_the_folder(root):
    spec = _lerobot_pair(root)
    other = root / "other" / "data" / "chunk-000"
    other.mkdir(parents=True)
    import shutil

    shutil.copy(Path(spec[1]) / LEROBOT_DATA, other / "file-000.parquet")
    _edit_info(spec, 1, data_path="../other/data/chunk-{chunk_index:03d}/file-{file_index:03d}"
                                  ".parquet")
    return spec, {}, ["real/meta/info.json", "field 'data_path' gives "
                      "'../other/data/chunk-000/file-000.parquet', which leaves the dataset folder"]


def case_lerobot_video_path_leaves_the_folder(root):
    leaving = "videos/../../../{video_key}/{chunk_index}/{file_index}.mp4"
    return _edit_info(_lerobot_pair(root), 0, video_path=leaving), {}, [
        "sim/meta/info.json", "field 'video_path'", "which leaves the dataset folder"]


def case_lerobot_feature_not_an_object(root):
    import json

    spec = _lerobot_pair(root)
    path = Path(spec[1]) / "meta" / "info.json"
    info = json.loads(path.read_text())
    info["features"]["observation.state"] = "float32"
    path.write_text(json.dumps(info))
    return spec, {}, ["real/meta/info.json", "features['observation.state'] must be an object "
                      "with a 'dtype'"]


def _lerobot_action_names(root, edit) -> list:
    import json

    spec = _lerobot_pair(root)
    path = Path(spec[1]) / "meta" / "info.json"
    info = json.loads(path.read_text())
    edit(info["features"]["action"]["names"])
    path.write_text(json.dumps(info))
    return spec


def case_lerobot_action_named_episode(root):
    def edit(names):
        names[3] = "episode"
    return _lerobot_action_names(root, edit), {}, [
        "real/meta/info.json: features['action'].names", "'episode' is a reserved column"]


def case_lerobot_action_names_repeated(root):
    def edit(names):
        names[1] = names[0]
    return _lerobot_action_names(root, edit), {}, [
        "features['action'].names", "'pos_x' is listed twice"]


def cli_case_lerobot_hub_ref_leaves_the_cache(root):
    spec = _lerobot_pair(root)
    hub = root / "hub" / "datasets--org--ds"
    (hub / "refs").mkdir(parents=True)
    (hub / "snapshots").mkdir()
    (hub / "refs" / "main").write_text("../../../real")
    return Case(["info", "hf:org/ds", spec[1]],
                ["hf:org/ds: the hub cache resolves it to", "not a snapshot folder of "
                 "datasets--org--ds", "refs/ file is damaged"],
                env={"HF_HUB_CACHE": str(root / "hub"), "HF_HUB_OFFLINE": "1"})


# Files, folders and stores that are not what they claim; sizes bounded before work.
def _png_header_only(path: Path, width: int, height: int) -> None:
    """A PNG whose header announces ``width x height`` pixels with almost no data (what a
    decompression bomb looks like to a reader: a few bytes on disk)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                     + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


def case_frame_size_bomb(root):
    folder = _folder(root)
    _png_header_only(folder / "sim" / "000000.png", 20000, 20000)  # first frame: decoded at load
    return [str(folder)], {}, ["sim/000000.png", "the image is 400,000,000 pixels",
                               "over the limit of 89,478,485 pixels per frame"]


def case_frame_size_over_the_limit(root):
    folder = _folder(root)
    _png_header_only(folder / "real" / "000007.png", 10000, 10000)  # under PIL's own refusal
    return [str(folder)], {}, ["real/000007.png", "the image is 10000x10000 pixels",
                               "over the limit of 89,478,485 pixels per frame"]


def case_table_step_huge(root):
    def edit(df):
        df["step"] = df["step"].astype(float)
        df.loc[3, "step"] = 1e19
        return df
    return [_edit_table(_folder(root), edit)], {}, [
        "actions.csv", "column 'step' must hold integers in [0, 2147483647]", "row 3", "1e+19"]


def case_table_episode_1e400(root):
    folder = _folder(root)
    text = (folder / "actions.csv").read_text().splitlines()
    header = text[0].split(",")
    row = text[2].split(",")
    row[header.index("episode")] = "1e400"
    text[2] = ",".join(row)
    (folder / "actions.csv").write_text("\n".join(text) + "\n")
    return [str(folder)], {}, ["actions.csv", "column 'episode' must hold integers", "row 1"]


def _action_names(root, names) -> str:
    import json

    folder = _folder(root)
    meta = json.loads((folder / "s2r.json").read_text())
    meta["action_names"] = names
    (folder / "s2r.json").write_text(json.dumps(meta))
    return str(folder)


def case_action_names_collide_with_step(root):
    return [_action_names(root, ["act0", "step"])], {}, [
        "s2r.json", "'step' is a reserved column", "each action needs its own column"]


def case_action_names_repeated(root):
    return [_action_names(root, ["act0", "act0"])], {}, [
        "s2r.json", "'act0' is listed twice"]


def case_robomimic_demo_not_named_demo_n(root):
    demos = robomimic_demos([3, 2])
    demos["trial_b"] = demos.pop("demo_1")
    write_hdf5(root / "s.hdf5", demos)
    write_hdf5(root / "r.hdf5", robomimic_demos([3]))
    return [str(root / "s.hdf5"), str(root / "r.hdf5")], {}, [
        "s.hdf5", "data/trial_b is not named demo_N"]


def case_robomimic_external_link(root):
    import h5py

    write_hdf5(root / "s.hdf5", robomimic_demos([3]))
    write_hdf5(root / "r.hdf5", robomimic_demos([3]))
    write_hdf5(root / "elsewhere.hdf5", robomimic_demos([3]))
    with h5py.File(root / "s.hdf5", "a") as f:
        del f["data/demo_0/obs/agentview_image"]
        f["data/demo_0/obs/agentview_image"] = h5py.ExternalLink(
            str(root / "elsewhere.hdf5"), "/data/demo_0/obs/agentview_image")
    return [str(root / "s.hdf5"), str(root / "r.hdf5")], {}, [
        "s.hdf5", "data/demo_0/obs/agentview_image is an HDF5 external link to",
        "elsewhere.hdf5"]


def case_zarr_chunk_is_a_fifo(root):
    spec = _zarr_pair(root)
    chunk = _chunk_file(Path(spec[0]), "color_image2", 4)
    chunk.unlink()
    os.mkfifo(chunk)
    return spec, {}, ["sim (", "color_image2/1.0.0.0 is a FIFO (named pipe)",
                      "would block or never end"]


def case_zarr_chunk_links_to_dev_zero(root):
    spec = _zarr_pair(root)
    chunk = _chunk_file(Path(spec[1]), "color_image2", 0)
    chunk.unlink()
    chunk.symlink_to("/dev/zero")
    return spec, {}, ["real (", "color_image2/0.0.0.0 is a device"]


def case_zarr_metadata_is_a_folder(root):
    spec = _zarr_pair(root)
    meta = Path(spec[0]) / "color_image2" / ".zarray"
    meta.unlink()
    meta.mkdir()
    return spec, {}, ["sim (", "color_image2/.zarray is not a regular file",
                      "zarr metadata (.zarray) is a small JSON file"]


def case_hdf5_is_a_fifo(root):
    os.mkfifo(root / "s.hdf5")
    write_hdf5(root / "r.hdf5", robomimic_demos([3]))
    return [str(root / "s.hdf5"), str(root / "r.hdf5")], {}, [
        "s.hdf5' is not a regular file or folder (a FIFO or a device?)"]


def case_lerobot_video_is_a_fifo(root):
    spec = _lerobot_pair(root)
    video = Path(spec[0]) / LEROBOT_VIDEO
    video.unlink()
    os.mkfifo(video)
    return spec, {}, ["file-000.mp4: not a regular file", "expected an MP4 video"]


def case_demo_too_large(root):
    return "demo:episodes=1000000,steps=1000000", {}, [
        "2,000,000,000,000 frames", "over the demo's limit of 50,000 frames and 2 GiB",
        "add large=true"]


def case_demo_option_repeated(root):
    return "demo:episodes=2,episodes=3", {}, ["option 'episodes' is given twice"]


def cli_case_demo_command_too_large(root):
    out = root / "d"
    return Case(["demo", "--out", str(out), "--episodes", "1000000", "--steps", "1000000"],
                ["over the demo's limit", "add large=true"], outputs=[out])


def _users_files(root: Path) -> list:
    """A folder of a user's files, with an ``arrays/`` sub-folder like a cache's."""
    folder = root / "thesis"
    (folder / "arrays").mkdir(parents=True)
    files = [folder / "arrays" / "thesis.txt", folder / "notes.txt",
             folder / "arrays" / ("0" * 32 + ".npy")]  # even one named like an entry
    for f in files:
        f.write_text(f"the user's {f.name}")
    return files


def cli_case_cache_clear_a_folder_of_user_files(root):
    files = _users_files(root)
    return Case(["cache", "clear", "--cache-dir", str(root / "thesis")],
                ["thesis is not an s2r cache folder", "no .s2r-cache marker",
                 "nothing was deleted"], kept=files, outputs=[root / "thesis" / ".s2r-cache"])


def cli_case_cache_clear_arrays_is_a_link(root):
    from s2r.cache import Cache

    cache = Cache(root / "cache")
    cache.get_or_compute_json({"kind": "k"}, lambda: {"x": 1})
    cache.close()
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    kept = elsewhere / ("1" * 32 + ".npy")
    kept.write_text("someone's array")
    import shutil

    shutil.rmtree(root / "cache" / "arrays")
    (root / "cache" / "arrays").symlink_to(elsewhere)
    return Case(["cache", "clear", "--cache-dir", str(root / "cache")],
                ["cache/arrays is a symbolic link", "deletes nothing through links"],
                kept=[kept])


_NO_MIRROR = "http://127.0.0.1:1"  # nothing answers: a check that came after it would say so


def _weights_case(root, plant) -> Case:
    weights = root / "w"
    weights.mkdir()
    target = root / "precious.txt"
    target.write_text("must not be overwritten")
    words = plant(weights, target)
    return Case(["weights", "fetch", "vip"], ["vip: ", *words], kept=[target],
                env={"S2R_WEIGHTS_DIR": str(weights), "S2R_WEIGHTS_MIRROR": _NO_MIRROR})


def cli_case_weights_part_is_a_link(root):
    def plant(weights, target):
        (weights / "vip_resnet50.pt.part").symlink_to(target)
        return ["vip_resnet50.pt.part is a symbolic link", "does not download through a link"]
    return _weights_case(root, plant)


def cli_case_weights_destination_is_a_link(root):
    def plant(weights, target):
        (weights / "vip_resnet50.pt").symlink_to(root / "no-such-file.pt")
        return ["vip_resnet50.pt is a symbolic link"]
    return _weights_case(root, plant)


def cli_case_weights_destination_is_a_folder(root):
    def plant(weights, target):
        (weights / "vip_resnet50.pt").mkdir()
        return ["vip_resnet50.pt exists and is not a regular file"]
    return _weights_case(root, plant)


def cli_case_weights_dir_is_a_file(root):
    plain = _plain_file(root)
    return Case(["weights", "fetch", "vip"], ["vip: the weights folder", "plain.txt is not a "
                                              "folder"], kept=[plain],
                env={"S2R_WEIGHTS_DIR": str(plain), "S2R_WEIGHTS_MIRROR": _NO_MIRROR})


def cli_case_checkpoint_is_a_system_file(root):
    out = root / "e.npz"
    return Case(["embed", TINY_DEMO, "--encoder", "ckpt:resnet18:/etc/passwd", "--no-cache",
                 "--out", str(out)], ["/etc/passwd is not a checkpoint"], outputs=[out],
                not_words=["root:", "b'"])


def cli_case_score_out_is_the_pairwise_file(root):
    out = root / "s.json"
    return Case(["score", TINY_DEMO, "--encoders", "pixels", "--out", str(out), "--pairwise",
                 str(root / "." / "s.json")], ["--pairwise", "is the same file as --out"],
                outputs=[out])


def cli_case_score_merge_an_unrelated_csv(root):
    other = root / "budget.csv"
    other.write_text("item,cost\npaper,3\n")
    return Case(["score", "--merge", str(other), "--out", str(root / "s.json")],
                ["budget.csv' has no 'encoder.id' column", "item, cost",
                 "written by 'python -m s2r score'"], outputs=[root / "s.json"], kept=[other])


def cli_case_score_merge_an_empty_list(root):
    other = root / "empty.json"
    other.write_text("[]")
    return Case(["score", "--merge", str(other), "--out", str(root / "s.csv")],
                ["empty.json' holds no score records"], outputs=[root / "s.csv"])


def _plain_file(root: Path) -> Path:
    path = root / "plain.txt"
    path.write_text("not a folder")
    return path


def cli_case_embed_out_under_a_file(root):
    out = _plain_file(root) / "emb.npz"
    return Case(["embed", TINY_DEMO, "--encoder", "pixels", "--out", str(out)],
                ["--out", "plain.txt' is a file, not a folder"], outputs=[out])


def cli_case_embed_out_is_a_folder(root):
    out = root / "emb.npz"
    out.mkdir()
    return Case(["embed", TINY_DEMO, "--encoder", "pixels", "--out", str(out)],
                ["--out", "emb.npz' is a folder; give a file path"])


def cli_case_embed_out_unwritable_place(root):
    out = Path("/proc/s2r-cannot-write-here/emb.npz")
    return Case(["embed", TINY_DEMO, "--encoder", "pixels", "--out", str(out)],
                ["--out", "cannot write in '/proc'"], outputs=[out])


def cli_case_score_out_under_a_file(root):
    out = _plain_file(root) / "scores.json"
    return Case(["score", TINY_DEMO, "--encoders", "pixels", "--out", str(out)],
                ["--out", "is a file, not a folder"], outputs=[out])


def cli_case_score_pairwise_under_a_file(root):
    out, pairwise = root / "scores.json", _plain_file(root) / "pairs.csv"
    return Case(["score", TINY_DEMO, "--encoders", "pixels", "--out", str(out),
                 "--pairwise", str(pairwise)], ["--pairwise", "is a file, not a folder"],
                outputs=[out, pairwise])


def cli_case_project_out_under_a_file(root):
    out = _plain_file(root) / "map.csv"
    return Case(["project", TINY_DEMO, "--encoder", "pixels", "--out", str(out)],
                ["--out", "is a file, not a folder"], outputs=[out])


def cli_case_saliency_out_is_a_file(root):
    out = _plain_file(root)
    return Case(["saliency", TINY_DEMO, "--encoder", "pixels", "--out", str(out)],
                ["--out", "plain.txt' is an existing file; give a folder path"])


def cli_case_saliency_frames_negative(root):
    out = root / "maps"
    return Case(["saliency", TINY_DEMO, "--encoder", "pixels", "--frames", "-1", "--out",
                 str(out)], ["--frames '-1': -1 is not a frame index", "0 to 15",
                             "sim frames: 0..7"], outputs=[out / "saliency.json"])


def cli_case_saliency_frames_past_the_end(root):
    return Case(["saliency", TINY_DEMO, "--encoder", "pixels", "--frames", "3,16", "--out",
                 str(root / "maps")], ["--frames '3,16': 16 is not a frame index"],
                outputs=[root / "maps" / "saliency.json"])


def cli_case_demo_out_under_a_file(root):
    out = _plain_file(root) / "d"
    return Case(["demo", "--out", str(out), "--episodes", "2", "--steps", "4"],
                ["--out", "plain.txt' is a file, not a folder"])


def cli_case_demo_out_unwritable_place(root):
    return Case(["demo", "--out", "/proc/s2r-demo", "--episodes", "2", "--steps", "4"],
                ["--out", "cannot write in '/proc'"])


def cli_case_demo_out_not_empty(root):
    (root / "d").mkdir()
    (root / "d" / "mine.txt").write_text("keep me")
    return Case(["demo", "--out", str(root / "d"), "--episodes", "2", "--steps", "4"],
                ["exists and is not empty", "--overwrite"], outputs=[root / "d" / "sim"])


def _encoder_config(root: Path, body: str, argv: list, words: list) -> Case:
    config = root / "s2r_encoders.toml"
    config.write_text(body)
    out = root / "e.npz"
    return Case([*argv, "--out", str(out)], ["s2r_encoders.toml", *words], outputs=[out],
                env={"S2R_ENCODERS": str(config)})


def cli_case_encoder_config_mean_not_numbers(root):
    return _encoder_config(root, '[[encoders]]\nid = "a"\ntimm = "resnet18"\nmean = "red"\n',
                           ["embed", TINY_DEMO, "--encoder", "a"],
                           ["entry 1 (id 'a')", "field 'mean' must be 3 numbers", "'red'"])


def cli_case_encoder_config_input_size_negative(root):
    return _encoder_config(root, '[[encoders]]\nid = "a"\ntimm = "resnet18"\ninput_size = -5\n',
                           ["embed", TINY_DEMO, "--encoder", "a"], ["field 'input_size'"])


def cli_case_encoder_config_dim_not_a_number(root):
    return _encoder_config(root, '[[encoders]]\nid = "a"\ntimm = "resnet18"\ndim = "big"\n',
                           ["embed", TINY_DEMO, "--encoder", "pixels"],
                           ["field 'dim' must be a positive integer"])


def cli_case_encoder_config_redefines_builtin(root):
    return _encoder_config(root, '[[encoders]]\nid = "pixels"\ntimm = "resnet18"\n',
                           ["embed", TINY_DEMO, "--encoder", "pixels"],
                           ["id 'pixels' is a built-in encoder", "cannot be redefined"])


def cli_case_encoder_config_repeated_id(root):
    entry = '[[encoders]]\nid = "a"\ntimm = "resnet18"\n'
    return _encoder_config(root, entry + entry, ["embed", TINY_DEMO, "--encoder", "a"],
                           ["entry 2 (id 'a')", "already used by entry 1"])


def cli_case_encoder_config_checkpoint_missing(root):
    missing = root / "weights.pth"
    body = f'[[encoders]]\nid = "mine"\ncheckpoint = "{missing}"\narch = "resnet18"\n'
    case = _encoder_config(root, body, ["embed", TINY_DEMO, "--encoder", "mine"],
                           [f"checkpoint file {missing} does not exist"])
    return case


def cli_case_cache_dir_is_a_file(root):
    out = root / "e.npz"
    return Case(["embed", TINY_DEMO, "--encoder", "pixels", "--out", str(out), "--cache-dir",
                 str(_plain_file(root))], ["plain.txt", "must name a folder"], outputs=[out])


def cli_case_cache_ls_on_a_file(root):
    return Case(["cache", "ls", "--cache-dir", str(_plain_file(root))],
                ["plain.txt", "must name a folder"])


def cli_case_embed_ray_cluster_unreachable(root):
    out = root / "e.npz"
    return Case(["embed", TINY_DEMO, "--encoder", "pixels", "--no-cache", "--out", str(out),
                 "--backend", "ray", "--address", "127.0.0.1:1"],
                ["--backend ray: no Ray cluster answers at 127.0.0.1:1", "ray start --head"],
                outputs=[out])


def cli_case_validate_not_the_demo(root):
    out = root / "r.json"
    return Case(["validate", str(root), "--out", str(out)],
                ["validate needs a simulated world's dataset spec", "demo:..."],
                outputs=[out])


def cli_case_validate_gap_out_of_range(root):
    out = root / "r.json"
    return Case(["validate", TINY_DEMO, "--gaps", "0,2", "--out", str(out)],
                ["--gaps: expected", "numbers in [0, 1]"], outputs=[out])


def cli_case_validate_negative_memory(root):
    out = root / "r.json"
    return Case(["validate", TINY_DEMO, "--memory", "-1", "--out", str(out)],
                ["memory must be in [0, 1000]"], outputs=[out])


def cli_case_validate_two_encoders(root):
    out = root / "r.json"
    return Case(["validate", TINY_DEMO, "--encoders", "state,pixels", "--out", str(out)],
                ["give at least 3"], outputs=[out])


# Command-line faults that were already caught: name -> (argv after the command's DATASET
# and --out, words). "{root}" is the case's folder.
_PLAIN = {
    "info_demo_option_unknown": (["info", "demo:bogus=1"], ["unknown demo option 'bogus'"]),
    "info_demo_value_not_a_number": (["info", "demo:gap=abc"], ["gap='abc' must be a number"]),
    "demo_episodes_zero": (["demo", "--out", "{root}/d", "--episodes", "0"],
                           ["episodes must be >= 1, got 0"]),
    "demo_gap_above_one": (["demo", "--out", "{root}/d", "--gap", "2"],
                           ["gap must be in [0, 1], got 2.0"]),
    "embed_unknown_encoder": (["embed", TINY_DEMO, "--encoder", "nope", "--out", "{root}/e.npz"],
                              ["unknown encoder 'nope'", "Did you mean"]),
    "embed_out_suffix": (["embed", TINY_DEMO, "--encoder", "pixels", "--out", "{root}/e.txt"],
                         ["--out must name a .npz file"]),
    "embed_batch_size_zero": (["embed", TINY_DEMO, "--encoder", "pixels", "--out",
                               "{root}/e.npz", "--batch-size", "0"],
                              ["--batch-size must be a positive integer, got 0"]),
    "score_no_encoders": (["score", TINY_DEMO, "--out", "{root}/s.json"],
                          ["--encoders is required"]),
    "score_wildcard_matches_nothing": (["score", TINY_DEMO, "--encoders", "nope*", "--out",
                                        "{root}/s.json"], ["no encoder id matches 'nope*'"]),
    "score_n_boot_negative": (["score", TINY_DEMO, "--encoders", "pixels", "--out",
                               "{root}/s.json", "--n-boot", "-3"], ["n_boot must be >= 0"]),
    "score_null_unknown": (["score", TINY_DEMO, "--encoders", "pixels", "--out",
                            "{root}/s.json", "--null", "bogus"],
                           ["null must be 'shuffle' or 'shuffle:SEED'"]),
    "score_ci_above_one": (["score", TINY_DEMO, "--encoders", "pixels", "--out",
                            "{root}/s.json", "--ci", "2"], ["ci must be <= 1"]),
    "score_merge_missing_file": (["score", "--merge", "{root}/nothere.json", "--out",
                                  "{root}/s.json"], ["nothere.json' does not exist"]),
    "score_out_suffix": (["score", TINY_DEMO, "--encoders", "pixels", "--out", "{root}/s.txt"],
                         ["--out must name a .json or .csv file"]),
    "project_perplexity_negative": (["project", TINY_DEMO, "--encoder", "pixels", "--out",
                                     "{root}/m.csv", "--perplexity", "-1"],
                                    ["--perplexity must be > 0"]),
    "project_k_zero": (["project", TINY_DEMO, "--encoder", "pixels", "--out", "{root}/m.csv",
                        "--k", "0"], ["--k must be >= 1"]),
    "project_unknown_encoder": (["project", TINY_DEMO, "--encoder", "nope", "--out",
                                 "{root}/m.csv"], ["unknown encoder 'nope'"]),
    "saliency_frame_is_real": (["saliency", TINY_DEMO, "--encoder", "pixels", "--out",
                                "{root}/sal", "--frames", "9"], ["frame 9 is 'real'"]),
    "saliency_frames_not_numbers": (["saliency", TINY_DEMO, "--encoder", "pixels", "--out",
                                     "{root}/sal", "--frames", "a,b"],
                                    ["--frames must be comma-separated frame indices"]),
    "saliency_action_dim_unknown": (["saliency", TINY_DEMO, "--encoder", "pixels", "--out",
                                     "{root}/sal", "--target", "action", "--action-dim", "zz"],
                                    ["unknown action dimension 'zz'", "pos_x"]),
    "saliency_batch_size_zero": (["saliency", TINY_DEMO, "--encoder", "pixels", "--out",
                                  "{root}/sal", "--batch-size", "0"],
                                 ["--batch-size must be a positive integer"]),
}


def _plain_case(argv, words):
    def build(root):
        args = [a.replace("{root}", str(root)) for a in argv]
        outs = [Path(a) for a in args if a.startswith(str(root)) and Path(a).suffix]
        return Case(args, words, outputs=outs)
    return build


for _name, (_argv, _words) in _PLAIN.items():
    globals()[f"cli_case_{_name}"] = _plain_case(_argv, _words)


#: Dataset faults (``case_*``: the library raises them too) and command-line faults
#: (``cli_case_*``), by name.
DATASET_CASES = {name[5:]: fn for name, fn in globals().copy().items()
                 if name.startswith("case_")}
CASES = {**DATASET_CASES, **{name[9:]: fn for name, fn in globals().copy().items()
                             if name.startswith("cli_case_")}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every case's files, built once: name -> Case."""
    out = {}
    for name, fn in CASES.items():
        root = tmp_path_factory.mktemp(name)
        made = fn(root)
        out[name] = made if isinstance(made, Case) else dataset_case(root, *made)
    return out


@pytest.mark.parametrize("name", sorted(DATASET_CASES))
def test_library_raises_clear_error(built, name):
    case = built[name]
    with pytest.raises(S2RError) as err:
        case.library()
    message = str(err.value)
    for w in case.words:
        assert w in message, f"{w!r} not in {message!r}"
    assert "\n" not in message


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_main_exits_2_with_message(built, capsys, name):
    """``s2r.cli.main`` (what ``python -m s2r`` runs) on every case, in process: one line,
    exit 2, nothing written."""
    run_case(built[name], capsys, name)


# Two cases (a load-time and a read-time error) through a real ``python -m s2r`` process: each
# process imports every command module (torch included: seconds on a loaded 2-core machine),
# and main() above already covers every case.
SUBPROCESS_CASES = ("image_key_missing", "garbage_later_frame")


def _python_m_s2r(argv):
    return subprocess.run([sys.executable, "-m", "s2r", *argv], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def cli_results(built):
    """``python -m s2r`` on each of SUBPROCESS_CASES, two processes at a time."""
    def run(name):
        return name, _python_m_s2r(built[name].argv)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, SUBPROCESS_CASES))


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_python_m_s2r_exits_2_with_message(built, cli_results, name):
    proc = cli_results[name]
    assert_clean_failure(proc.returncode, proc.stdout, proc.stderr, built[name].words)


def test_cli_debug_reraises(built):
    """``--debug`` lets the exception through (Python then prints the traceback)."""
    from s2r.cli import main

    with pytest.raises(S2RError, match="does not exist"):
        main(["--debug", *built["missing_folder"].argv])



# ----------------------------------------------------------------------------- issue 21
# Hostile inputs whose right outcome is not an error: each test asserts that outcome exactly.
def test_a_foreign_warning_while_loading_is_printed_once_and_never_loops(capsys, monkeypatch):
    """A warning from another library while a dataset loads used to be re-emitted into the
    list being walked (``catch_warnings(record=True)``): every command hung, memory growing."""
    import warnings

    import s2r.datasets as datasets
    from s2r.cli import main
    from s2r.datasets import DataWarning

    real_load = datasets.load_dataset

    def load_with_warnings(*args, **kwargs):
        for _ in range(3):
            warnings.warn("Palette images with Transparency expressed in bytes should be "
                          "converted to RGBA images", UserWarning)
            warnings.warn("action key holds rewards", DataWarning)
        warnings.warn("invalid value encountered in cast", RuntimeWarning)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", load_with_warnings)
    start = time.perf_counter()
    assert main(["info", TINY_DEMO]) == 0
    assert time.perf_counter() - start < 30
    out, err = capsys.readouterr()
    lines = [line for line in re.split(r"[\r\n]+", err) if line.startswith("warning: ")]
    assert lines == ["warning: UserWarning: Palette images with Transparency expressed in bytes "
                     "should be converted to RGBA images",
                     "warning: action key holds rewards",
                     "warning: RuntimeWarning: invalid value encountered in cast"]
    import json

    assert json.loads(out)["frames"] == {"sim": 8, "real": 8}  # the dataset, loaded


def test_a_palette_png_with_byte_transparency_loads_without_a_warning(tmp_path, capsys):
    """What pngquant writes: mode P with a bytes transparency table (PIL warns on a direct RGB
    conversion); it loads, decoded through RGBA, exit 0, no warning."""
    from PIL import Image

    from s2r.cli import main

    folder = _folder(tmp_path)
    first = folder / "sim" / "000000.png"
    rgb = np.asarray(Image.open(first).convert("RGB"))
    Image.fromarray(rgb).convert("P").save(first, transparency=b"\x00" * 4)
    assert isinstance(Image.open(first).info["transparency"], bytes)
    assert main(["info", str(folder)]) == 0
    _, err = capsys.readouterr()
    assert "warning" not in err.lower()
    frame = load_dataset(str(folder)).read_images([0])[0]
    expected = np.asarray(Image.open(first).convert("RGBA").convert("RGB"))
    assert frame.shape == (12, 16, 3) and np.array_equal(frame, expected)


def test_cache_clear_deletes_its_entries_and_nothing_else(tmp_path, capsys):
    """A marked cache: its entries go; a user's files left in it (in arrays/, in a
    sub-folder, at the top) stay."""
    from s2r.cache import Cache
    from s2r.cli import main

    cache = Cache(tmp_path / "c")
    cache.get_or_compute_array({"kind": "a"}, lambda: np.ones(4))
    cache.get_or_compute_json({"kind": "j"}, lambda: {"x": 1})
    cache.close()
    assert (tmp_path / "c" / ".s2r-cache").is_file()
    mine = [tmp_path / "c" / "arrays" / "thesis.txt", tmp_path / "c" / "notes.txt",
            tmp_path / "c" / "arrays" / "sub" / "x.npy"]
    for path in mine:
        path.parent.mkdir(exist_ok=True)
        path.write_text("mine")
    assert main(["cache", "clear", "--cache-dir", str(tmp_path / "c")]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert all(p.read_text() == "mine" for p in mine)
    assert not list((tmp_path / "c" / "arrays").glob("*.npy"))
    assert Cache(tmp_path / "c").ls() == []


def test_cache_clear_of_a_folder_that_does_not_exist_creates_nothing(tmp_path, capsys):
    from s2r.cli import main

    assert main(["cache", "clear", "--cache-dir", str(tmp_path / "none")]) == 0
    assert "removed 0 entries" in capsys.readouterr().out
    assert not (tmp_path / "none").exists()


def test_a_link_the_user_made_inside_their_own_folder_is_followed(tmp_path):
    """Documented: a dataset folder's own links (frames kept on another disk) are followed;
    only paths that the metadata writes (``..``, absolute) must stay inside the folder."""
    import shutil

    folder = _folder(tmp_path)
    disk = tmp_path / "other_disk"
    shutil.move(str(folder / "real"), disk)
    (folder / "real").symlink_to(disk)
    fs = load_dataset(str(folder))
    assert fs.n_frames("real") == 7 and fs.read_images([13]).shape == (1, 12, 16, 3)


def test_a_disk_error_is_one_line_for_each_kind():
    import errno

    from s2r.cli import disk_error_line

    line = disk_error_line(OSError(errno.ENOSPC, "No space left on device", "/x/out.npz"))
    assert line == ("cannot finish writing /x/out.npz: the disk is full (No space left on "
                    "device); nothing was written to the output (free some space and run the "
                    "command again)")
    assert "quota" in disk_error_line(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert disk_error_line(OSError(errno.ENOENT, "No such file")) is None


def _full_disk_run(argv, limit_bytes: int, cwd: Path):
    """``python -m s2r ARGV`` where no file may grow past ``limit_bytes`` (RLIMIT_FSIZE, the
    kernel refuses the write with EFBIG, as a full disk refuses it with ENOSPC: both take the
    same path, :func:`s2r.cli.disk_error_line`)."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "s2r", *argv], cwd=REPO, preexec_fn=limit,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, timeout=180)


FULL_DISK = {
    "embed": lambda d: ["embed", TINY_DEMO, "--encoder", "pixels", "--no-cache", "--out",
                        str(d / "e.npz")],
    "demo": lambda d: ["demo", "--out", str(d / "ds"), "--episodes", "2", "--steps", "4",
                       "--height", "64", "--width", "80"],
    "score": lambda d: ["score", TINY_DEMO, "--encoders", "pixels", "--no-cache", "--pca-dim", "8",
                        "--n-boot", "20", "--out", str(d / "s.json")],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(FULL_DISK))
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, command):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = _full_disk_run(FULL_DISK[command](out_dir), 1024, tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in re.split(r"[\r\n]+", proc.stderr) if line.strip()]
    assert [line for line in lines if "error" in line] == [lines[-1]], proc.stderr
    assert lines[-1].startswith("error: cannot finish") and "nothing was written to the " \
        "output" in lines[-1], lines[-1]
    assert list(out_dir.iterdir()) == [], list(out_dir.iterdir())  # no output, no temp file


def test_an_output_never_opens_what_is_at_its_temporary_name(tmp_path, monkeypatch):
    """The temporary sibling is created O_EXCL|O_NOFOLLOW: a link planted at the name it
    draws first is skipped (never written through) and the output still lands in place."""
    import secrets

    from s2r.atomic import atomic_path

    target = tmp_path / "precious.txt"
    target.write_text("keep")
    (tmp_path / ".out.tmp-aaaaaaaaaaaa.json").symlink_to(target)
    names = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(names))
    with atomic_path(tmp_path / "out.json") as tmp:
        assert tmp.name == ".out.tmp-bbbbbbbbbbbb.json"
        tmp.write_text('{"ok": 1}')
    assert target.read_text() == "keep"
    assert (tmp_path / "out.json").read_text() == '{"ok": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".out.tmp-aaaaaaaaaaaa.json", "out.json", "precious.txt"]
