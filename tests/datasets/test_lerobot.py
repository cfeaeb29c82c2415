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
from s2r.settings import Settings
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


# ----------------------------------------------------------------------------- written here
def _features(part, camera_dtype, codec="h264"):
    h, w = part["images"].shape[1:3]
    cam = {"dtype": camera_dtype, "shape": [h, w, 3], "names": ["height", "width", "channels"]}
    if camera_dtype == "video":
        cam["info"] = {"video.height": h, "video.width": w, "video.codec": codec,
                       "video.pix_fmt": "yuv420p", "video.fps": 10, "video.channels": 3}
    scalar = {"shape": [1], "names": None}
    return {CAMERA: cam,
            "observation.state": {"dtype": "float32", "shape": [part["state"].shape[1]],
                                  "names": None},
            "action": {"dtype": "float32", "shape": [part["actions"].shape[1]],
                       "names": [f"a{j}" for j in range(part["actions"].shape[1])]},
            "timestamp": {"dtype": "float32", **scalar},
            "frame_index": {"dtype": "int64", **scalar},
            "episode_index": {"dtype": "int64", **scalar},
            "index": {"dtype": "int64", **scalar},
            "task_index": {"dtype": "int64", **scalar}}


def _png(image):
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return buf.getvalue()


def _write_rows(path, part, rows, *, fps, image_mode, first_index=0):
    """A LeRobot data parquet with the frames ``rows`` of ``part``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def vectors(values):
        return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), pa.float32()),
                                                 values.shape[1])

    columns = {}
    if image_mode:
        columns[CAMERA] = pa.array([{"bytes": _png(part["images"][i]), "path": f"frame_{i}.png"}
                                    for i in rows],
                                   pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    columns["observation.state"] = vectors(part["state"][rows])
    columns["action"] = vectors(part["actions"][rows])
    columns["timestamp"] = pa.array(part["step"][rows] / fps, pa.float32())
    columns["frame_index"] = pa.array(part["step"][rows], pa.int64())
    columns["episode_index"] = pa.array(part["ep"][rows], pa.int64())
    columns["index"] = pa.array(np.arange(len(rows)) + first_index, pa.int64())
    columns["task_index"] = pa.array(np.zeros(len(rows), np.int64))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def write_video(path, images, *, fps=10, codec="libx264"):
    """Encode ``images`` (n, H, W, 3) as an MP4 at ``fps`` with PyAV (frame i at i / fps)."""
    from fractions import Fraction

    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height = images.shape[2], images.shape[1]
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "18"} if codec == "libx264" else {}
        for i, image in enumerate(images):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, fps)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def write_lerobot_v21(root, part, *, image_mode, fps=10):
    """A LeRobot v2.1 dataset: one parquet and (video mode) one H.264 mp4 per episode."""
    eps = np.unique(part["ep"])
    info = {"codebase_version": "v2.1", "robot_type": "test", "total_episodes": int(eps.size),
            "total_frames": int(len(part["ep"])), "chunks_size": 1000, "fps": fps,
            "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
            "video_path": None if image_mode else
            "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
            "features": _features(part, "image" if image_mode else "video")}
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    lines = []
    for e in eps:
        rows = np.flatnonzero(part["ep"] == e)
        _write_rows(root / f"data/chunk-000/episode_{e:06d}.parquet", part, rows, fps=fps,
                    image_mode=image_mode, first_index=int(rows[0]))
        if not image_mode:
            write_video(root / f"videos/chunk-000/{CAMERA}/episode_{e:06d}.mp4",
                        part["images"][rows], fps=fps)
        lines.append(json.dumps({"episode_index": int(e), "tasks": ["t"], "length": len(rows)}))
    (root / "meta" / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return root


def write_lerobot_v30_h264(root, part, *, fps=10):
    """A LeRobot v3.0 video dataset in two data files and two H.264 video files: episodes
    0..1 in file-000, the rest in file-001 (so from_timestamp is not 0 for every episode)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    eps = np.unique(part["ep"])
    info = {"codebase_version": "v3.0", "robot_type": "test", "total_episodes": int(eps.size),
            "total_frames": int(len(part["ep"])), "chunks_size": 1000, "fps": fps,
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "features": _features(part, "video")}
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    groups = [eps[:2], eps[2:]]
    records = {k: [] for k in ("episode_index", "length", "data/chunk_index", "data/file_index",
                               "dataset_from_index", "dataset_to_index")}
    video = {k: [] for k in ("chunk_index", "file_index", "from_timestamp", "to_timestamp")}
    start = 0
    for f, group in enumerate(groups):
        rows = np.flatnonzero(np.isin(part["ep"], group))
        _write_rows(root / f"data/chunk-000/file-{f:03d}.parquet", part, rows, fps=fps,
                    image_mode=False, first_index=start)
        write_video(root / f"videos/{CAMERA}/chunk-000/file-{f:03d}.mp4", part["images"][rows],
                    fps=fps)
        t = 0.0
        for e in group:
            n = int((part["ep"] == e).sum())
            for k, v in zip(records, (int(e), n, 0, f, start, start + n)):
                records[k].append(v)
            for k, v in zip(video, (0, f, t, t + n / fps)):
                video[k].append(v)
            t += n / fps
            start += n
    table = {**records, **{f"videos/{CAMERA}/{k}": v for k, v in video.items()}}
    path = root / "meta/episodes/chunk-000/file-000.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.table(table), path)
    return root


def _with_episodes(part):
    return {**part, "ep": part["episode"] - part["episode"].min()}


def test_v21_h264_video_and_v21_image_mode(tmp_path, truth):
    sim = write_lerobot_v21(tmp_path / "sim", _with_episodes(_part(truth, "sim")),
                            image_mode=False)
    real = write_lerobot_v21(tmp_path / "real", _with_episodes(_part(truth, "real")),
                             image_mode=True)
    fs = load_dataset([str(sim), str(real)])
    assert fs.source["codebase_version"] == {"sim": "v2.1", "real": "v2.1"}
    assert fs.source["mode"] == {"sim": "video", "real": "image"}
    frames = _check_against_truth(fs, truth)
    rng = np.random.default_rng(1)
    idx = rng.choice(len(fs), size=30)
    np.testing.assert_array_equal(fs.read_images(idx), frames[idx])


def test_v30_h264_in_several_files(tmp_path, truth):
    sim = write_lerobot_v30_h264(tmp_path / "sim", _with_episodes(_part(truth, "sim")))
    fs = load_dataset([str(sim), str(REAL)])
    assert len(fs.images.parts[0].files) == 2
    frames = _check_against_truth(fs, truth)
    idx = np.random.default_rng(2).choice(len(fs), size=30)
    np.testing.assert_array_equal(fs.read_images(idx), frames[idx])


def test_v21_episode_length_mismatch_names_the_file(tmp_path, truth):
    sim = write_lerobot_v21(tmp_path / "sim", _with_episodes(_part(truth, "sim")),
                            image_mode=True)
    lines = (sim / "meta/episodes.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"length": 20', '"length": 19')
    (sim / "meta/episodes.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"episode_000002.parquet: episode 2 has 20 rows .* "
                                        r"says length 19"):
        load_dataset([str(sim), str(REAL)])


# ----------------------------------------------------------------------------- hub ids
REVISION = "0123456789abcdef0123456789abcdef01234567"


def _hub_cache(cache, repo, folder):
    """Lay ``folder`` out as the hub cache does: blobs by hash, a snapshot of symlinks to
    them, ``refs/main`` naming the snapshot."""
    import hashlib

    base = cache / f"datasets--{repo.replace('/', '--')}"
    snap = base / "snapshots" / REVISION
    for f in sorted(Path(folder).rglob("*")):
        if f.is_file():
            data = f.read_bytes()
            blob = base / "blobs" / hashlib.sha256(data).hexdigest()
            blob.parent.mkdir(parents=True, exist_ok=True)
            blob.write_bytes(data)
            link = snap / f.relative_to(folder)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(Path("../" * (len(link.relative_to(base).parts) - 1)) /
                            "blobs" / blob.name)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(REVISION)


def test_hub_ids_are_found_in_the_cache_offline(tmp_path, truth):
    from s2r.datasets import storage_identity

    cache = tmp_path / "hub"
    _hub_cache(cache, "s2r-test/one_leg_sim", SIM)
    _hub_cache(cache, "s2r-test/one_leg_real", REAL)
    settings = Settings.from_environ({"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"})
    spec = ["hf:s2r-test/one_leg_sim", "hf:s2r-test/one_leg_real"]
    assert parse_spec(spec) == {"kind": "lerobot", "sim": spec[0], "real": spec[1]}
    fs = load_dataset(spec, settings=settings)
    assert fs.name == "one_leg_sim+one_leg_real"
    assert fs.source["sim"] == spec[0] and fs.source["real"] == spec[1]
    _check_against_truth(fs, truth)
    assert storage_identity(spec, settings=settings) == storage_identity(spec, settings=settings)
    with_rev = load_dataset([f"{spec[0]}@{REVISION}", spec[1]], settings=settings)
    assert len(with_rev) == len(fs)
    # the settings are handed down, never read from the environment by the library
    with pytest.raises(TypeError, match="needs s2r.s settings.*pass settings="):
        load_dataset(spec)


def test_a_hub_id_not_in_the_cache_offline_is_one_clear_error(tmp_path):
    settings = Settings.from_environ({"HF_HUB_CACHE": str(tmp_path / "empty"),
                                      "HF_HUB_OFFLINE": "1"})
    with pytest.raises(DataError, match=r"hf:s2r-test/nothing: dataset 's2r-test/nothing' is "
                                        r"not in .*empty and cannot be downloaded \(offline"):
        load_dataset(["hf:s2r-test/nothing", str(REAL)], settings=settings)
    with pytest.raises(DataError, match="a hub dataset is hf:ORG/NAME"):
        parse_spec(["hf:no-slash", str(REAL)])
    with pytest.raises(DataError, match="one LeRobot dataset; give two"):
        parse_spec("hf:s2r-test/one_leg_sim")


def test_reading_in_order_keeps_the_decoder_open_and_never_seeks_back(monkeypatch):
    from s2r.datasets import lerobot_video

    seeks, opened = [], []
    seek, init = lerobot_video._Decoder._seek, lerobot_video._Decoder.__init__
    monkeypatch.setattr(lerobot_video._Decoder, "_seek",
                        lambda self, t: (seeks.append(t), seek(self, t))[1])
    monkeypatch.setattr(lerobot_video._Decoder, "__init__",
                        lambda self, *a: (opened.append(a[0]), init(self, *a))[1])
    fs = load_dataset([str(SIM), str(REAL)])
    sim = np.flatnonzero(fs.domain == "sim")
    for start in range(0, sim.size, 7):  # batches that do not line up with episodes
        fs.read_images(sim[start:start + 7])
    assert len(opened) == 1 and seeks == [0.0]  # one open, one seek to the start
    fs.read_images(sim[:3])  # a jump back seeks again, on the same open decoder
    assert len(opened) == 1 and len(seeks) == 2
