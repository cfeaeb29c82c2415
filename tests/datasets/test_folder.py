"""The s2r folder layout (s2r.datasets.folder): written and read back, made by hand, JPEG frames."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.datasets import load_dataset
from s2r.datasets.folder import load_folder, write_folder
from s2r.errors import DataError
from s2r.images import FileImages
from tests.helpers.datafiles import (all_pixels, assert_same_frameset, frames, synthetic_frameset,
                                     write_png)


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
