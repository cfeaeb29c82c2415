"""Dataset specs (s2r.datasets.parse_spec, load_dataset): demo options and their errors, paths."""

from __future__ import annotations

import pytest

from s2r.datasets import DEMO_DEFAULTS, load_dataset, parse_spec
from s2r.errors import DataError


def test_parse_spec_demo_options():
    assert DEMO_DEFAULTS == {"episodes": 12, "steps": 24, "gap": 0.5, "seed": 0, "paired": False,
                             "height": 240, "width": 320}  # make_demo's defaults, as documented
    assert parse_spec("demo") == {"kind": "demo", "options": DEMO_DEFAULTS}
    opts = parse_spec("demo:gap=0.25, episodes=3,seed=7,paired=TRUE,height=64,width=96,steps=5")
    assert opts["options"] == {"episodes": 3, "steps": 5, "gap": 0.25, "seed": 7, "paired": True,
                               "height": 64, "width": 96}
    assert parse_spec(["demo:paired=no"])["options"]["paired"] is False


@pytest.mark.parametrize("spec, words", [
    ("demo:gapp=0.5", ["unknown demo option 'gapp'", "episodes"]),
    ("demo:episodes=two", ["episodes='two'", "integer"]),
    ("demo:episodes=0", ["episodes must be >= 1, got 0"]),
    ("demo:height=20", ["height must be in [64, 4096], got 20"]),
    ("demo:gap=1.5", ["gap must be in [0, 1]"]),
    ("demo:gap=big", ["gap='big'", "must be a number"]),
    ("demo:paired=maybe", ["true or false"]),
    ("demo:seed", ["needs a value"]),
])
def test_parse_spec_demo_errors(spec, words):
    with pytest.raises(DataError) as err:
        parse_spec(spec)
    for w in words:
        assert w in str(err.value)


def test_parse_spec_paths(tmp_path, zarr_pair):
    sim_path, real_path, _, _ = zarr_pair
    assert parse_spec(str(tmp_path)) == {"kind": "folder", "path": str(tmp_path)}
    assert parse_spec((sim_path, real_path))["kind"] == "furniturebench"
    (tmp_path / "x.hdf5").write_bytes(b"")
    with pytest.raises(DataError, match="same kind"):
        parse_spec([str(sim_path), str(tmp_path / "x.hdf5")])
    with pytest.raises(DataError, match="give two, SIM REAL"):
        parse_spec(str(sim_path))
    with pytest.raises(DataError, match="3 paths"):
        parse_spec(["a", "b", "c"])
    with pytest.raises(DataError, match=r"\.zarr or \.zarr\.zip \(FurnitureBench\) or \.hdf5"):
        parse_spec([str(tmp_path), str(tmp_path)])
    with pytest.raises(DataError, match="image-key applies to zarr and HDF5"):
        load_dataset(str(tmp_path), image_key="color_image1")
