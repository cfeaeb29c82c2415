"""Bad datasets fail fast with one clear message, in the library and in the CLI.

Every case builds its own small broken file, then checks (1) the library raises DataError whose
message names the file or key and says what was expected, and (2) ``python -m s2r info`` exits
with status 2, prints that message on stderr and no traceback (every case through
``s2r.cli.main``, one case of each kind through a real ``python -m s2r`` process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from datafiles import frames, robomimic_demos, synthetic_frameset, write_hdf5, write_png, write_zarr
from s2r.datasets import load_dataset
from s2r.datasets.folder import write_folder
from s2r.errors import DataError

REPO = Path(__file__).resolve().parents[1]


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
    return _zarr_pair(root), {"state_key": "parts_poses"}, ["sim.zarr", "no state key 'parts_poses'"]


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


CASES = {name[5:]: fn for name, fn in globals().copy().items() if name.startswith("case_")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every case's files, built once: name -> (spec, kwargs, words, read_indices or None)."""
    out = {}
    for name, fn in CASES.items():
        spec, kwargs, words, *read = fn(tmp_path_factory.mktemp(name))
        out[name] = (spec, kwargs, words, read[0] if read else None)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_library_raises_clear_error(built, name):
    spec, kwargs, words, read = built[name]
    with pytest.raises(DataError) as err:
        fs = load_dataset(spec, **kwargs)
        assert read is not None, "loading should have failed"
        fs.read_images(read)
    message = str(err.value)
    for w in words:
        assert w in message, f"{w!r} not in {message!r}"
    assert "\n" not in message


def _info_argv(spec, kwargs) -> list:
    argv = ["info", *spec]
    for key, value in kwargs.items():
        argv += [f"--{key.replace('_', '-')}", value]
    return argv


def _assert_clean_failure(returncode, stdout, stderr, words):
    assert returncode == 2, stderr
    assert "Traceback" not in stderr
    assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
    for w in words:
        assert w in stderr, f"{w!r} not in {stderr!r}"
    assert stdout == ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_main_exits_2_with_message(built, capsys, name):
    """``s2r.cli.main`` (what ``python -m s2r`` runs) on every case, in process."""
    from s2r.cli import main

    spec, kwargs, words, _ = built[name]
    code = main(_info_argv(spec, kwargs))
    out, err = capsys.readouterr()
    _assert_clean_failure(code, out, err, words)


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
    """``python -m s2r info`` on each of SUBPROCESS_CASES, a few processes at a time."""
    def run(name):
        spec, kwargs, _, _ = built[name]
        return name, _python_m_s2r(_info_argv(spec, kwargs))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, SUBPROCESS_CASES))


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_python_m_s2r_exits_2_with_message(built, cli_results, name):
    proc = cli_results[name]
    _assert_clean_failure(proc.returncode, proc.stdout, proc.stderr, built[name][2])


def test_cli_debug_reraises(built):
    """``--debug`` lets the exception through (Python then prints the traceback)."""
    from s2r.cli import main

    spec, kwargs, words, _ = built["missing_folder"]
    with pytest.raises(DataError, match="does not exist"):
        main(["--debug", *_info_argv(spec, kwargs)])
