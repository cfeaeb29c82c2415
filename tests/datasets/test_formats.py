"""Dataset formats as plug-ins (issue 34 item 3): a format is one module and one line of
``s2r.datasets.FORMATS``; every pair format goes through the one sim/real join, with one rule
for a state width mismatch; ``state_key=""`` means no state for every format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import s2r.datasets as datasets
from s2r.datasets import FORMATS, get_format, load_dataset, parse_spec, storage_identity
from s2r.datasets.format import LoadRequest, PairFormat
from s2r.errors import DataError
from s2r.frameset import FrameSet
from tests.helpers import REPO
from tests.helpers.datafiles import frames, robomimic_demos, write_hdf5

LEROBOT = REPO / "tests" / "data" / "lerobot"


def test_the_detection_order_is_the_table_order():
    assert [f.name for f in FORMATS] == ["world", "furniturebench", "robomimic", "lerobot",
                                         "folder"]
    assert [f.pair for f in FORMATS] == [False, True, True, True, False]
    assert get_format("robomimic") is FORMATS[2]
    assert get_format("demo") is FORMATS[0]          # every world's kind is the worlds' format
    with pytest.raises(DataError, match="unknown dataset format 'nope'; known: world, "):
        get_format("nope")


def test_names_come_before_marker_files(tmp_path):
    """A ``.zarr`` folder that also holds ``meta/info.json`` is FurnitureBench's: a file name
    is looked at before a marker file, for one part and for two."""
    for name in ("a.zarr", "b.zarr"):
        (tmp_path / name / "meta").mkdir(parents=True)
        (tmp_path / name / "meta" / "info.json").write_text("{}")
    pair = [str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr")]
    assert parse_spec(pair)["kind"] == "furniturebench"
    with pytest.raises(DataError, match="is one furniturebench file; give two"):
        parse_spec(pair[0])


def test_a_path_object_named_demo_is_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo").mkdir()
    assert parse_spec(Path("demo")) == {"kind": "folder", "path": "demo"}
    assert parse_spec("demo")["kind"] == "demo"


# ----------------------------------------------------------------------------- --state-key ''
def _robomimic_pair(root: Path) -> list:
    write_hdf5(root / "sim.hdf5", robomimic_demos([3, 4]))
    write_hdf5(root / "real.hdf5", robomimic_demos([4], seed=1))
    return [str(root / "sim.hdf5"), str(root / "real.hdf5")]


def _zarr_pair(root: Path) -> list:
    from tests.helpers.datafiles import write_zarr

    write_zarr(root / "sim.zarr")
    write_zarr(root / "real.zarr", images=frames(6, seed=2), episode_ends=np.array([6], np.uint32))
    return [str(root / "sim.zarr"), str(root / "real.zarr")]


PAIRS = {"furniturebench": (_zarr_pair, 16), "robomimic": (_robomimic_pair, 9),
         "lerobot": (lambda root: [str(LEROBOT / "one_leg_sim"), str(LEROBOT / "one_leg_real")],
                     22)}


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_an_empty_state_key_means_no_state_for_every_format(tmp_path, kind):
    make, width = PAIRS[kind]
    spec = make(tmp_path)
    usual = load_dataset(spec)
    assert usual.source["kind"] == kind and usual.state.shape[1] == width  # the default
    for empty in ("", " , "):
        fs = load_dataset(spec, state_key=empty)
        assert fs.state is None and len(fs) == len(usual)
        assert np.array_equal(fs.actions, usual.actions)
        state_field = "state_keys" if kind == "robomimic" else "state_key"
        assert fs.source[state_field] is None


def test_an_empty_state_key_in_the_cli_prints_no_state(tmp_path, capsys):
    import json

    from s2r.cli import main

    spec = _zarr_pair(tmp_path)
    assert main(["info", *spec, "--state-key", ""]) == 0
    assert json.loads(capsys.readouterr().out)["state_dim"] is None
    assert main(["info", *spec]) == 0
    assert json.loads(capsys.readouterr().out)["state_dim"] == 16


def test_furniturebench_concatenates_state_keys_like_the_others(tmp_path):
    spec = _zarr_pair(tmp_path)
    fs = load_dataset(spec, state_key="robot_state, action/pos")
    assert fs.state.shape == (len(fs), 26)
    assert np.array_equal(fs.state[:, 16:], fs.actions)
    assert fs.source["state_key"] == "robot_state,action/pos"


# ----------------------------------------------------------------------------- a new format
class NpzFormat(PairFormat):
    """A toy pair format, written as a plug-in would be: one file per domain, ``.npz``."""

    name = "npz"
    keys_label = "npz files"
    one = "npz file"
    hint = ".npz (the toy)"   # actions and state: the defaults, "actions" and "state"

    def claims(self, part) -> bool:
        return str(part).endswith(".npz")

    def load_domain(self, path, domain, request: LoadRequest, shared: dict) -> FrameSet:
        data = np.load(path)
        n = len(data["actions"])
        shared.setdefault("domains", []).append(domain)  # one dict for both domains
        return FrameSet(images=data["images"], actions=data["actions"], domain=np.full(n, domain),
                        episode=np.zeros(n, np.int64), step=np.arange(n),
                        state=None if request.state_columns == [] else data["state"],
                        name=Path(path).stem)


def _npz(path: Path, n: int, state_width: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    np.savez(path, images=frames(n, seed=seed), actions=rng.normal(size=(n, 2)).astype("f4"),
             state=rng.normal(size=(n, state_width)).astype("f4"))
    return str(path)


@pytest.fixture
def with_npz(monkeypatch):
    """The toy format registered the documented way: one entry of FORMATS (before the folder
    layout, which claims any single path)."""
    monkeypatch.setattr(datasets, "FORMATS", (*FORMATS[:-1], NpzFormat(), FORMATS[-1]))


def test_a_new_format_is_one_class_and_one_line(tmp_path, with_npz):
    spec = [_npz(tmp_path / "s.npz", 5, 3, 0), _npz(tmp_path / "r.npz", 4, 3, 1)]
    assert parse_spec(spec) == {"kind": "npz", "sim": spec[0], "real": spec[1]}
    fs = load_dataset(spec)
    assert fs.n_frames("sim") == 5 and fs.n_frames("real") == 4 and fs.state.shape == (9, 3)
    assert fs.name == "s+r" and fs.source["kind"] == "npz"
    assert fs.source["sim"] == str((tmp_path / "s.npz").resolve())
    assert list(np.unique(fs.episode)) == [0, 1]  # real episodes after the sim ones
    assert load_dataset(spec, state_key="").state is None
    before = storage_identity(spec)
    _npz(tmp_path / "r.npz", 6, 3, 2)
    assert storage_identity(spec) != before
    # the generic messages know it
    with pytest.raises(DataError, match="'.*s.npz' is one npz file; give two, SIM REAL"):
        parse_spec(spec[0])
    with pytest.raises(DataError, match=r"two paths must be SIM REAL files of one kind: .* or "
                                        r"\.npz \(the toy\)"):
        parse_spec([spec[0], str(tmp_path)])
    with pytest.raises(DataError, match="--image-key applies to .*LeRobot datasets and npz files"):
        load_dataset(str(tmp_path), image_key="x")


def test_every_pair_format_refuses_different_state_widths_in_one_line(tmp_path, with_npz):
    """The one join's rule: both widths, both places, --state-key; never a silent drop."""
    spec = [_npz(tmp_path / "s.npz", 5, 3, 0), _npz(tmp_path / "r.npz", 4, 7, 1)]
    with pytest.raises(DataError) as err:
        load_dataset(spec)
    message = str(err.value)
    assert "'state' is 3-D in sim (" in message and "s.npz) but 7-D in real (" in message
    assert "--state-key" in message and "--state-key '' for none" in message
    assert "\n" not in message
    assert load_dataset(spec, state_key="").state is None  # the way out the message offers


def test_the_join_refuses_different_action_widths_and_frame_sizes(tmp_path, with_npz):
    sim = _npz(tmp_path / "s.npz", 5, 3, 0)
    np.savez(tmp_path / "r.npz", images=frames(4, seed=1), actions=np.zeros((4, 3), "f4"),
             state=np.zeros((4, 3), "f4"))
    with pytest.raises(DataError, match=r"'actions' is 2-D in sim \(.*\) but 3-D in real "
                                        ".* both files need the same action layout"):
        load_dataset([sim, str(tmp_path / "r.npz")])
    np.savez(tmp_path / "r.npz", images=frames(4, 10, 10, seed=1), actions=np.zeros((4, 2), "f4"),
             state=np.zeros((4, 3), "f4"))
    with pytest.raises(DataError, match="differ in size between domains"):
        load_dataset([sim, str(tmp_path / "r.npz")])
