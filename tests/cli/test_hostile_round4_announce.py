"""Work that starts unannounced: a built-in control trained on first use.

Every command that may build a control (``score``, ``embed``, ``project``, ``figure``,
``saliency``, ``validate``) goes through one path (:func:`s2r.cli.announce_first_use`, on
:func:`s2r.encoders.first_use.first_use_controls`): before any work, one ``note:`` line per
control to train (its measured minutes, where it is saved), a weights folder nothing can be
saved in refused as one ``error:`` line naming it and ``S2R_WEIGHTS_DIR`` within seconds, and
the training itself behind a progress bar. No test here trains anything: ``train_control`` is
replaced (refused, or a stand-in that writes a control's file at once).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from tests.cli.test_hostile_round4 import SMALL_VALIDATION, TINY_DEMO
from tests.helpers.hostile import Case, run_case
from tests.helpers.simcnn_files import LEGACY_CONTROL_INFO, write_simcnn


@pytest.fixture
def no_training(monkeypatch):
    """Training a control (minutes) fails the test: the refusal must come first."""
    def train(*args, **kwargs):
        raise AssertionError("a control began training")

    monkeypatch.setattr("s2r.encoders.backends.simcnn.train_control", train)


@pytest.fixture
def quick_training(monkeypatch):
    """A stand-in for ``train_control`` that reports two epochs and writes the control's file
    (random weights, its recipe) at once; returns the ids it was called for."""
    from s2r.encoders.backends.simcnn import control_recipe
    from s2r.encoders.simcnn import SimCNN  # noqa: F401  (the real module is importable)

    called = []

    def train(spec, path, progress=None, settings=None):
        for epoch in (1, 2):
            if progress is not None:
                progress(epoch, 2, f"epoch {epoch}/2")
        write_simcnn(path, {**LEGACY_CONTROL_INFO[spec.id], "recipe": control_recipe(spec)})
        called.append(spec.id)
        return path

    monkeypatch.setattr("s2r.encoders.backends.simcnn.train_control", train)
    return called


def _argv(command: str, control: str, root: Path) -> tuple[list, list]:
    """The command line of ``command`` using ``control``, and what it would write."""
    out = root / "out"
    lines = {
        "score": (["score", TINY_DEMO, "--encoders", f"{control},pixels", "--no-cache",
                   "--out", str(out.with_suffix(".json"))], [out.with_suffix(".json")]),
        "embed": (["embed", TINY_DEMO, "--encoder", control, "--no-cache",
                   "--out", str(out.with_suffix(".npz"))], [out.with_suffix(".npz")]),
        "project": (["project", TINY_DEMO, "--encoder", control,
                     "--out", str(out.with_suffix(".csv"))], [out.with_suffix(".csv")]),
        "saliency": (["saliency", TINY_DEMO, "--encoder", control, "--out", str(out)], [out]),
        "figure-scores": (["figure", "scores", TINY_DEMO, "--encoders", f"{control},pixels",
                           "--out", str(out.with_suffix(".svg"))],
                          [out.with_suffix(".svg")]),
        "figure-tsne": (["figure", "tsne", TINY_DEMO, "--encoder", control,
                         "--out", str(out.with_suffix(".svg"))], [out.with_suffix(".svg")]),
        "figure-saliency": (["figure", "saliency", TINY_DEMO, "--encoder", control,
                             "--out", str(out.with_suffix(".svg"))], [out.with_suffix(".svg")]),
        "figure-layers": (["figure", "layers", TINY_DEMO, "--encoders", control,
                           "--out", str(out.with_suffix(".svg"))], [out.with_suffix(".svg")]),
        "validate": (["validate", TINY_DEMO, "--encoders", f"state,pixels,{control}",
                      *SMALL_VALIDATION, "--out", str(out.with_suffix(".report.json"))],
                     [out.with_suffix(".report.json")]),
    }
    return lines[command]


COMMANDS = ["score", "embed", "project", "saliency", "figure-scores", "figure-tsne",
            "figure-saliency", "figure-layers", "validate"]


def _read_only_mount() -> Path:
    """A folder no file can be created in, even by root (sysfs); skip where there is none."""
    here = Path("/sys")
    try:
        fd, probe = tempfile.mkstemp(dir=here)
    except OSError:
        return here / "s2r-weights"
    os.close(fd)
    os.unlink(probe)
    pytest.skip("/sys takes new files here")


def _unwritable(variant: str, root: Path) -> tuple[Path, list]:
    """A weights folder nothing can be saved in, and the words its error line holds."""
    if variant == "read-only-folder":
        if os.geteuid() == 0:
            pytest.skip("root writes in a 0o555 folder; the read-only-mount and under-a-file "
                        "variants refuse it as root")
        folder = root / "weights"
        folder.mkdir()
        folder.chmod(0o555)
        return folder, ["cannot be written", "Permission denied"]
    if variant == "read-only-mount":
        return _read_only_mount(), ["cannot be written"]
    (root / "file").write_text("not a folder")
    return root / "file" / "weights", ["is inside", "which is a file"]


@pytest.mark.parametrize("variant", ["read-only-folder", "read-only-mount", "under-a-file"])
@pytest.mark.parametrize("command", COMMANDS)
def test_an_unwritable_weights_folder_is_one_line_before_any_work(command, variant, tmp_path,
                                                                  capsys, no_training):
    folder, words = _unwritable(variant, tmp_path)
    argv, outputs = _argv(command, "simcnn-dr0", tmp_path)
    case = Case(argv, ["S2R_WEIGHTS_DIR", str(folder), *words], outputs=outputs,
                env={"S2R_WEIGHTS_DIR": str(folder)})
    try:
        run_case(case, capsys, command, max_seconds=15)
    finally:
        if folder.is_dir():
            folder.chmod(0o755)


def test_the_note_names_the_measured_minutes_and_the_file(tmp_path):
    from s2r.encoders.first_use import first_use_controls
    from s2r.settings import Settings

    settings = Settings.from_environ({"S2R_WEIGHTS_DIR": str(tmp_path / "w")})
    items = first_use_controls(["pixels", "mw-simcnn-dr1", "mw-simcnn-dr0", "mw-simcnn-dr1"],
                               settings=settings)
    assert [i.id for i in items] == ["mw-simcnn-dr1", "mw-simcnn-dr0"]   # each once, in order
    path = tmp_path / "w" / "mw-simcnn-dr0.v2.safetensors"
    assert items[1].note == (f"training control mw-simcnn-dr0 on first use (measured ~3 min on "
                             f"2 cores; saved to {path})")
    assert "~12 min" in items[0].note
    assert first_use_controls(["pixels", "resnet18@random"], settings=settings) == []


def test_a_trained_control_is_not_announced(tmp_path):
    from s2r.encoders import get_spec
    from s2r.encoders.backends.simcnn import control_recipe
    from s2r.encoders.first_use import first_use_controls
    from s2r.encoders.locate import expected_path
    from s2r.settings import Settings

    settings = Settings.from_environ({"S2R_WEIGHTS_DIR": str(tmp_path / "w")})
    spec = get_spec("simcnn-dr0", settings=settings)
    write_simcnn(expected_path(spec, settings),
                 {**LEGACY_CONTROL_INFO["simcnn-dr0"], "recipe": control_recipe(spec)})
    (tmp_path / "w").chmod(0o555)          # nothing to save: an unwritable folder is fine
    try:
        assert first_use_controls(["simcnn-dr0"], settings=settings,
                                  dataset=TINY_DEMO) == []
    finally:
        (tmp_path / "w").chmod(0o755)


@pytest.mark.parametrize("command", ["embed", "figure-tsne"])
def test_first_use_is_announced_then_trained_behind_a_bar(command, tmp_path, monkeypatch,
                                                         capsys, quick_training):
    from s2r.cli import main

    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(tmp_path / "w"))
    argv, outputs = _argv(command, "simcnn-dr0", tmp_path)
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert quick_training == ["simcnn-dr0"]                     # trained once, up front
    path = tmp_path / "w" / "simcnn-dr0.v2.safetensors"
    note = (f"note: training control simcnn-dr0 on first use (measured ~15 min on 2 cores; "
            f"saved to {path})")
    lines = [line for line in re.split(r"[\r\n]+", err) if line.strip()]
    assert note in lines, err
    assert lines.index(note) == 0, err                         # before any other output
    assert any(line.startswith("training simcnn-dr0") and "2/2" in line for line in lines), err
    assert path.is_file() and all(p.exists() for p in outputs)


def test_a_control_of_another_world_is_refused_before_its_note(tmp_path, capsys, no_training):
    argv, outputs = _argv("embed", "mw-simcnn-dr0", tmp_path)
    line = run_case(Case(argv, ["mw-simcnn-dr0", "Meta-World"], outputs=outputs), capsys,
                    max_seconds=15)
    assert "note:" not in line


def test_the_library_validation_checks_the_weights_folder_before_drawing(tmp_path,
                                                                        monkeypatch,
                                                                        no_training):
    """The dashboard's "Run validation" calls the library: the same refusal, before a frame
    is drawn."""
    from s2r.closedloop.validation import validate
    from s2r.errors import EncoderError
    from s2r.settings import Settings
    from s2r.worlds import WORLDS

    monkeypatch.setattr(type(WORLDS["demo"]), "dataset",
                        lambda *a, **k: pytest.fail("a frame was drawn"))
    (tmp_path / "file").write_text("x")
    settings = Settings.from_environ({"S2R_WEIGHTS_DIR": str(tmp_path / "file" / "w")})
    with pytest.raises(EncoderError, match="S2R_WEIGHTS_DIR"):
        validate(TINY_DEMO, ["state", "pixels", "simcnn-dr0"], [0.0, 1.0],
                 cache=False, settings=settings)
