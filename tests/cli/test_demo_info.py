"""``python -m s2r demo`` and ``python -m s2r info``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from s2r.cli import main
from s2r.worlds.demo.dataset import make_demo
from s2r.datasets.folder import load_folder
from tests.helpers import REPO

DEMO_ARGS = ["--episodes", "2", "--steps", "5", "--gap", "0.3", "--seed", "4",
             "--height", "64", "--width", "80"]
DEMO_KW = dict(episodes=2, steps=5, gap=0.3, seed=4, height=64, width=80)


def python_m_s2r(*argv):
    """Run the real ``python -m s2r`` entry point (a fresh process)."""
    return subprocess.run([sys.executable, "-m", "s2r", *map(str, argv)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "demo_out"
    proc = python_m_s2r("demo", "--out", out, *DEMO_ARGS)
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout
    return out, proc


def test_demo_writes_the_folder_layout(demo_dir):
    out, proc = demo_dir
    assert "wrote the demo (10 sim + 10 real frames, 2 + 2 episodes)" in proc.stdout
    assert (out / "actions.csv").is_file() and (out / "s2r.json").is_file()
    assert len(list((out / "sim").glob("*.png"))) == 10
    assert len(list((out / "masks" / "real").glob("*.png"))) == 10
    # The written folder serves exactly the demo the library renders.
    fs, ref = load_folder(out), make_demo(**DEMO_KW)
    idx = np.arange(len(ref))
    np.testing.assert_array_equal(fs.read_images(idx), ref.read_images(idx))
    np.testing.assert_array_equal(fs.read_masks(idx), ref.read_masks(idx))
    np.testing.assert_array_equal(fs.actions, ref.actions)
    np.testing.assert_array_equal(fs.state, ref.state)
    np.testing.assert_array_equal(fs.episode, ref.episode)
    np.testing.assert_array_equal(fs.step, ref.step)
    assert fs.action_names == ref.action_names and fs.name == "demo"


def test_info_on_the_written_demo(demo_dir, capsys):
    out, _ = demo_dir
    assert main(["info", str(out)]) == 0  # in process: `python -m s2r` is exercised above
    info = json.loads(capsys.readouterr().out)
    assert info["frames"] == {"sim": 10, "real": 10}
    assert info["episodes"] == {"sim": 2, "real": 2}
    assert info["image_shape"] == [64, 80, 3]
    assert info["action_dim"] == 10 and info["has_masks"] is True
    assert info["fingerprint"] == load_folder(out).fingerprint
    assert info["source"]["kind"] == "folder"


def test_info_on_a_demo_spec(capsys):
    assert main(["info", "demo:episodes=1,steps=3,height=64,width=64,paired=true"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["frames"] == {"sim": 3, "real": 3} and info["episodes"] == {"sim": 1, "real": 1}
    assert info["image_shape"] == [64, 64, 3] and info["source"]["paired"] is True


def test_demo_refuses_a_non_empty_folder_unless_overwrite(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("x")
    small = ["--episodes", "1", "--steps", "2", "--height", "64", "--width", "64"]
    assert main(["demo", "--out", str(tmp_path), *small]) == 2
    err = capsys.readouterr().err
    assert "is not empty" in err and "--overwrite" in err
    assert main(["demo", "--out", str(tmp_path), *small, "--overwrite", "--table", "parquet"]) == 0
    assert (tmp_path / "actions.parquet").is_file() and (tmp_path / "keep.txt").exists()
    assert len(load_folder(tmp_path)) == 4


def test_demo_bad_option_is_a_clear_error(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "x"), "--gap", "2"]) == 2
    assert "gap must be in [0, 1], got 2.0" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
