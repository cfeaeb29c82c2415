"""Hostile inputs, round 4: an output that is an input. No command writes over a file it
reads in the same run, into a folder it reads, over a FIFO, a device or a link, or over an
existing file that s2r did not write as that kind of output (without ``--force``).

Each refusal goes through :func:`~tests.helpers.hostile.run_case` (exit 2, one line, the
user's files byte for byte unchanged, no stall); the runs that must succeed use a tiny demo
and the ``pixels`` encoder (no model to build).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from s2r.cli import main
from s2r.errors import S2RError
from s2r.outputs import check_output, record_output, records_folder, written_as
from tests.helpers.hostile import Case, run_case

TINY_DEMO = "demo:episodes=2,steps=4,height=64,width=80"
CONFIG = '[[encoders]]\nid = "mine"\ntimm = "resnet18"\n'
USERS = "the user's own notes\n"


def _score(out, *extra):
    return ["score", TINY_DEMO, "--encoders", "pixels", "--out", str(out), "--n-boot", "20",
            "--pca-dim", "4", *extra]


def _users_file(path: Path) -> Path:
    path.write_text(USERS)
    return path


def case_validate_out_is_the_encoder_config(root):
    config = root / "encoders.json"     # a config file whose name a report could have
    config.write_text(CONFIG)
    return Case(["validate", TINY_DEMO, "--out", str(config)],
                ["--out", "the encoder configuration (S2R_ENCODERS)", "the same file"],
                env={"S2R_ENCODERS": str(config)}, kept=[config])


def case_out_inside_the_weights_folder(root):
    weights = root / "weights"
    weights.mkdir()
    keep = _users_file(weights / "notes.txt")
    out = weights / "scores.json"
    return Case(_score(out), ["--out", "inside the weights folder (S2R_WEIGHTS_DIR)"],
                env={"S2R_WEIGHTS_DIR": str(weights)}, outputs=[out], kept=[keep])


def case_out_inside_a_dataset_folder(root):
    data = root / "data"
    (data / "sim").mkdir(parents=True)
    out = data / "sim" / "map.csv"
    return Case(["project", str(data), "--encoder", "pixels", "--out", str(out)],
                ["--out", "inside DATASET", "which this run reads"], outputs=[out])


def case_out_is_a_hard_link_to_the_report(root):
    report = _users_file(root / "report.json")
    out = root / "figure.svg"
    os.link(report, out)
    return Case(["figure", "validation", str(report), "--out", str(out)],
                ["--out", "is the report", "the same file"], kept=[report, out])


def case_force_never_writes_over_what_the_run_reads(root):
    report = _users_file(root / "report.json")
    return Case(["validate", "sim.zarr", "real.zarr", "--real-results", str(report),
                 "--out", str(report), "--force"],
                ["--out", "is --real-results", "the same file"], kept=[report])


def case_out_is_a_fifo(root):
    out = root / "scores.json"
    os.mkfifo(out)
    return Case(_score(out), ["--out", "FIFO", "not a regular file"])


def case_out_is_a_fifo_even_with_force(root):
    out = root / "e.npz"
    os.mkfifo(out)
    return Case(["embed", TINY_DEMO, "--encoder", "pixels", "--out", str(out), "--force"],
                ["--out", "FIFO"])


def case_out_is_a_link_to_a_device(root):
    out = root / "p.csv"
    out.symlink_to("/dev/null")
    return Case(["project", TINY_DEMO, "--encoder", "pixels", "--out", str(out)],
                ["--out", "symbolic link", "--force"])


def case_out_is_a_link_to_a_device_with_force(root):
    out = root / "p.csv"
    out.symlink_to("/dev/null")
    return Case(["project", TINY_DEMO, "--encoder", "pixels", "--out", str(out), "--force"],
                ["--out", "character device", "not a regular file"])


def case_out_is_a_users_file(root):
    out = _users_file(root / "scores.csv")
    return Case(_score(out), ["--out", "already exists", "was not written by s2r", "--force"],
                kept=[out])


def case_pairwise_is_a_users_file(root):
    pairwise = _users_file(root / "pairs.json")
    return Case(_score(root / "s.json", "--pairwise", str(pairwise)),
                ["--pairwise", "was not written by s2r"], kept=[pairwise],
                outputs=[root / "s.json"])


def case_figure_over_a_users_figure(root):
    out = _users_file(root / "fig.pdf")
    return Case(["figure", "scores", TINY_DEMO, "--encoders", "pixels", "--out", str(out)],
                ["--out", "was not written by s2r"], kept=[out])


def _saliency_over_a_users_file(root, name):
    folder = root / "maps"
    folder.mkdir()
    keep = _users_file(folder / name)
    return Case(["saliency", TINY_DEMO, "--encoder", "pixels", "--frames", "0",
                 "--out", str(folder)], [name, "was not written by s2r"], kept=[keep])


def case_saliency_folder_with_a_users_report(root):
    return _saliency_over_a_users_file(root, "saliency.json")


def case_saliency_folder_with_a_users_map(root):
    return _saliency_over_a_users_file(root, "pair_00_sim0_real3.png")


def case_saliency_folder_is_the_dataset(root):
    data = root / "data"
    data.mkdir()
    return Case(["saliency", str(data), "--encoder", "pixels", "--frames", "0",
                 "--out", str(data)], ["--out", "is DATASET", "the same folder"])


CASES = {name[len("case_"):]: fn for name, fn in sorted(globals().items())
         if name.startswith("case_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_output_that_would_destroy_something_is_refused_before_any_work(name, tmp_path,
                                                                          capsys):
    case = CASES[name](tmp_path)
    run_case(case, capsys, name, max_seconds=15)


def test_a_fifo_is_left_a_fifo(tmp_path, capsys):
    out = tmp_path / "scores.json"
    os.mkfifo(out)
    run_case(Case(_score(out), ["FIFO"]), capsys)
    assert out.is_fifo()


def test_s2r_replaces_its_own_output_but_not_one_of_another_kind_or_edited(tmp_path, capsys):
    out = tmp_path / "scores.json"
    assert main(_score(out)) == 0
    first = json.loads(out.read_text())
    assert main(_score(out)) == 0                      # its own score table: replaced
    assert json.loads(out.read_text())[0]["encoder"] == first[0]["encoder"]
    capsys.readouterr()
    # the same file as another kind of output: refused, and the scores stay
    before = out.read_bytes()
    run_case(Case(["validate", TINY_DEMO, "--out", str(out)],
                  ["--out", "was written by s2r as a score table (not a validation report)"],
                  kept=[out]), capsys)
    # edited since s2r wrote it: no longer s2r's
    out.write_bytes(before + b" ")
    run_case(Case(_score(out), ["was not written by s2r (or was changed since)"], kept=[out]),
             capsys)
    # --force replaces it
    assert main(_score(out, "--force")) == 0
    assert json.loads(out.read_text())[0]["encoder"] == first[0]["encoder"]


def test_force_replaces_a_users_file_and_then_it_is_s2rs(tmp_path, capsys):
    out = _users_file(tmp_path / "e.npz")
    argv = ["embed", TINY_DEMO, "--encoder", "pixels", "--out", str(out)]
    assert main([*argv, "--force"]) == 0
    assert out.read_bytes()[:2] == b"PK"               # an npz now
    assert main(argv) == 0                             # s2r's from now on: no --force needed


# The record of written outputs (the library part of the guard).

def test_a_record_says_what_s2r_wrote_while_the_file_is_unchanged(tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "r.json"
    out.write_text("{}")
    assert written_as(out, cache) is None
    record_output(out, "validation", cache)
    assert written_as(out, cache) == "validation"
    check_output(out, "validation", cache_dir=cache)   # replaced without a word
    with pytest.raises(S2RError, match="as a validation report .not a score table."):
        check_output(out, "scores", cache_dir=cache)
    out.write_text("{} ")                              # size changed
    assert written_as(out, cache) is None
    record_output(out, "validation", cache)
    os.utime(out, ns=(1, 1))                           # touched: another file, for all we know
    assert written_as(out, cache) is None


def test_a_record_moved_to_another_path_or_forged_counts_for_nothing(tmp_path):
    cache = tmp_path / "cache"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    record_output(a, "scores", cache)
    os.replace(a, b)                                   # the file moved: b was never recorded
    assert written_as(b, cache) is None
    records = list(records_folder(cache).iterdir())
    assert len(records) == 1
    b.write_text("{}")
    record_output(b, "scores", cache)
    record = next(p for p in records_folder(cache).iterdir() if p != records[0])
    data = json.loads(record.read_text())
    data["kind"] = "no such kind"
    record.write_text(json.dumps(data))
    assert written_as(b, cache) is None
    record.write_text("x" * 100_000)                   # too large to be a record
    assert written_as(b, cache) is None
    record.unlink()
    record.symlink_to(records[0])                      # a link planted in the records folder
    assert written_as(b, cache) is None


def test_an_unwritable_records_folder_only_costs_a_later_force(tmp_path):
    cache = tmp_path / "cache"
    cache.write_text("a file where the cache folder should be")
    out = tmp_path / "r.json"
    out.write_text("{}")
    record_output(out, "validation", cache)            # no error: the output is written
    assert written_as(out, cache) is None


def test_an_unknown_kind_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError, match="unknown output kind"):
        record_output(tmp_path / "x", "report", tmp_path)


def test_no_record_is_written_into_a_users_folder_given_as_the_cache(tmp_path, capsys):
    users = tmp_path / "home"
    users.mkdir()
    keep = _users_file(users / "thesis.tex")
    out = tmp_path / "scores.json"
    assert main([*_score(out), "--no-cache", "--cache-dir", str(users)]) == 0
    assert sorted(p.name for p in users.iterdir()) == ["thesis.tex"]
    assert keep.read_text() == USERS


def test_a_record_leaves_a_cache_folder_that_later_runs_accept(tmp_path, capsys):
    cache = tmp_path / "new-cache"
    out = tmp_path / "scores.json"
    assert main([*_score(out), "--no-cache", "--cache-dir", str(cache)]) == 0
    assert (records_folder(cache)).is_dir()
    assert main([*_score(out), "--cache-dir", str(cache)]) == 0   # the cache is s2r's


def test_a_records_folder_that_is_a_link_is_never_written_through(tmp_path):
    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    cache.mkdir()
    elsewhere.mkdir()
    (cache / "outputs").symlink_to(elsewhere)
    out = tmp_path / "r.json"
    out.write_text("{}")
    record_output(out, "validation", cache)
    assert list(elsewhere.iterdir()) == []
