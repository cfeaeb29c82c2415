"""LeRobot datasets (issue 13, items 1 and 3): the fixtures written by LeRobot 0.4.4 itself
(``tests/data/lerobot``: a v3.0 sim dataset with AV1 video and a v3.0 real one in image
mode, with ``truth.npz`` holding the frames, actions, state, episodes and steps they were
written from), and v2.1 / H.264 variants written here with pyarrow + PyAV following the format.
"""

from __future__ import annotations

import json
import pickle
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from s2r.datasets import load_dataset, parse_spec
from s2r.errors import DataError
from tests.helpers import REPO

DATA = REPO / "tests" / "data" / "lerobot"
SIM, REAL = DATA / "one_leg_sim", DATA / "one_leg_real"
CAMERA = "observation.images.cam"
#: Mean absolute error (grey levels) allowed for lossy video against the frames it encodes.
VIDEO_TOLERANCE = 4.0


@pytest.fixture(scope="module")
def truth():
    with np.load(DATA / "truth.npz") as t:
        return {k: t[k] for k in t.files}


@pytest.fixture(scope="module")
def fixtures_fs():
    return load_dataset([str(SIM), str(REAL)])


def _part(truth, domain):
    m = truth["domain"] == domain
    return {k: v[m] for k, v in truth.items()}


def _check_against_truth(fs, truth, *, exact_sim=False, exact_real=True):
    frames = fs.read_images(np.arange(len(fs)))
    for d, exact in (("sim", exact_sim), ("real", exact_real)):
        m = fs.domain == d
        t = _part(truth, d)
        got = frames[m]
        assert got.shape == t["images"].shape
        if exact:
            np.testing.assert_array_equal(got, t["images"])
        else:
            err = np.abs(got.astype(np.int16) - t["images"].astype(np.int16)).mean(axis=(1, 2, 3))
            assert err.max() < VIDEO_TOLERANCE, err
            # each frame is its own (not a neighbour's): closest to its own truth frame
            flat_t = t["images"].reshape(len(got), -1).astype(np.float32)
            for i in range(len(got)):
                dist = np.abs(flat_t - got[i].reshape(-1).astype(np.float32)).mean(axis=1)
                assert int(np.argmin(dist)) == i
        np.testing.assert_array_equal(fs.actions[m], t["actions"])
        np.testing.assert_array_equal(fs.state[m], t["state"])
        np.testing.assert_array_equal(fs.step[m], t["step"])
        # episode ids: sim ones as written, real ones after the sim ones
        np.testing.assert_array_equal(np.unique(fs.episode[m], return_inverse=True)[1],
                                      np.unique(t["episode"], return_inverse=True)[1])
    assert fs.episode[fs.domain == "real"].min() > fs.episode[fs.domain == "sim"].max()
    return frames


# ----------------------------------------------------------------------------- specs
def test_two_lerobot_folders_are_kind_lerobot(tmp_path):
    assert parse_spec([str(SIM), str(REAL)]) == {"kind": "lerobot", "sim": str(SIM),
                                                 "real": str(REAL)}
    assert parse_spec(str(tmp_path))["kind"] == "folder"  # an s2r folder stays a folder


def test_one_lerobot_folder_or_a_mixed_pair_is_refused(tmp_path):
    with pytest.raises(DataError, match="one LeRobot dataset; give two, SIM REAL"):
        parse_spec(str(SIM))
    with pytest.raises(DataError, match="has no meta/info.json"):
        parse_spec([str(SIM), str(tmp_path)])


# ----------------------------------------------------------------------------- fixtures
def test_fixtures_decode_every_frame_action_and_state(fixtures_fs, truth):
    fs = fixtures_fs
    assert (fs.n_frames("sim"), fs.n_frames("real")) == (60, 60)
    assert (fs.n_episodes("sim"), fs.n_episodes("real")) == (3, 3)
    assert fs.image_shape == (96, 128, 3)
    assert fs.action_names[:3] == ["pos_x", "pos_y", "pos_z"]
    assert fs.source["kind"] == "lerobot"
    assert fs.source["camera"] == {"sim": CAMERA, "real": CAMERA}
    assert fs.source["mode"] == {"sim": "video", "real": "image"}
    _check_against_truth(fs, truth)


def test_any_read_order_gives_the_same_frames(fixtures_fs):
    fs = load_dataset([str(SIM), str(REAL)])
    ordered = fs.read_images(np.arange(len(fs)))
    rng = np.random.default_rng(0)
    for _ in range(3):
        idx = rng.choice(len(fs), size=25)  # repeats, jumps back and forth
        np.testing.assert_array_equal(fs.read_images(idx), ordered[idx])
    np.testing.assert_array_equal(fs.read_images(np.arange(len(fs))[::-1]), ordered[::-1])
    copy = pickle.loads(pickle.dumps(fs))
    np.testing.assert_array_equal(copy.read_images([59, 3, 61, 119]), ordered[[59, 3, 61, 119]])


def test_image_key_picks_the_camera_and_a_wrong_one_lists_them():
    fs = load_dataset([str(SIM), str(REAL)], image_key=CAMERA)
    assert fs.source["camera"]["sim"] == CAMERA
    with pytest.raises(DataError) as err:
        load_dataset([str(SIM), str(REAL)], image_key="observation.images.wrist")
    msg = str(err.value)
    assert "info.json" in msg and "no camera 'observation.images.wrist'" in msg
    assert CAMERA in msg


def test_action_and_state_keys_are_overridable(truth):
    fs = load_dataset([str(SIM), str(REAL)], action_key="observation.state",
                      state_key="action")
    np.testing.assert_array_equal(fs.actions[fs.domain == "sim"], _part(truth, "sim")["state"])
    np.testing.assert_array_equal(fs.state[fs.domain == "real"], _part(truth, "real")["actions"])
    with pytest.raises(DataError, match="no action feature 'actions'"):
        load_dataset([str(SIM), str(REAL)], action_key="actions")


# ----------------------------------------------------------------------------- fingerprint
def _copy_fixtures(tmp_path):
    sim, real = tmp_path / "sim", tmp_path / "real"
    shutil.copytree(SIM, sim)
    shutil.copytree(REAL, real)
    for p in (sim, real):
        for f in p.rglob("*"):
            f.chmod(0o755 if f.is_dir() else 0o644)
    return sim, real


@pytest.mark.parametrize("target", ["videos/observation.images.cam/chunk-000/file-000.mp4",
                                    "data/chunk-000/file-000.parquet"])
def test_fingerprint_changes_when_a_sim_file_changes(tmp_path, target):
    sim, real = _copy_fixtures(tmp_path)
    spec = [str(sim), str(real)]
    before = load_dataset(spec).fingerprint
    assert load_dataset(spec).fingerprint == before
    time.sleep(0.02)
    path = sim / target
    path.write_bytes(path.read_bytes())  # same bytes, new times: the identity must move
    assert load_dataset(spec).fingerprint != before


def test_fingerprint_changes_when_the_image_parquet_changes(tmp_path):
    sim, real = _copy_fixtures(tmp_path)
    spec = [str(sim), str(real)]
    before = load_dataset(spec).fingerprint
    time.sleep(0.02)
    path = real / "data/chunk-000/file-000.parquet"
    path.write_bytes(path.read_bytes())
    assert load_dataset(spec).fingerprint != before


# ----------------------------------------------------------------------------- CLI
def test_score_runs_on_the_fixtures(tmp_path, capsys):
    from s2r.cli import main

    out = tmp_path / "x.json"
    code = main(["score", str(SIM), str(REAL), "--encoders", "pixels,efficientnet-lite0",
                 "--out", str(out), "--no-cache"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    text = json.dumps(report)
    assert "pixels" in text and "efficientnet-lite0" in text


def test_info_prints_the_lerobot_source(capsys):
    from s2r.cli import main

    assert main(["info", str(SIM), str(REAL), "--image-key", CAMERA]) == 0
    out = capsys.readouterr().out
    assert "lerobot" in out and CAMERA in out
