"""The hostile catalogue, process faults: a reader that goes away (``| head``), a path the
file system refuses (too long, a link loop, a file where a folder is needed), a sim and a real
dataset whose states differ in width, and processes killed or disturbed midway (``kill -9``,
``cache clear`` during a ``score``, the ``--out`` folder deleted while the command runs).

The contract is the catalogue's (:mod:`tests.helpers.hostile`): one ``error:`` line, exit 2,
nothing written, no traceback; a killed run leaves nothing a rerun would use: the rerun gives
what an uninterrupted run gives, with no stale lock and no partial file.

The process tests run real ``python -m s2r`` processes on tiny inputs (a 3 + 3 episode demo
of 64x64 frames, the ``pixels`` and ``state`` encoders) and kill them at a point found by
polling the cache or the output folder, never after a fixed sleep.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from s2r.datasets import load_dataset
from tests.helpers import REPO
from tests.helpers.datafiles import robomimic_demos, write_hdf5
from tests.helpers.hostile import Case, assert_clean_failure, run_case

TINY = "demo:episodes=3,steps=8,height=64,width=64"
SCORE = ["score", TINY, "--encoders", "pixels,state", "--n-boot", "20"]
LONG = "x" * 300  # one name over the 255 bytes every usual file system takes
LEROBOT = REPO / "tests" / "data" / "lerobot"


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def s2r_process(argv, logs: Path, *, cwd=REPO, stdout=None, prefix=None, **env):
    """Start ``python -m s2r ARGV`` (or ``python -c PREFIX`` running the same main with a
    patch applied first); stdout and stderr go to files in ``logs`` (a pipe nobody reads could
    fill up and stall the child)."""
    logs.mkdir(parents=True, exist_ok=True)
    out = open(logs / "stdout", "w") if stdout is None else stdout
    err = open(logs / "stderr", "w")
    head = ["-m", "s2r"] if prefix is None else [
        "-c", prefix + "\nimport sys\nfrom s2r.cli import main\nsys.exit(main(sys.argv[1:]))"]
    try:
        return subprocess.Popen([sys.executable, *head, *map(str, argv)], cwd=cwd,
                                env=_env(**env), stdout=out, stderr=err)
    finally:
        err.close()
        if stdout is None:
            out.close()


def finished(proc, logs: Path, timeout: float = 300) -> tuple[int, str, str]:
    """Wait for ``proc``; its exit status, stdout and stderr."""
    code = proc.wait(timeout)
    return code, (logs / "stdout").read_text(), (logs / "stderr").read_text()


def wait_for(condition, proc, logs: Path, what: str, timeout: float = 240) -> None:
    """Poll ``condition()`` every 10 ms until it holds; fail if ``proc`` ends first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the process ended (exit {proc.returncode}) before {what}:\n"
                        + (logs / "stderr").read_text()[-3000:])
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def kill_9(proc) -> None:
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(60) == -signal.SIGKILL


def kill_9_while_computing(argv, cache: Path, out: Path, logs: Path, entries: int) -> None:
    """Run ``argv`` into ``cache``; once ``entries`` entries are written and the next one's
    lock is held (it computes), ``kill -9`` it: no lock stays held, no output appears."""
    proc = s2r_process([*argv, "--cache-dir", cache, "--out", out], logs)
    wait_for(lambda: n_entries(cache) >= entries and held_locks(cache), proc, logs,
             f"an entry computing after {entries} were written")
    kill_9(proc)
    assert held_locks(cache) == []  # the OS released the dead process's locks
    assert not out.exists()


def run_s2r(argv, logs: Path, **kw) -> tuple[int, str, str]:
    return finished(s2r_process(argv, logs, **kw), logs)


def held_locks(cache: Path) -> list[str]:
    """The lock files of ``cache`` some process holds now (probed without waiting)."""
    held = []
    for path in sorted((cache / "locks").glob("*.lock")):
        with open(path, "rb") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(path.name)
            else:
                fcntl.flock(f, fcntl.LOCK_UN)
    return held


def n_entries(cache: Path, suffix: str = ".json") -> int:
    folder = cache / "records"
    return len(list(folder.glob(f"*{suffix}"))) if folder.is_dir() else 0


def assert_cache_sound(cache: Path) -> int:
    """Every listed entry reads back verified (no warning); no temporary file is left.
    Returns the number of entries."""
    from s2r.cache import Cache

    c = Cache(cache)
    entries = c.ls()
    for e in entries:
        if e.storage == "array":
            assert c.get_array(e.key) is not None, e
        else:
            assert c.get_json(e.key, default=KeyError) is not KeyError, e
    c.close()
    assert not list(cache.rglob("*.tmp")), list(cache.rglob("*.tmp"))
    return len(entries)


# ----------------------------------------------------------------------------- pipes
def _closed_pipe():
    """The write end of a pipe whose reader has already gone: every write fails (EPIPE), as
    it does for ``python -m s2r ... | head -1`` once ``head`` has its line."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("argv, status", [
    (["encoders", "--all"], 141), (["info", TINY], 141), (["cache", "ls", "--json"], 141),
    (["demo", "--episodes", "2", "--steps", "4", "--out", "{tmp}/demo"], 141),
    (["score", "--help"], 0)],
    ids=["encoders", "info", "cache-ls", "demo", "help"])
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path, argv, status):
    """Exit 141 (128 + SIGPIPE, as ``cat`` or ``git`` killed by it; ``--help`` exits 0, as
    argparse ignores a failed write of its help), nothing on stderr but progress: no
    BrokenPipeError traceback, no "Exception ignored" at the flush at exit. What a command
    writes to files is complete all the same."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    pipe = _closed_pipe()
    try:
        proc = s2r_process(argv, tmp_path / "logs", stdout=pipe)
    finally:
        os.close(pipe)
    code = proc.wait(120)
    err = (tmp_path / "logs" / "stderr").read_text()
    assert code == status, err
    if argv[0] == "demo":
        assert len(load_dataset(str(tmp_path / "demo"))) == 16
    assert "Traceback" not in err and "Exception ignored" not in err and "Error" not in err, err


def test_head_of_the_encoder_list_is_its_first_line_and_nothing_else(tmp_path):
    """The shell pipeline itself, as a user types it."""
    proc = subprocess.run(f"'{sys.executable}' -m s2r encoders --all | head -1", shell=True,
                          cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("id ") and proc.stdout.count("\n") == 1
    assert proc.stderr == ""


def test_main_in_process_flushes_and_returns_141_on_a_closed_pipe(monkeypatch, capsys):
    """The same path inside ``main`` (what the subprocess tests exercise), here with stdout
    replaced: the flush after the command raises, main returns 141."""
    from s2r import cli

    class Broken:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Broken())
    assert cli.main(["encoders"]) == cli.EXIT_BROKEN_PIPE == 141


# ----------------------------------------------------------------------------- path faults
def _loop(root: Path) -> Path:
    (root / "loop").symlink_to("loop")
    return root / "loop"


def _dangling(root: Path) -> Path:
    (root / "nowhere").symlink_to(root / "no-such-folder")
    return root / "nowhere"


def _file(root: Path) -> Path:
    (root / "plain.txt").write_text("a user's file\n")
    return root / "plain.txt"


def path_cases(root: Path) -> dict:
    """Paths the file system refuses, in every place a path goes: one line naming the path."""
    long_out = root / f"{LONG}.npz"
    deep = root.joinpath(*["y" * 200] * 22, "e.npz")  # every name legal, the path over 4 KiB
    embed = ["embed", TINY, "--encoder", "pixels"]
    real_csv = root / f"{LONG}.csv"
    return {
        "out_name_too_long": Case([*embed, "--no-cache", "--out", str(long_out)],
                                  ["--out", "the name 'xxxx", "304 bytes long", "at most 255"]),
        "out_path_too_long": Case([*embed, "--no-cache", "--out", str(deep)],
                                  ["--out", "the path is", "at most 4,095"]),
        "demo_out_name_too_long": Case(["demo", "--episodes", "2", "--steps", "4", "--out",
                                        str(root / LONG)], ["--out", "at most 255"]),
        "score_out_name_too_long": Case([*SCORE, "--out", str(root / f"{LONG}.csv")],
                                        ["--out", "at most 255"]),
        "figure_out_name_too_long": Case(["figure", "scores", TINY, "--encoders", "pixels",
                                          "--out", str(root / f"{LONG}.svg")],
                                         ["--out", "at most 255"]),
        "cache_dir_name_too_long": Case([*embed, "--cache-dir", str(root / LONG), "--out",
                                         str(root / "e.npz")],
                                        ["xxxxxxxx", "(3", "the name is too long"],
                                        outputs=[root / "e.npz"]),
        "cache_env_name_too_long": Case(["cache", "ls"], ["S2R_CACHE_DIR", "at most 255 bytes"],
                                        env={"S2R_CACHE_DIR": str(root / LONG)}),
        "weights_dir_name_too_long": Case(["encoders"], ["S2R_WEIGHTS_DIR", "at most 255 bytes"],
                                          env={"S2R_WEIGHTS_DIR": str(root / LONG)}),
        "encoder_config_name_too_long": Case(["encoders"], ["S2R_ENCODERS", "at most 255 bytes"],
                                             env={"S2R_ENCODERS": str(root / f"{LONG}.toml")}),
        "dataset_name_too_long": Case(["info", str(root / LONG)], ["xxxxxxxx", "too long"]),
        "real_results_name_too_long": Case(
            ["validate", TINY, "--real-results", str(real_csv), "--out", str(root / "r.json")],
            ["too long"], outputs=[root / "r.json"]),
        "out_under_a_link_loop": Case([*embed, "--no-cache", "--out", str(_loop(root) / "e.npz")],
                                      ["--out", "paths0/loop' cannot be used: too many levels of "
                                       "symbolic links"]),
        "out_under_a_dangling_link": Case(
            [*embed, "--no-cache", "--out", str(_dangling(root) / "e.npz")],
            ["--out", "paths0/nowhere' cannot be used: a link to something that does not exist"]),
        "out_under_a_file": Case([*embed, "--no-cache", "--out", str(_file(root) / "e.npz")],
                                 ["--out", "plain.txt", "is a file, not a folder"],
                                 kept=[root / "plain.txt"]),
        "dataset_under_a_file": Case(["info", str(root / "plain.txt" / "ds")],
                                     ["plain.txt/ds"], kept=[root / "plain.txt"]),
    }


PATH_CASES = ["cache_dir_name_too_long", "cache_env_name_too_long", "dataset_name_too_long",
              "dataset_under_a_file", "demo_out_name_too_long", "encoder_config_name_too_long",
              "figure_out_name_too_long", "out_name_too_long", "out_path_too_long",
              "out_under_a_dangling_link", "out_under_a_file", "out_under_a_link_loop",
              "real_results_name_too_long",
              "score_out_name_too_long", "weights_dir_name_too_long"]


@pytest.fixture(scope="module")
def built_paths(tmp_path_factory):
    cases = path_cases(tmp_path_factory.mktemp("paths"))
    assert sorted(cases) == PATH_CASES
    return cases


@pytest.mark.parametrize("name", PATH_CASES)
def test_a_path_the_file_system_refuses_is_one_line(built_paths, capsys, name):
    line = run_case(built_paths[name], capsys, name)
    assert len(line) < 600, line  # the path is quoted shortened, never whole


@pytest.mark.parametrize("errno_name", ["ENAMETOOLONG", "ELOOP", "ENOTDIR", "ENOENT", "EEXIST",
                                        "EISDIR", "EACCES"])
def test_every_path_fault_has_its_line(errno_name):
    import errno

    from s2r.cli import path_error_line

    code = getattr(errno, errno_name)
    line = path_error_line(OSError(code, os.strerror(code), "/data/" + "z" * 400))
    assert line.startswith("'/data/zzz") and "(406 characters)" in line and "\n" not in line
    moved = path_error_line(OSError(code, os.strerror(code), "/a/x.tmp", None, "/b/x"))
    assert moved.startswith("cannot move '/a/x.tmp' to '/b/x': ")
    # an error of the kind that names no path is not guessed at (a traceback, as before) ...
    if code not in (errno.ENAMETOOLONG, errno.ELOOP):
        assert path_error_line(OSError(code, os.strerror(code))) is None
    assert path_error_line(OSError(errno.EIO, "Input/output error", "/x")) is None


# ----------------------------------------------------------------------------- state widths
# The refusals (FurnitureBench, robomimic with the default and an explicit --state-key,
# LeRobot) are dataset cases of the catalogue, tests/cli/test_hostile_inputs.py
# (case_state_width_differs_*): the library and the CLI, one line each.
def test_states_of_one_width_are_kept(tmp_path):
    """The check refuses only a real difference: files whose default states differ load with
    a state both share, and two datasets of one width keep theirs."""
    write_hdf5(tmp_path / "sim.hdf5", robomimic_demos([3, 4]))
    real = robomimic_demos([4], seed=1)
    real["demo_0"]["robot0_gripper_qpos"] = np.zeros((4, 6), np.float32)
    write_hdf5(tmp_path / "real.hdf5", real)
    fs = load_dataset([str(tmp_path / "sim.hdf5"), str(tmp_path / "real.hdf5")],
                      state_key="robot0_eef_pos,robot0_eef_quat")
    assert fs.state.shape == (len(fs), 7)
    sim = str(LEROBOT / "one_leg_sim")
    assert load_dataset([sim, sim]).state.shape[1] == 22


def test_concat_domains_never_drops_a_state_silently():
    from s2r.errors import DataError
    from s2r.frameset import concat_domains
    from tests.helpers.datafiles import synthetic_frameset

    a = synthetic_frameset(masks=False)
    sim, real = a.subset(np.flatnonzero(a.domain == "sim")), a.subset(
        np.flatnonzero(a.domain == "real"))
    sim.state = np.zeros((len(sim), 5), np.float32)
    real.state = np.zeros((len(real), 3), np.float32)
    with pytest.raises(DataError, match=r"sim 5, real 3; give --state-key"):
        concat_domains(sim, real, name="x", source={})
    real.state = None  # one domain without a state: the join has none (documented)
    assert concat_domains(sim, real, name="x", source={}).state is None


# ----------------------------------------------------------------------------- killed midway
@pytest.fixture(scope="module")
def reference_scores(tmp_path_factory) -> bytes:
    """The leaderboard of an uninterrupted ``score`` run (its own fresh cache)."""
    root = tmp_path_factory.mktemp("reference")
    code, out, err = run_s2r([*SCORE, "--cache-dir", root / "cache", "--out", root / "s.csv"],
                             root / "logs")
    assert code == 0, err
    return (root / "s.csv").read_bytes()


def assert_rerun_is_the_reference(tmp_path, cache, reference: bytes, entries=3) -> None:
    """A rerun in ``cache`` writes the reference leaderboard, waits for no lock and leaves a
    sound cache (of ``entries`` entries: the pixels embeddings and two score records)."""
    out = tmp_path / "again.csv"
    code, _, err = run_s2r([*SCORE, "--cache-dir", cache, "--out", out], tmp_path / "rerun")
    assert code == 0, err
    assert "waiting for" not in err and "Traceback" not in err, err
    assert out.read_bytes() == reference
    n = assert_cache_sound(cache)
    assert entries is None or n == entries


def test_kill_9_of_score_while_it_computes_then_rerun(tmp_path, reference_scores):
    """Killed while holding an entry's lock (computing it): the OS frees the lock with the
    process, nothing partial is listed, the rerun gives the uninterrupted result."""
    cache = tmp_path / "cache"
    kill_9_while_computing(SCORE, cache, tmp_path / "s.csv", tmp_path / "killed", 1)
    assert_rerun_is_the_reference(tmp_path, cache, reference_scores)


# A child that stops itself (SIGSTOP) inside a cache write, at a chosen point, until the test
# kills or continues it: after the array's temporary file is complete but before it is renamed
# into place ("tmp"), or after the rename but before its record is written ("record").
STOP_IN_WRITE = """
import os, signal
from pathlib import Path
import s2r.cache.storage as storage

where, flag = os.environ["STOP_AT"], Path(os.environ["STOP_FLAG"])

def stop(real):
    def stopped(*args, **kwargs):
        if where == "tmp" and not flag.exists():
            flag.write_text("stopped")
            os.kill(os.getpid(), signal.SIGSTOP)
        result = real(*args, **kwargs)
        if where == "record" and not flag.exists():
            flag.write_text("stopped")
            os.kill(os.getpid(), signal.SIGSTOP)
        return result
    return stopped

if where == "tmp":
    storage.array_record = stop(storage.array_record)
else:
    storage.fsync_dir = stop(storage.fsync_dir)
"""


def stopped_in_write(tmp_path, where: str):
    """A ``score`` stopped inside its first array write (see STOP_IN_WRITE)."""
    flag = tmp_path / "stopped"
    proc = s2r_process([*SCORE, "--cache-dir", tmp_path / "cache", "--out", tmp_path / "s.csv"],
                       tmp_path / "first", prefix=STOP_IN_WRITE, STOP_AT=where,
                       STOP_FLAG=str(flag))
    wait_for(flag.exists, proc, tmp_path / "first", f"the write stopped at {where!r}")
    return proc


@pytest.mark.parametrize("where", ["tmp", "record"])
def test_kill_9_inside_a_cache_write_then_rerun(tmp_path, reference_scores, where):
    """Killed with a complete temporary array not yet renamed, or with the array in place
    but no record: neither is ever read as an entry; the rerun sweeps or replaces it."""
    cache = tmp_path / "cache"
    kill_9(stopped_in_write(tmp_path, where))
    arrays = list((cache / "arrays").iterdir())
    assert [p.suffix for p in arrays] == [".tmp" if where == "tmp" else ".npy"]
    assert n_entries(cache) == 0  # no record: nothing half-written can be a hit
    assert held_locks(cache) == []
    assert_rerun_is_the_reference(tmp_path, cache, reference_scores)


def test_kill_9_of_demo_midway_then_rerun(tmp_path):
    """Killed while writing frames: the output folder does not exist (frames go to a hidden
    staging folder first), so the rerun writes it whole, as an uninterrupted run does."""
    argv = ["demo", "--episodes", "4", "--steps", "30", "--height", "64", "--width", "64"]
    code, _, err = run_s2r([*argv, "--out", tmp_path / "reference"], tmp_path / "ref")
    assert code == 0, err
    work = tmp_path / "work"
    work.mkdir()
    proc = s2r_process([*argv, "--out", work / "demo"], tmp_path / "killed")
    staged = lambda: sum(1 for _ in work.glob(".demo.s2r-tmp-*/*/*.png"))  # noqa: E731
    wait_for(lambda: staged() >= 40, proc, tmp_path / "killed", "40 frames written")
    kill_9(proc)
    assert not (work / "demo").exists()
    code, _, err = run_s2r([*argv, "--out", work / "demo"], tmp_path / "rerun")
    assert code == 0, err
    ref = sorted(p.relative_to(tmp_path / "reference") for p in (tmp_path / "reference").rglob("*"))
    got = sorted(p.relative_to(work / "demo") for p in (work / "demo").rglob("*"))
    assert got == ref and len(ref) > 240
    for rel in ref:
        if (tmp_path / "reference" / rel).is_file():
            assert (work / "demo" / rel).read_bytes() == (tmp_path / "reference" / rel).read_bytes()


VALIDATE = ["validate", "demo:paired=true,episodes=3,steps=6,height=64,width=64",
            "--encoders", "state,pixels,efficientnet-lite0", "--gaps", "0,1", "--rollouts", "3",
            "--horizon", "6", "--demos", "4", "--n-boot", "20", "--control-demos", "6"]


@pytest.mark.slow
def test_kill_9_of_validate_midway_then_rerun(tmp_path):
    """Killed after some encoders' outcomes are cached, while computing another's: the rerun
    writes the report an uninterrupted run writes."""
    code, _, err = run_s2r([*VALIDATE, "--cache-dir", tmp_path / "c0", "--out",
                            tmp_path / "reference.json"], tmp_path / "ref")
    assert code == 0, err
    cache = tmp_path / "cache"
    kill_9_while_computing(VALIDATE, cache, tmp_path / "r.json", tmp_path / "killed", 4)
    code, _, err = run_s2r([*VALIDATE, "--cache-dir", cache, "--out", tmp_path / "r.json"],
                           tmp_path / "rerun")
    assert code == 0, err
    assert "waiting for" not in err
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(
        (tmp_path / "reference.json").read_text())
    assert_cache_sound(cache)


# ----------------------------------------------------------------------------- disturbed midway
def test_cache_clear_during_a_score_is_refused_and_the_score_finishes(tmp_path,
                                                                      reference_scores):
    """``cache clear`` while a ``score`` computes into the same cache, at the worst moment: an
    array renamed into place whose record is not yet written (a clear used to delete the
    array, and the score failed on reading it back, leaving a record without its array; one
    that stopped before the rename failed on its deleted temporary file). Now the clear
    refuses in one line, the score finishes with the right leaderboard, the cache is sound
    and clears once the score is done."""
    from s2r.cache import Cache

    cache = tmp_path / "cache"
    proc = stopped_in_write(tmp_path, "record")
    try:
        clear = run_s2r(["cache", "clear", "--cache-dir", cache], tmp_path / "clear")
    finally:
        proc.send_signal(signal.SIGCONT)
    code, out, err = finished(proc, tmp_path / "first")
    assert_clean_failure(*clear, ["another process is computing into the cache", str(cache),
                                  "nothing was deleted"])
    assert code == 0, err
    assert (tmp_path / "s.csv").read_bytes() == reference_scores
    assert assert_cache_sound(cache) == 3
    assert Cache(cache).clear() == 3 and assert_cache_sound(cache) == 0


def test_out_folder_deleted_while_score_runs(tmp_path, reference_scores):
    """The folder of ``--out`` deleted midway: it is made again (as a missing one is at the
    start) and the leaderboard written whole."""
    out = tmp_path / "results" / "s.csv"
    cache = tmp_path / "cache"
    proc = s2r_process([*SCORE, "--cache-dir", cache, "--out", out], tmp_path / "score")
    (tmp_path / "results").mkdir()
    wait_for(lambda: n_entries(cache) >= 1, proc, tmp_path / "score", "the first entry")
    os.rename(tmp_path / "results", tmp_path / "gone")
    shutil.rmtree(tmp_path / "gone")
    code, _, err = finished(proc, tmp_path / "score")
    assert code == 0, err
    assert out.read_bytes() == reference_scores


def test_out_folder_replaced_by_a_file_while_score_runs(tmp_path):
    """The folder of ``--out`` replaced by a file midway: one line naming it, the file kept."""
    out = tmp_path / "results" / "s.csv"
    cache = tmp_path / "cache"
    (tmp_path / "results").mkdir()
    proc = s2r_process([*SCORE, "--cache-dir", cache, "--out", out], tmp_path / "score")
    wait_for(lambda: n_entries(cache) >= 1, proc, tmp_path / "score", "the first entry")
    (tmp_path / "results").rmdir()
    (tmp_path / "results").write_text("a user's notes\n")
    code, out_text, err = finished(proc, tmp_path / "score")
    assert_clean_failure(code, out_text, err, ["results"])
    assert (tmp_path / "results").read_text() == "a user's notes\n"


def test_demo_out_parent_deleted_midway(tmp_path):
    """The folder holding ``demo --out`` deleted while frames are written: one line, nothing
    left behind; the rerun writes the demo."""
    parent = tmp_path / "data"
    parent.mkdir()
    argv = ["demo", "--episodes", "4", "--steps", "30", "--height", "64", "--width", "64",
            "--out", parent / "demo"]
    proc = s2r_process(argv, tmp_path / "run")
    staged = lambda: sum(1 for _ in parent.glob(".demo.s2r-tmp-*/*/*.png"))  # noqa: E731
    wait_for(lambda: staged() >= 40, proc, tmp_path / "run", "40 frames written")
    os.rename(parent, tmp_path / "gone")  # gone at once (rmtree races with the writer)
    shutil.rmtree(tmp_path / "gone")
    code, out, err = finished(proc, tmp_path / "run")
    err = "\n".join(line for line in err.replace("\r", "\n").splitlines()
                    if not line.startswith(("rendering demo", "writing frames")))
    assert_clean_failure(code, out, err, ["data/.demo.s2r-tmp-", "moved or deleted"])
    assert not parent.exists()
    code, _, err = run_s2r(argv, tmp_path / "rerun")
    assert code == 0, err
    assert len(load_dataset(str(parent / "demo"))) == 240
