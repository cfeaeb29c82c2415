"""The hostile-input catalogue of ``train-encoder``, the built-in ``simcnn`` controls' weight
files, users' simcnn files and encoder ids in the config file (issue 33, items 1, 2, 7, 8).

Each ``case_*`` function builds its own files under ``root`` and returns a
:class:`~tests.helpers.hostile.Case`; every case runs through ``s2r.cli.main`` in process
(:func:`~tests.helpers.hostile.run_case`: exit 2, one ``error:`` line with its words, the
user's files unchanged) while training of any kind fails the test, and nothing under
``root`` may appear or change (no weights, no ``.tmp``, no lock file, no folder). The
``train-encoder`` cases name a dataset that does not exist: their error (not the dataset's)
shows that the name, the weights folder and the config file are checked before the dataset
is read. Below the catalogue: running twice, at once, killed midway.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO
from tests.helpers.hostile import Case, run_case
from tests.helpers.simcnn_files import (CONTROL_FILES, LEGACY_CONTROL_INFO, user_info,
                                        with_metadata, write_raw, write_simcnn)

TINY_DEMO = "demo:episodes=2,steps=4,height=64,width=80"
CONFIG = '[[encoders]]\nid = "mine"\ntimm = "resnet18"\n'


def _places(root: Path) -> dict:
    """A config with one entry and an (absent) weights folder of this case only."""
    (root / "encoders.toml").write_text(CONFIG)
    return {"S2R_WEIGHTS_DIR": str(root / "weights"), "S2R_ENCODERS": str(root / "encoders.toml")}


def _train(root: Path, out: str, *extra, env=None, words=(), kept=(), not_words=()) -> Case:
    """``train-encoder`` on a dataset that does not exist, ``--out out``."""
    env = {**_places(root), **(env or {})}
    argv = ["train-encoder", str(root / "no-such-dataset"), "--augment", "0", "--out", out,
            *extra]
    return Case(argv, list(words), env=env, kept=[root / "encoders.toml", *kept],
                not_words=list(not_words))


def _name_case(out: str, *words, not_words=()):
    return lambda root: _train(root, out, words=["--out", *words], not_words=not_words)


# ---- item 1: --out NAME rules (built-in ids and files, paths, odd characters, length) ------
NAMES = {
    "out_control_file": _name_case("simcnn-dr0.v2", "'simcnn-dr0.v2'", "built-in encoder "
                                   "'simcnn-dr0'", "choose another name"),
    "out_control_file_other_version": _name_case("simcnn-dr1.v9", "a version of the weights "
                                                 "file of the built-in control 'simcnn-dr1'"),
    "out_control_file_other_case": _name_case("SimCNN-DR0.5.V3", "'simcnn-dr0.5'"),
    "out_control_id_upper": _name_case("SIMCNN-DR1", "built-in encoder id 'simcnn-dr1' in "
                                       "other letter case"),
    "out_builtin_id_upper": _name_case("PIXELS", "built-in encoder id 'pixels'"),
    "out_builtin_id_mixed_case": _name_case("ResNet18", "built-in encoder id 'resnet18'"),
    "out_builtin_checkpoint_file": _name_case("R3M_ResNet50", "r3m_resnet50.pt"),
    "out_builtin_id_exact": _name_case("state", "built-in encoder id 'state'"),
    "out_slash": _name_case("a/b", "no path separators"),
    "out_absolute_path": _name_case("/tmp/x", "no path separators"),
    "out_backslash": _name_case("a\\b", "no path separators"),
    "out_dot": _name_case(".", "may not start with '.'"),
    "out_dotdot": _name_case("..", "may not start with '.'"),
    "out_hidden": _name_case(".hidden", "may not start with '.'"),
    "out_comma": _name_case("a,b", "may not contain ','"),
    "out_space": _name_case("my cnn", "whitespace"),
    "out_trailing_space": _name_case("cnn ", "whitespace"),
    "out_newline": _name_case("a\nb", "whitespace or control characters"),
    "out_escape_codes": _name_case("a\x1b[31mred", "control characters",
                                   not_words=["\x1b"]),
    "out_too_long": _name_case("a" * 65, "65 characters long", "at most 64"),
    "out_wildcard_star": _name_case("cnn*", "wildcards"),
    "out_wildcard_question": _name_case("cnn?", "wildcards"),
    "out_wildcard_bracket": _name_case("cnn[1]", "wildcards"),
    "out_empty": _name_case("", "is empty"),
    "out_colon": _name_case("ckpt:x", "may not contain ':'"),
    "out_at_random": _name_case("mine2@random", "@random"),
    "out_non_ascii": _name_case("modèle", "ASCII letters"),
    "out_quote": _name_case('a"b', "ASCII letters"),
    "out_in_config": _name_case("mine", "'mine' is already in"),
    "out_in_config_other_case": _name_case("MINE", "'mine' is already in"),
}
for _name, _build in NAMES.items():
    globals()[f"case_{_name}"] = _build


def case_out_weights_file_exists(root):
    (root / "weights").mkdir()
    (root / "weights" / "taken.safetensors").write_bytes(b"user's file")
    return _train(root, "taken", words=["taken.safetensors already exists"],
                  kept=[root / "weights" / "taken.safetensors"])


def case_out_weights_file_dangling_link(root):
    (root / "weights").mkdir()
    (root / "weights" / "ghost.safetensors").symlink_to(root / "nowhere")
    return _train(root, "ghost", words=["ghost.safetensors already exists"])


def case_dataset_missing_after_the_checks(root):
    """Name, folder and config all fine: the dataset's own error, and the weights folder the
    reservation made (with its lock file) is gone again."""
    return _train(root, "cnn", words=["no-such-dataset", "does not exist"])


# ---- item 2: the weights folder and the config file, checked before the dataset is read ----
def case_weights_dir_is_a_file(root):
    (root / "file").write_text("user's")
    return _train(root, "cnn", env={"S2R_WEIGHTS_DIR": str(root / "file")},
                  words=["S2R_WEIGHTS_DIR", "is a file, not a folder"], kept=[root / "file"])


def case_weights_dir_inside_a_file(root):
    (root / "file").write_text("user's")
    return _train(root, "cnn", env={"S2R_WEIGHTS_DIR": str(root / "file" / "w")},
                  words=["S2R_WEIGHTS_DIR", "is inside", "which is a file"],
                  kept=[root / "file"])


def case_weights_dir_name_too_long(root):
    return _train(root, "cnn", env={"S2R_WEIGHTS_DIR": str(root / ("w" * 300))},
                  words=["S2R_WEIGHTS_DIR", "300 bytes long", "at most 255 bytes"])


def case_config_is_a_folder(root):
    (root / "cfg.toml").mkdir()
    return _train(root, "cnn", env={"S2R_ENCODERS": str(root / "cfg.toml")},
                  words=["encoder config", "cfg.toml", "is a folder"])


def case_config_inside_a_file(root):
    (root / "file").write_text("user's")
    return _train(root, "cnn", env={"S2R_ENCODERS": str(root / "file" / "enc.toml")},
                  words=["encoder config", "is a file, not a folder"], kept=[root / "file"])


def case_config_is_a_fifo(root):
    os.mkfifo(root / "fifo.toml")
    return _train(root, "cnn", env={"S2R_ENCODERS": str(root / "fifo.toml")},
                  words=["encoder config", "fifo.toml", "FIFO"])


def case_config_dangling_link(root):
    (root / "link.toml").symlink_to(root / "gone.toml")
    return _train(root, "cnn", env={"S2R_ENCODERS": str(root / "link.toml")},
                  words=["link.toml is a link to", "which does not exist"])


def case_config_unparseable(root):
    case = _train(root, "cnn", words=["encoders.toml: cannot parse"])
    (root / "encoders.toml").write_text("[[encoders]\nid=")
    return case


def case_config_holds_an_odd_id(root):
    case = _train(root, "cnn", words=["encoders.toml entry 1", "'a,b' may not contain ','"])
    (root / "encoders.toml").write_text('[[encoders]]\nid = "a,b"\ntimm = "resnet18"\n')
    return case


# ---- item 7: options reported as given, checked before the dataset is read -----------------
def _option_case(option: str, value: str, *words):
    def build(root):
        case = _train(root, "cnn", words=list(words))
        i = case.argv.index(option) if option in case.argv else None
        if i is None:
            case.argv += [option, value]
        else:
            case.argv[i + 1] = value
        return case
    return build


OPTIONS = {
    "augment_just_above_one": ("--augment", "1.0000001", "--augment: expected a strength in "
                               "[0, 1], got '1.0000001'"),
    "augment_not_a_number": ("--augment", "strong", "got 'strong'"),
    "augment_overflows": ("--augment", "1e400", "got '1e400'"),
    "augment_negative_zero_point": ("--augment", "-0.0001", "got '-0.0001'"),
    "epochs_too_many": ("--epochs", "10001", "--epochs must be an integer in [1, 10,000], "
                        "got 10001"),
    "seed_too_big": ("--seed", str(2**40), "--seed must be an integer in [0, 4,294,967,295]"),
    "max_frames_zero": ("--max-frames", "0", "--max-frames must be an integer >= 1, got 0"),
}
for _name, (_option, _value, _words) in OPTIONS.items():
    globals()[f"case_{_name}"] = _option_case(_option, _value, _words)


# ---- item 7: odd ids in the encoder config file ---------------------------------------------
def _config_id_case(encoder_id: str, *words):
    def build(root):
        (root / "encoders.toml").write_text(
            f'[[encoders]]\nid = "{encoder_id}"\ntimm = "resnet18"\n')
        return Case(["encoders"], ["encoders.toml entry 1", *words],
                    env={"S2R_ENCODERS": str(root / "encoders.toml")},
                    kept=[root / "encoders.toml"])
    return build


CONFIG_IDS = {
    "config_id_builtin_upper": ("PIXELS", "differs only in case from 'pixels'"),
    "config_id_control_upper": ("SIMCNN-DR0", "differs only in case from 'simcnn-dr0'"),
    "config_id_comma": ("a,b", "may not contain ','"),
    "config_id_newline": ("a\\nb", "whitespace or control characters"),
    "config_id_tab": ("a\\tb", "whitespace or control characters"),
    "config_id_space": ("my r18", "whitespace"),
    "config_id_star": ("r18*", "wildcards"),
    "config_id_question": ("r1?", "wildcards"),
    "config_id_bracket": ("r[18]", "wildcards"),
    "config_id_too_long": ("r" * 101, "101 characters long; ids are at most 100"),
    "config_id_escape": ("a\\u001b[31mred", "control characters"),
}
for _name, (_id, *_words) in CONFIG_IDS.items():
    globals()[f"case_{_name}"] = _config_id_case(_id, *_words)


# ---- item 1: what is at a built-in control's path -------------------------------------------
def _control_case(fill, *words, cid: str = "simcnn-dr0", kept=()):
    """``embed`` with control ``cid`` whose weights file is made by ``fill(path, root)``."""
    def build(root):
        path = root / "weights" / CONTROL_FILES[cid]
        path.parent.mkdir()
        fill(path, root)
        out = root / "e.npz"
        return Case(["embed", TINY_DEMO, "--encoder", cid, "--no-cache", "--out", str(out)],
                    [CONTROL_FILES[cid], *words, "delete it", "trains"],
                    outputs=[out], env={"S2R_WEIGHTS_DIR": str(root / "weights")},
                    kept=[p(root) if callable(p) else p for p in kept])
    return build


def _legacy(cid, **changes):
    return lambda path, root: write_simcnn(path, {**LEGACY_CONTROL_INFO[cid], **changes})


def _recipe(cid, **changes):
    from s2r.encoders import get_spec
    from s2r.encoders.backends.simcnn import control_recipe

    def fill(path, root):
        recipe = {**control_recipe(get_spec(cid)), **changes}
        write_simcnn(path, {**LEGACY_CONTROL_INFO[cid], "recipe": recipe})
    return fill


def _link_to_control(path, root):
    write_simcnn(root / "elsewhere.safetensors", LEGACY_CONTROL_INFO["simcnn-dr0"])
    path.symlink_to(root / "elsewhere.safetensors")


CONTROL_FILE_CASES = {
    "control_is_a_folder": (lambda p, r: p.mkdir(), ["is a folder"]),
    "control_is_a_fifo": (lambda p, r: os.mkfifo(p), ["is a FIFO"]),
    "control_is_a_link": (_link_to_control, ["is a link"],
                          {"kept": [lambda r: r / "elsewhere.safetensors"]}),
    "control_is_a_link_to_a_device": (lambda p, r: p.symlink_to("/dev/zero"), ["is a link"]),
    "control_is_empty": (lambda p, r: p.write_bytes(b""), ["header length is missing"]),
    "control_is_garbage": (lambda p, r: p.write_bytes(os.urandom(4096)), ["header length"]),
    "control_is_a_user_simcnn": (lambda p, r: write_simcnn(p, user_info()),
                                 ["not the simcnn-dr0 control s2r trains: it records no "
                                  "randomisation"]),
    "control_has_other_randomisation": (_legacy("simcnn-dr0", randomisation=1.0),
                                        ["records randomisation 1.0 where v2 has 0.0"]),
    "control_has_the_old_episodes": (_legacy("simcnn-dr1", episodes=750),
                                     ["records episodes 750 where v3 has 1500"],
                                     {"cid": "simcnn-dr1"}),
    "control_is_another_control": (lambda p, r: write_simcnn(
        p, LEGACY_CONTROL_INFO["simcnn-dr1"]), ["randomisation"]),
    "control_recipe_other_version": (_recipe("simcnn-dr0", version=1),
                                     ["records version 1 where v2 has 2"]),
    "control_recipe_other_seed": (_recipe("simcnn-dr0", seed=3), ["records seed 3 where v2 has 0"]),
    "control_recipe_of_another_id": (_recipe("simcnn-dr0.5", control=None),
                                      ["records no control where v3 has 'simcnn-dr0.5'"],
                                      {"cid": "simcnn-dr0.5"}),
    "control_right_metadata_wrong_shapes": (
        lambda p, r: write_simcnn(p, LEGACY_CONTROL_INFO["simcnn-dr0"], dim=64),
        ["tensors are not those of a 128-wide simcnn encoder: '13.bias' is 'F32' [64], "
         "expected 'F32' [128]"]),
    "control_header_length_huge": (lambda p, r: write_raw(p, {}, length=2**60),
                                   ["header length"]),
    "control_metadata_not_json": (lambda p, r: write_raw(p, *with_metadata("{nope")),
                                  ["s2r_simcnn metadata is not JSON"]),
}
for _name, (_fill, _words, *_more) in CONTROL_FILE_CASES.items():
    globals()[f"case_{_name}"] = _control_case(_fill, *_words, **(_more[0] if _more else {}))


# ---- item 1: users' simcnn files with hostile metadata --------------------------------------
def _user_case(fill, *words, command=("encoders",)):
    """A config entry ``simcnn = "mine.safetensors"`` whose file ``fill(path)`` makes."""
    def build(root):
        path = root / "mine.safetensors"
        fill(path)
        (root / "encoders.toml").write_text(f'[[encoders]]\nid = "mine"\nsimcnn = "{path}"\n')
        argv = [a.replace("{root}", str(root)) for a in command]
        return Case(argv, ["encoder config", "mine.safetensors", *words],
                    env={"S2R_ENCODERS": str(root / "encoders.toml")},
                    kept=[root / "encoders.toml"], outputs=[root / "e.npz"])
    return build


_EMBED = ("embed", TINY_DEMO, "--encoder", "mine", "--no-cache", "--out", "{root}/e.npz")
USER_FILES = {
    "user_metadata_not_json": (lambda p: write_raw(p, *with_metadata("not json")),
                               ["s2r_simcnn metadata is not JSON"]),
    "user_metadata_a_list": (lambda p: write_raw(p, *with_metadata("[1, 2]")),
                             ["not a JSON object"]),
    "user_dim_text": (lambda p: write_simcnn(p, user_info(dim="abc"), dim=128),
                      ["dim must be an integer in [1, 4096], got 'abc'"]),
    "user_dim_huge": (lambda p: write_simcnn(p, user_info(dim=10**9), dim=128),
                      ["dim must be an integer in [1, 4096], got 1000000000"],
                      {"command": _EMBED}),
    "user_dim_bool": (lambda p: write_simcnn(p, user_info(dim=True), dim=128),
                      ["dim must be an integer"]),
    "user_input_size_huge": (lambda p: write_simcnn(p, user_info(input_size=[100000, 100000])),
                             ["input_size must be [height, width], integers in [1, 1024]"],
                             {"command": _EMBED}),
    "user_input_size_text": (lambda p: write_simcnn(p, {**user_info(), "input_size": "big"}),
                             ["input_size must be"]),
    "user_no_metadata": (lambda p: write_raw(p, {}), ["no s2r_simcnn metadata"]),
    "user_header_not_json": (lambda p: write_raw(p, b"{not json" + b" " * 20),
                             ["its header is not JSON"]),
    "user_header_deeply_nested": (lambda p: write_raw(p, b"[" * 200_000 + b"]" * 200_000),
                                  ["its header is not JSON"]),
    "user_header_length_huge": (lambda p: write_raw(p, {}, length=2**63),
                                ["header length"]),
    "user_header_over_bound": (lambda p: write_raw(p, b"{" + b" " * (1 << 20) + b"}"),
                               ["header length is 1,048,578 bytes", "expected 2 to 1,048,576"]),
    "user_file_over_bound": (lambda p: os.truncate(_touch(p), (64 << 20) + 1),
                             ["over the limit of 67,108,864 bytes"]),
    "user_tensor_offsets_outside": (lambda p: write_raw(p, *_shifted_offsets()),
                                    ["data offsets"]),
    "user_tensor_extra": (lambda p: write_raw(p, *_extra_tensor()),
                          ["'extra' is 'F32' [1], expected no such tensor"]),
    "user_file_is_a_fifo": (lambda p: os.mkfifo(p), ["FIFO"]),
    "user_file_is_a_folder": (lambda p: p.mkdir(), ["is a folder"]),
    "user_file_missing": (lambda p: None, ["does not exist"]),
}


def _touch(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _shifted_offsets():
    import json

    header, data = with_metadata(json.dumps(user_info()))
    header["0.weight"]["data_offsets"] = [10**12, 10**12 + 3456]
    return header, data


def _extra_tensor():
    import json

    header, data = with_metadata(json.dumps(user_info()))
    header["extra"] = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    return header, data


for _name, (_fill, _words, *_more) in USER_FILES.items():
    globals()[f"case_{_name}"] = _user_case(_fill, *_words, **(_more[0] if _more else {}))


CASES = {name[5:]: fn for name, fn in globals().copy().items() if name.startswith("case_")}


def _tree(root: Path) -> dict:
    """Every path under ``root`` -> its bytes (files), "dir", "link:TARGET" or its kind."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            out[str(path)] = f"link:{os.readlink(path)}"
        elif path.is_dir():
            out[str(path)] = "dir"
        elif path.is_file():
            out[str(path)] = path.read_bytes()
        else:
            out[str(path)] = "special"
    return out


@pytest.fixture
def no_training(monkeypatch):
    """Any training, of a user encoder or a built-in control, fails the test."""
    from s2r.encoders import simcnn
    from s2r.encoders.backends import simcnn as backend

    def trained(*args, **kwargs):
        raise AssertionError("a hostile case trained an encoder")

    monkeypatch.setattr(simcnn, "train_simcnn", trained)
    monkeypatch.setattr(backend, "train_control", trained)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_main_exits_2_with_message(tmp_path, capsys, no_training, name):
    """One line, exit 2, nothing trained, nothing under the case's folder written or changed
    (no weights, no ``.tmp``, no lock file, no folder)."""
    case = CASES[name](tmp_path)
    before = _tree(tmp_path)
    run_case(case, capsys, name)
    assert _tree(tmp_path) == before


# ---- item 2: safe to run twice --------------------------------------------------------------
@pytest.fixture
def places(tmp_path, monkeypatch):
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("S2R_ENCODERS", str(tmp_path / "encoders.toml"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _frameset():
    from tests.helpers.datafiles import synthetic_frameset

    return synthetic_frameset(masks=False)


def _fake_training(monkeypatch, before_return=None):
    """``train_simcnn`` returning a seeded SimCNN's tensors at once (after
    ``before_return()``)."""
    from s2r.encoders import simcnn
    from tests.helpers.simcnn_files import simcnn_state

    def train(frames, targets, **kwargs):
        if before_return is not None:
            before_return()
        return simcnn_state(), {"loss": [1.0], "frames": len(frames), "targets": 4,
                                "augment": 0.0, "seed": 0, "epochs": 1, "dim": 128,
                                "input_size": [48, 64]}

    monkeypatch.setattr(simcnn, "train_simcnn", train)


def test_a_second_run_with_the_same_out_is_refused_while_the_first_trains(places,
                                                                          monkeypatch):
    from s2r.errors import EncoderError
    from s2r.pipeline.train_encoder import train_encoder

    training, finish = threading.Event(), threading.Event()
    _fake_training(monkeypatch, lambda: (training.set(), finish.wait(30)))
    results = {}
    first = threading.Thread(target=lambda: results.setdefault(
        "first", train_encoder(_frameset(), "cnn", augment=0.0)))
    first.start()
    assert training.wait(30)
    lock = places / "weights" / ".cnn.safetensors.lock"
    assert lock.exists()
    with pytest.raises(EncoderError, match=r"another train-encoder run is writing .*cnn"
                                           r"\.safetensors now"):
        train_encoder(_frameset(), "cnn", augment=0.0)
    finish.set()
    first.join(30)
    assert results["first"]["id"] == "cnn"
    # one consistent encoder: config entry and weights file, the lock gone
    from s2r.encoders import build_encoder, get_spec
    from s2r.settings import current

    settings = current()  # the places' weights folder and encoder config
    assert get_spec("cnn", settings=settings).checkpoint.file == str(
        places / "weights" / "cnn.safetensors")
    encoder = build_encoder("cnn", device="cpu", settings=settings)
    assert encoder.embed(np.zeros((1, 12, 16, 3), np.uint8)).shape == (1, 128)
    assert (places / "encoders.toml").read_text().count('id = "cnn"') == 1
    assert sorted(p.name for p in (places / "weights").iterdir()) == ["cnn.safetensors"]
    with pytest.raises(EncoderError, match="already exists"):      # and afterwards
        train_encoder(_frameset(), "cnn", augment=0.0)


def test_runs_with_other_names_at_once_keep_every_config_entry(places, monkeypatch):
    from s2r.pipeline.train_encoder import train_encoder

    barrier = threading.Barrier(4, timeout=30)
    _fake_training(monkeypatch, barrier.wait)
    errors = []

    def run(name):
        try:
            train_encoder(_frameset(), name, augment=0.0)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f"cnn{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    from s2r.encoders.config import check_encoder_config

    assert sorted(c[0] for c in check_encoder_config(places / "encoders.toml")) == [
        "cnn0", "cnn1", "cnn2", "cnn3"]
    assert not list(places.glob(".*.lock")) and not list((places / "weights").glob(".*"))


def test_a_file_written_meanwhile_is_neither_replaced_nor_deleted(places, monkeypatch):
    from s2r.errors import EncoderError
    from s2r.pipeline.train_encoder import train_encoder

    theirs = places / "weights" / "cnn.safetensors"
    _fake_training(monkeypatch, lambda: theirs.write_bytes(b"another program's file"))
    with pytest.raises(EncoderError, match="appeared while this run trained"):
        train_encoder(_frameset(), "cnn", augment=0.0)
    assert theirs.read_bytes() == b"another program's file"
    assert "cnn" not in (places / "encoders.toml").read_text() if \
        (places / "encoders.toml").exists() else True
    assert sorted(p.name for p in (places / "weights").iterdir()) == ["cnn.safetensors"]


def test_a_failing_registration_deletes_its_own_weights_only(places, monkeypatch):
    from s2r.errors import EncoderError
    from s2r.pipeline import train_encoder as pipeline

    _fake_training(monkeypatch)
    weights = places / "weights" / "cnn.safetensors"

    def fails(*args, **kwargs):
        raise EncoderError("the config could not be written")

    monkeypatch.setattr(pipeline, "register_simcnn_entry", fails)
    with pytest.raises(EncoderError, match="could not be written"):
        pipeline.train_encoder(_frameset(), "cnn", augment=0.0)
    assert not weights.exists()                                    # ours: removed

    def replaced_then_fails(*args, **kwargs):
        weights.unlink()
        weights.write_bytes(b"another run's file")                # not ours any more
        raise EncoderError("the config could not be written")

    monkeypatch.setattr(pipeline, "register_simcnn_entry", replaced_then_fails)
    with pytest.raises(EncoderError):
        pipeline.train_encoder(_frameset(), "cnn", augment=0.0)
    assert weights.read_bytes() == b"another run's file"


def test_config_and_weights_keep_the_users_file_mode(places, monkeypatch):
    from s2r.pipeline.train_encoder import train_encoder

    _fake_training(monkeypatch)
    config = places / "encoders.toml"
    config.write_text(CONFIG)
    config.chmod(0o640)
    old = os.umask(0o022)
    try:
        train_encoder(_frameset(), "cnn", augment=0.0)
    finally:
        os.umask(old)
    assert oct(config.stat().st_mode & 0o777) == "0o640"
    assert oct((places / "weights" / "cnn.safetensors").stat().st_mode & 0o777) == "0o644"
    assert 'id = "mine"' in config.read_text() and 'id = "cnn"' in config.read_text()


def test_a_linked_config_gets_the_entry_and_stays_a_link(places, monkeypatch):
    from s2r.pipeline.train_encoder import train_encoder

    _fake_training(monkeypatch)
    (places / "dotfiles").mkdir()
    real = places / "dotfiles" / "encoders.toml"
    real.write_text(CONFIG)
    (places / "encoders.toml").symlink_to(real)
    train_encoder(_frameset(), "cnn", augment=0.0)
    assert (places / "encoders.toml").is_symlink()
    assert 'id = "cnn"' in real.read_text()


def test_a_missing_s2r_encoders_file_is_created(places, monkeypatch):
    from s2r.pipeline.train_encoder import train_encoder

    _fake_training(monkeypatch)
    assert not (places / "encoders.toml").exists()
    result = train_encoder(_frameset(), "cnn", augment=0.0)
    assert result["config"] == str(places / "encoders.toml")
    assert 'id = "cnn"' in (places / "encoders.toml").read_text()


def test_a_lock_left_by_a_dead_run_is_not_stale(places, monkeypatch):
    """A lock file without a holder (its process was killed) is taken and removed."""
    from s2r.pipeline.train_encoder import train_encoder

    _fake_training(monkeypatch)
    (places / "weights").mkdir()
    (places / "weights" / ".cnn.safetensors.lock").write_text("")
    train_encoder(_frameset(), "cnn", augment=0.0)
    assert sorted(p.name for p in (places / "weights").iterdir()) == ["cnn.safetensors"]


# ---- item 8 and item 2 with real processes ---------------------------------------------------
def _s2r(args, cwd: Path, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(REPO), "S2R_WEIGHTS_DIR": str(cwd / "weights"),
           "S2R_ENCODERS": str(cwd / "encoders.toml")}
    return subprocess.Popen([sys.executable, "-m", "s2r", *args], cwd=cwd, env=env, **kwargs)


def _squares(root: Path) -> Path:
    """A folder dataset of 64 sim frames: about 0.1-0.2 s of training per epoch."""
    from s2r.datasets.folder import write_folder
    from tests.helpers.datafiles import synthetic_frameset

    return write_folder(synthetic_frameset(sim_eps=(32, 32), real_eps=(2,), h=48, w=64,
                                           masks=False), root / "squares")


@pytest.mark.slow
def test_kill_9_midway_then_rerun_gives_the_same_encoder(tmp_path):
    """``kill -9`` while training: no weights file, no entry, no stale lock; the rerun gives
    the encoder that a run never interrupted gives (run alongside, in another folder)."""
    from safetensors.torch import load_file

    data = _squares(tmp_path)
    argv = ["train-encoder", str(data), "--augment", "0", "--out", "k", "--epochs", "15"]
    clean = tmp_path / "clean"
    clean.mkdir()
    reference = _s2r(argv, clean, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        proc = _s2r(argv, tmp_path, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 120
        while "simcnn epoch 1/" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.02)
        assert proc.poll() is None, "training ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    assert "simcnn epoch 15/15" not in log.read_text()           # killed midway
    assert not (tmp_path / "weights" / "k.safetensors").exists()
    assert not (tmp_path / "encoders.toml").exists()
    assert (tmp_path / "weights" / ".k.safetensors.lock").exists()  # left, but not held
    again = _s2r(argv, tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert "trained k on 64 sim frames" in out
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["k.safetensors"]
    assert 'id = "k"' in (tmp_path / "encoders.toml").read_text()
    assert reference.communicate(timeout=300) and reference.returncode == 0
    a = load_file(str(tmp_path / "weights" / "k.safetensors"))
    b = load_file(str(clean / "weights" / "k.safetensors"))
    assert a.keys() == b.keys() and all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


@pytest.mark.slow
def test_two_processes_with_the_same_out_give_one_encoder_or_one_refusal(tmp_path):
    data = _squares(tmp_path)
    argv = ["train-encoder", str(data), "--augment", "0", "--out", "twin", "--epochs", "5"]
    procs = [_s2r(argv, tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.communicate(timeout=300), p.returncode) for p in procs]
    codes = sorted(code for _, code in results)
    assert codes == [0, 2], results
    refusal = next(err for (out, err), code in results if code == 2)
    lines = [line for line in refusal.replace("\r", "\n").splitlines() if "error" in line]
    assert len(lines) == 1 and ("another train-encoder run is writing" in lines[0]
                                or "already exists" in lines[0]), refusal
    from s2r.encoders.config import check_encoder_config

    assert [c[0] for c in check_encoder_config(tmp_path / "encoders.toml")] == ["twin"]
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["twin.safetensors"]
