"""s2r.atomic: outputs written all at once, under a legal temporary name, keeping the mode of
the file they replace."""

from __future__ import annotations

import os
import stat

import pytest

from s2r.atomic import NAME_MAX, atomic_path, temporary_sibling


@pytest.mark.parametrize("name", ["scores.json", "x" * 250 + ".svg", "x" * 255,
                                  "é" * 120 + ".pdf", "a." + "b" * 250])
def test_temporary_sibling_stays_a_legal_name(tmp_path, name):
    target = tmp_path / name
    tmp = temporary_sibling(target)
    assert tmp.parent == tmp_path
    assert len(tmp.name.encode()) <= NAME_MAX
    assert tmp.name.startswith(".") and tmp.name != target.name
    if target.suffix and len(target.suffix.encode()) <= 32:
        assert tmp.suffix == target.suffix   # writers choose a format by the suffix


def test_a_250_character_output_is_written(tmp_path):
    target = tmp_path / ("f" * 246 + ".svg")
    with atomic_path(target) as tmp:
        tmp.write_text("<svg/>")
    assert target.read_text() == "<svg/>"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "s2r_encoders.toml"
    target.write_text("old")
    os.chmod(target, 0o644)
    with atomic_path(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    os.chmod(target, 0o600)
    with atomic_path(target) as tmp:
        tmp.write_text("newer")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_failed_write_leaves_the_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("kept")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert target.read_text() == "kept"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
