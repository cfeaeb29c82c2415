"""The hostile-input catalogue, round 3 (issue 33): your results CSV (``validate
--real-results``, items 3 and 7) and the figure's report (``figure validation``, item 4).

Each ``case_*`` builds its files under ``root`` and returns a :class:`Case`; every case runs
through ``s2r.cli.main`` in process (:func:`run_case`: exit 2, one ``error:`` line with the
case's words, nothing written, the user's files unchanged, no stall). While the results cases
run, loading the dataset, opening the cache and scoring fail the test: a bad table is refused
before any scoring work. The functions after the catalogue check what the limits let through.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from s2r.cli import main
from s2r.errors import S2RError
from s2r.figures.report import MAX_REPORT_BYTES, MAX_REPORT_ROWS, read_report
from s2r.pipeline import real_results as RR
from s2r.pipeline.results_table import MAX_BYTES, MAX_TASKS, MAX_TRIALS, read_real_results
from tests.helpers.hostile import Case, run_case

DEMO = "demo:episodes=2,steps=4,height=64,width=80"
HEADER = "encoder,successes,trials\n"
GOOD = HEADER + "pixels,4,20\nstate,19,20\nefficientnet-lite0,14,20\n"
#: No error line is longer than this, whatever the file held.
LONGEST_LINE = 600


# ----------------------------------------------------------------------------- builders
def _write(root: Path, text, name: str = "results.csv") -> Path:
    path = root / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _validate(root: Path, table: Path, *extra, words, **kw) -> Case:
    """``validate DEMO --real-results TABLE --out report.json``: nothing may be written."""
    out = root / "report.json"
    return Case(["validate", DEMO, "--real-results", str(table), "--out", str(out), *extra],
                words, outputs=[out], **kw)


def _table_case(text, words, *extra, **kw):
    def build(root):
        table = _write(root, text)
        return _validate(root, table, *extra, words=words, kept=[table], **kw)
    return build


# ----------------------------------------------------------------------------- item 3: files
def case_results_missing(root):
    return _validate(root, root / "gone.csv", words=["gone.csv", "does not exist"])


def case_results_over_size(root):
    table = _write(root, GOOD + "#" * MAX_BYTES)
    return _validate(root, table, words=["results.csv", f"over the limit of {MAX_BYTES:,}"],
                     kept=[table])


def case_results_200_mb_line(root):
    """A 200 MB file of one line (sparse: no disk used) is refused by its size, unread."""
    table = root / "results.csv"
    with open(table, "wb") as f:
        f.truncate(200 << 20)
    return _validate(root, table, words=["209,715,200 bytes", "over the limit"])


def case_results_200000_tasks(root):
    """200,000 tasks answer at once (the file is over the size bound), not after hours of
    bootstrap."""
    rows = "".join(f"pixels,t{i},0.5\n" for i in range(200_000))
    table = _write(root, "encoder,task,success_rate\n" + rows)
    return _validate(root, table, words=["over the limit of 1,048,576 bytes"], kept=[table])


def case_results_proc_self_environ(root):
    """A file whose bytes must never be echoed: only its name and what is wrong."""
    return _validate(root, Path("/proc/self/environ"),
                     words=["/proc/self/environ", "not a text table", "NUL byte"],
                     not_words=["PATH=", "HOME="])


def case_results_not_utf8(root):
    return _table_case(b"encoder,success_rate\npixels,\xff\xfe\n", ["not UTF-8 text"])(root)


def case_results_empty(root):
    return _table_case("", ["results.csv: empty"])(root)


def case_results_no_rows(root):
    return _table_case(HEADER, ["no rows"])(root)


def case_results_repeated_column(root):
    return _table_case("encoder,trials,successes,trials\npixels,4,2,4\n",
                       ["the column 'trials' appears twice"])(root)


def case_results_unclosed_quote(root):
    return _table_case('encoder,success_rate\n"pixels,0.5\n', ["line 2", "not a CSV table"])(root)


# ----------------------------------------------------------------------------- item 3: counts
for _name, _row, _words in [
    ("count_1e19", "pixels,1,1e19", ["row 1 (line 2)", "trials must be a whole number",
                                     "'1e19'"]),
    ("count_1e308", "pixels,1e308,2", ["successes must be a whole number", "'1e308'"]),
    ("count_2_pow_63", f"pixels,1,{2 ** 63 - 1}", [f"over the limit of {MAX_TRIALS:,}"]),
    ("count_over_limit", f"pixels,1,{MAX_TRIALS + 1}", [f"over the limit of {MAX_TRIALS:,}"]),
    ("count_4300_digits", "pixels,1," + "9" * 5000, ["over the limit of", "(5,000 characters)"]),
    ("count_negative", "pixels,-1,20", ["successes must be a whole number", "'-1'"]),
    ("count_fraction", "pixels,2.5,20", ["successes must be a whole number", "'2.5'"]),
    ("count_zero_trials", "pixels,0,0", ["trials must be a whole number >= 1"]),
    ("count_nan", "pixels,nan,20", ["successes must be a whole number", "'nan'"]),
    ("count_underscore", "pixels,1_0,20", ["successes must be a whole number", "'1_0'"]),
    ("count_arabic_indic_digits", "pixels,١,٢٠", ["trials must be a whole number",
                                                 "digits 0-9"]),
    ("count_fullwidth_digits", "pixels,４,20", ["successes must be a whole number"]),
    ("successes_over_trials", "pixels,21,20", ["row 1 (line 2)", "successes (21) > trials (20)"]),
    ("successes_empty", "pixels,,20", ["successes is empty"]),
]:
    globals()[f"case_{_name}"] = _table_case(HEADER + _row + "\n", _words)

for _name, _text, _words in [
    ("counts_and_rate_disagree", "encoder,successes,trials,success_rate\npixels,1,20,0.9\n",
     ["success_rate '0.9' disagrees", "1/20"]),
    ("counts_and_rate_disagree_in_a_later_row",
     "encoder,successes,trials,success_rate\nstate,14,20,0.7\npixels,1,3,0.5\n",
     ["row 2 (line 3)", "1/3"]),
    ("rate_1e308", "encoder,success_rate\npixels,1e308\n", ["success_rate must be in [0, 1]"]),
    ("rate_inf", "encoder,success_rate\npixels,inf\n", ["success_rate must be a decimal",
                                                        "'inf'"]),
    ("rate_arabic_indic", "encoder,success_rate\npixels,٠.٥\n", ["digits 0-9"]),
    ("rate_underscore", "encoder,success_rate\npixels,0.5_0\n", ["'0.5_0'"]),
    ("rate_percent", "encoder,success_rate\npixels,70%\n", ["'70%'"]),
    ("neither_rate_nor_counts", "encoder,successes,trials,success_rate\npixels,,,\n",
     ["no success_rate and no successes/trials"]),
]:
    globals()[f"case_{_name}"] = _table_case(_text, _words)


# ----------------------------------------------------------------------------- item 3: ids
for _name, _row, _words in [
    ("inline_ckpt_reference", "ckpt:resnet18:/etc/passwd,1,2",
     ["inline reference", "registered encoder ids only"]),
    ("inline_timm_reference", "timm:resnet18.a1_in1k,1,2", ["inline reference"]),
    ("inline_reference_random", "ckpt:resnet18:/tmp/x.pth@random,1,2", ["inline reference"]),
    ("unknown_encoder", "pixe,1,2", ["unknown encoder 'pixe'", "Did you mean: pixels"]),
    ("empty_encoder", ",1,2", ["the encoder is empty"]),
    ("repeated_encoder", "pixels,1,2\npixels,1,2", ["row 2 (line 3)",
                                                    "pixels is already in row 1"]),
]:
    globals()[f"case_{_name}"] = _table_case(HEADER + _row + "\n", _words)


def case_escape_codes_in_the_table(root):
    """Terminal escape codes in what it read are removed from the message."""
    return _table_case(HEADER + "\x1b[2J\x1b]0;owned\x07pixels\x1b[0m,1,2\n",
                       ["row 1 (line 2)", "is not an encoder id",
                        "control characters or terminal escape codes"],
                       not_words=["\x1b", "\x07"])(root)


def case_escape_codes_in_a_task(root):
    return _table_case("encoder,task,success_rate\npixels,\x1b[31mpeg,0.5\n",
                       ["the task", "not a task name"], not_words=["\x1b"])(root)


def case_escape_codes_in_the_file_name(root):
    table = _write(root, HEADER + "pixels,30,20\n", "r\x1b[2J.csv")
    return _validate(root, table, words=["successes (30) > trials (20)"], kept=[table],
                     not_words=["\x1b"])


def case_a_long_cell_is_quoted_short(root):
    return _table_case(HEADER + "x" * 100_000 + ",1,2\n",
                       ["'xxxx", "(100,000 characters)", "is not an encoder id"])(root)


def case_a_long_header_is_quoted_short(root):
    return _table_case("encoder,successes," + "y" * 100_000 + "\npixels,1,2\n",
                       ["no 'trials' column", "characters)"])(root)


def case_too_many_tasks(root):
    rows = "".join(f"pixels,t{i},0.5\n" for i in range(MAX_TASKS + 1))
    return _table_case("encoder,task,success_rate\n" + rows,
                       [f"row {MAX_TASKS + 1}", f"more than {MAX_TASKS} tasks"])(root)


def case_a_task_name_too_long(root):
    return _table_case("encoder,task,success_rate\npixels," + "t" * 101 + ",0.5\n",
                       ["the task", "at most 100 characters"])(root)


# ----------------------------------------------------------------------------- item 7
def case_extra_fields_name_the_column_problem(root):
    """One field more than the header: said as such (pandas took the first field as an index
    and answered "unknown encoder '4'")."""
    return _table_case(HEADER + "pixels,4,20,1\n",
                       ["row 1 (line 2)", "4 fields, but the header has 3",
                        "'encoder, successes, trials'", "needs quotes"],
                       not_words=["unknown encoder"])(root)


def case_extra_fields_in_every_row(root):
    return _table_case(HEADER + "pixels,4,20,1\nstate,9,20,1\n",
                       ["row 1 (line 2)", "4 fields"], not_words=["'4'"])(root)


def case_fewer_fields_than_the_header(root):
    return _table_case("encoder,task,success_rate\npixels,0.5\n",
                       ["row 1 (line 2)", "2 fields, but the header has 3"])(root)


# ----------------------------------------------------------------- item 3: --n-boot, --out
def case_n_boot_huge(root):
    return _table_case(GOOD, ["--n-boot must be in [1, 50,000]"], "--n-boot",
                       str(10 ** 12))(root)


def case_n_boot_zero(root):
    return _table_case(GOOD, ["--n-boot must be in [1, 50,000]"], "--n-boot", "0")(root)


def case_n_boot_times_tasks(root):
    rows = "".join(f"{e},t{i},0.5\n" for i in range(MAX_TASKS) for e in ("pixels", "state"))
    return _table_case("encoder,task,success_rate\n" + rows,
                       ["--n-boot", f"{MAX_TASKS + 1} correlations", "over the limit of "
                        f"{RR.MAX_REPLICATES:,}", "n_boot <= 2,475"], "--n-boot", "5000")(root)


def case_out_is_the_table(root):
    table = _write(root, GOOD, "results.json")
    return Case(["validate", DEMO, "--real-results", str(table), "--out", str(table)],
                ["--out", "is --real-results", "the same file"], kept=[table])


def case_out_is_a_link_to_the_table(root):
    table = _write(root, GOOD, "results.json")
    (root / "out.json").symlink_to(table)
    return Case(["validate", DEMO, "--real-results", str(table), "--out",
                 str(root / "out.json")], ["the same file"], kept=[table])


def case_out_is_a_hard_link_to_the_table(root):
    table = _write(root, GOOD, "results.json")
    os.link(table, root / "out.json")
    return Case(["validate", DEMO, "--real-results", str(table), "--out",
                 str(root / "out.json")], ["the same file"], kept=[table, root / "out.json"])


def case_out_is_the_table_by_another_spelling(root):
    table = _write(root, GOOD, "results.json")
    (root / "sub").mkdir()
    return Case(["validate", DEMO, "--real-results", str(table), "--out",
                 str(root / "sub" / ".." / "results.json")], ["the same file"], kept=[table])


# ----------------------------------------------------------------------------- item 4: figure
ROWS = [{"encoder": "pixels", "task": None, "success_rate": 0.2, "success_ci_low": 0.08,
         "success_ci_high": 0.42, "dis": 0.3},
        {"encoder": "state", "task": None, "success_rate": 0.95, "success_ci_low": 0.76,
         "success_ci_high": 0.99, "dis": 0.9}]
REAL_REPORT = {"results": [], "correlations": [], "real_results": {"rows": ROWS}}
DEMO_ROWS = [{"encoder": e, "gap": g, "success_real": r, "success_real_ci_low": r / 2,
              "success_real_ci_high": (1 + r) / 2, "success_sim": 0.9, "dis": d,
              "dis_ci_low": d - 0.1, "dis_ci_high": d + 0.1}
             for e, d, r in (("pixels", 0.3, 0.2), ("efficientnet-lite0", 0.6, 0.5),
                             ("state", 0.9, 0.9)) for g in (0.0, 1.0)]
DEMO_REPORT = {"results": DEMO_ROWS, "correlations": [
    {"score": "dis", "gap": "all", "outcome": "success", "spearman": 1.0,
     "spearman_ci_low": 0.5, "spearman_ci_high": 1.0}]}


def _figure(root: Path, report: Path, *extra, words, out=None, **kw) -> Case:
    out = out or root / "fig.svg"
    return Case(["figure", "validation", str(report), "--score", "dis", "--out", str(out),
                 *extra], words, outputs=[] if out.exists() else [out], **kw)


def _report_case(content, words, **kw):
    def build(root):
        text = content if isinstance(content, (str, bytes)) else json.dumps(content)
        report = _write(root, text, "report.json")
        return _figure(root, report, words=words, kept=[report], **kw)
    return build


def _bad_real_row(**change) -> dict:
    return {**REAL_REPORT, "real_results": {"rows": [{**ROWS[0], **change}, ROWS[1]]}}


def _without(row: dict, key: str) -> dict:
    return {k: v for k, v in row.items() if k != key}


def case_report_over_size(root):
    report = root / "report.json"
    with open(report, "wb") as f:
        f.truncate(MAX_REPORT_BYTES + 1)
    return _figure(root, report, words=[f"over the limit of {MAX_REPORT_BYTES:,} bytes"])


for _name, _content, _words in [
    ("report_not_json", "{not json", ["not JSON", "not a report of 'python -m s2r validate'"]),
    ("report_not_utf8", b"\xff\xfe{}", ["not JSON"]),
    ("report_deeply_nested", "[" * 200_000, ["nested too deeply"]),
    ("report_deeply_nested_object", '{"a":' * 100_000, ["nested too deeply"]),
    ("report_a_list", [1, 2], ["no results list"]),
    ("report_results_not_a_list", {"results": {"a": 1}}, ["no results list"]),
    ("report_rows_nested_lists", {"results": [[[[1]]]]}, ["results[0]", "a JSON object"]),
    ("report_row_without_encoder", {**DEMO_REPORT, "results": [_without(DEMO_ROWS[0],
                                                                        "encoder")]},
     ["results[0]", "'encoder' must be an encoder id"]),
    ("report_row_without_gap", {**DEMO_REPORT, "results": [_without(DEMO_ROWS[0], "gap")]},
     ["results[0]", "no 'gap'"]),
    ("report_success_a_string", {**DEMO_REPORT, "results": [{**DEMO_ROWS[0],
                                                             "success_real": "abc"}]},
     ["'success_real' must be a number in [0, 1]", '"abc"']),
    ("report_score_an_object", {**DEMO_REPORT, "results": [{**DEMO_ROWS[0], "dis": {"a": 1}}]},
     ["'dis' must be a number or null", "a JSON object"]),
    ("report_correlations_not_a_list", {**DEMO_REPORT, "correlations": "x"},
     ["'correlations' must be a list"]),
    ("report_correlation_a_string", {**DEMO_REPORT, "correlations": [
        {**DEMO_REPORT["correlations"][0], "spearman": "high"}]},
     ["correlations[0]", "'spearman' must be a number"]),
    ("report_real_results_not_an_object", {**REAL_REPORT, "real_results": [1]},
     ["real_results: must be a JSON object"]),
    ("report_real_rows_missing", {**REAL_REPORT, "real_results": {}},
     ["'rows' must be a list of rows"]),
    ("report_real_rate_out_of_range", _bad_real_row(success_rate=7),
     ["rows[0]", "'success_rate' must be a number in [0, 1]"]),
    ("report_real_rate_a_bool", _bad_real_row(success_rate=True), ["'success_rate'"]),
    ("report_real_task_a_number", _bad_real_row(task=3), ["'task' must be text or null"]),
    ("report_real_encoder_huge", _bad_real_row(encoder="e" * 1_000_000),
     ["'encoder' must be an encoder id", "characters)"]),
    ("report_too_many_rows", {**REAL_REPORT, "real_results": {"rows": ROWS[:1] * (
        MAX_REPORT_ROWS + 1)}}, [f"{MAX_REPORT_ROWS + 1:,} rows", "over the limit"]),
    ("report_score_missing", {**DEMO_REPORT, "results": [_without(DEMO_ROWS[0], "dis")]},
     ["--score 'dis' is not in report"]),
]:
    globals()[f"case_{_name}"] = _report_case(_content, _words)


# --------------------------------------------------------------------------- items 3, 4: not files
def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _link_to_fifo(path: Path) -> Path:
    path.symlink_to(_fifo(path.with_name("pipe")))
    return path


def _link_to_device(path: Path) -> Path:
    path.symlink_to("/dev/zero")
    return path


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


#: What is not a regular file, refused before it is opened: how to make it, what is said.
NOT_FILES = {"fifo": (_fifo, ["FIFO", "not a regular file"]),
             "link_to_fifo": (_link_to_fifo, ["FIFO"]),
             "device": (lambda path: Path("/dev/zero"), ["/dev/zero", "a device"]),
             "link_to_device": (_link_to_device, ["a device"]),
             "folder": (_folder, ["a folder"])}
for _kind, (_make, _words) in NOT_FILES.items():
    globals()[f"case_results_{_kind}"] = lambda root, make=_make, words=_words: _validate(
        root, make(root / "results.csv"), words=["results table", *words])
    globals()[f"case_report_{_kind}"] = lambda root, make=_make, words=_words: _figure(
        root, make(root / "report.json"), words=["report", *words])


def case_figure_out_is_the_report(root):
    report = _write(root, json.dumps(REAL_REPORT), "report.svg")
    return _figure(root, report, words=["--out", "is the report", "the same file"],
                   out=report, kept=[report])


def case_figure_out_is_a_link_to_the_report(root):
    report = _write(root, json.dumps(REAL_REPORT), "report.svg")
    (root / "fig.svg").symlink_to(report)
    return _figure(root, report, words=["the same file"], out=root / "fig.svg", kept=[report])


def case_figure_out_is_a_hard_link_to_the_report(root):
    report = _write(root, json.dumps(REAL_REPORT), "report.svg")
    os.link(report, root / "fig.svg")
    return _figure(root, report, words=["the same file"], out=root / "fig.svg",
                   kept=[report, root / "fig.svg"])


def case_figure_out_is_a_dataset_file(root):
    sim, real = _write(root, b"\x89PNG", "sim.png"), _write(root, b"\x89PNG", "real.png")
    return Case(["figure", "scores", str(sim), str(real), "--encoders", "pixels", "--out",
                 str(real)], ["--out", "is DATASET", "the same file"], kept=[sim, real])


CASES = {name[5:]: fn for name, fn in list(globals().items()) if name.startswith("case_")}


@pytest.fixture
def no_scoring(monkeypatch):
    """Loading the dataset, opening the cache or scoring during a case fails the test."""
    import s2r.commands.validate_real as V
    import s2r.pipeline

    def forbidden(*args, **kwargs):
        raise AssertionError("work was started before the input was refused")

    monkeypatch.setattr(V, "dataset_from_args", forbidden)
    monkeypatch.setattr(V, "cache_from_args", forbidden)
    monkeypatch.setattr(s2r.pipeline, "score_encoder", forbidden)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_main_exits_2_with_message(tmp_path, capsys, no_scoring, name):
    case = CASES[name](tmp_path)
    line = run_case(case, capsys, name, max_seconds=20.0)
    assert len(line) <= LONGEST_LINE, line


def test_the_catalogue_is_counted():
    assert len(CASES) == 91


# ----------------------------------------------------------------------------- what passes
def test_tables_within_the_limits_are_read():
    rows = read_real_results("\ufeffEncoder, Successes ,Trials,success_rate,notes\r\n"
                             "pixels,1,3,0.33,\"a, b\"\r\n\r\nstate,14,20.0,.7,\r\n"
                             "efficientnet-lite0,0,20,,x\r\n".encode())
    assert [(r["encoder"], r["successes"], r["trials"]) for r in rows] == [
        ("pixels", 1, 3), ("state", 14, 20), ("efficientnet-lite0", 0, 20)]
    assert rows[0]["success_rate"] == pytest.approx(1 / 3)
    tasks = read_real_results(("encoder,task,success_rate\n" + "".join(
        f"pixels,\"t{i}, left\",0.5\n" for i in range(MAX_TASKS))).encode())
    assert len({r["task"] for r in tasks}) == MAX_TASKS and tasks[0]["task"] == "t0, left"
    assert read_real_results(f"{HEADER}pixels,{MAX_TRIALS},{MAX_TRIALS}\n".encode())[0][
        "trials"] == MAX_TRIALS
    exact = (GOOD + "\n" * (MAX_BYTES - len(GOOD))).encode()   # blank lines are skipped
    assert len(exact) == MAX_BYTES and len(read_real_results(exact)) == 3
    with pytest.raises(S2RError, match=f"over the limit of {MAX_BYTES:,} bytes"):
        read_real_results(exact + b"\n", name="pasted table")


def test_the_bootstrap_bounds_are_checked_before_any_work():
    rows = [{"encoder": "pixels", "task": f"t{i}"} for i in range(99)]
    RR.check_work(rows, 2500)                              # 100 x 2,500 = 250,000
    with pytest.raises(S2RError, match="250,000"):
        RR.check_work(rows, 2501)
    with pytest.raises(S2RError, match=r"n_boot must be in \[1, 50000\]"):
        RR.check_work(rows[:1], RR.MAX_N_BOOT + 1)
    # the library refuses 200,000 tasks at once, even with n_boot 1 (which the replicate
    # bound alone would let through to 1.4 million correlations)
    many = [{"encoder": "pixels", "task": f"t{i}", "success_rate": 0.5, "successes": None,
             "trials": None} for i in range(200_000)]
    start = time.perf_counter()
    with pytest.raises(S2RError, match="200,000 tasks, over the limit of 100"):
        RR.real_results_report(many, {"pixels": {"dis": 0.5}}, n_boot=1)
    assert time.perf_counter() - start < 10.0


def test_the_limits_are_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"at most {MAX_BYTES >> 20} MiB, {MAX_TASKS} tasks" in text
    assert f"at most {RR.MAX_N_BOOT:,}" in text and f"at most {RR.MAX_REPLICATES:,}" in text
    with pytest.raises(SystemExit):
        main(["figure", "validation", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"at most {MAX_REPORT_BYTES >> 20} MiB and {MAX_REPORT_ROWS:,} rows" in text


def test_a_checked_demo_report_draws_and_a_long_out_works(tmp_path, capsys):
    """The checked rows draw the chart (a demo report: 3 encoders x 2 gaps); a 250-character
    --out (a legal name: its temporary sibling stays within 255 bytes) is written whole."""
    from tests.figures import svg as S

    report = _write(tmp_path, json.dumps(DEMO_REPORT), "report.json")
    checked = read_report(report, "dis")
    assert checked.kind == "closed-loop" and len(checked.rows) == 6
    assert checked.correlation("dis")["spearman"] == 1.0
    out = tmp_path / ("f" * 246 + ".svg")
    assert len(out.name) == 250
    assert main(["figure", "validation", str(report), "--score", "dis", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["report.json", out.name])
    svg = out.read_text()
    assert len(S.symbols(svg)) == 6
