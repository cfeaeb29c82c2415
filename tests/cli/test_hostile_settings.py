"""The hostile-input catalogue, settings (issue 33 item 5): every ``S2R_*`` variable (and the
Hugging Face folders s2r reads) with a value s2r cannot use, and every folder that is not an
s2r cache given as one, is one line naming it, exit 2, nothing written, the user's files
byte for byte unchanged, and the folder never walked.

Each ``case_*`` builds what it needs under ``root`` and returns a :class:`Case`
(``tests/helpers/hostile.py``); every case runs through ``s2r.cli.main`` in process with its
``env`` set, while listing any folder a case names (``WALK_GUARDED``) past
:data:`s2r.cache.layout.PEEK_NAMES` names, or anything inside it, fails the test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from s2r.cache.layout import PEEK_NAMES
from s2r.settings import MAX_VALUE_CHARS
from tests.helpers.hostile import Case, run_case

TINY_DEMO = "demo:episodes=2,steps=4,height=64,width=80"
LONG = "x" * 1_000_000  # a 1 MB value: the error quotes 100 characters of it


# ----------------------------------------------------------------------------- helpers
def _users_folder(root: Path, n_files: int = 3) -> tuple[Path, list]:
    """A folder of a user's files (no cache marker), with an ``arrays/`` holding a file
    named like a cache entry: what a mistyped cache folder looks like."""
    folder = root / "thesis"
    (folder / "arrays").mkdir(parents=True)
    files = [folder / "arrays" / ("0" * 32 + ".npy"), folder / "arrays" / "figure.npy"]
    files += [folder / f"chapter{i:03d}.tex" for i in range(n_files)]
    for f in files:
        f.write_text(f"the user's {f.name}")
    return folder, files


def _cache_files(folder: Path) -> list:
    """What s2r would create in a cache folder: none may appear in a folder it refuses."""
    return [folder / ".s2r-cache", folder / "index", folder / "locks", folder / "records"]


def _settings_case(argv: list, name: str, value: str, words: list, **kw) -> Case:
    return Case(argv, [name, *words], env={name: value}, **kw)


# ----------------------------------------------------------------------------- the cache folder
def case_cache_ls_of_the_root_folder(root):
    return Case(["cache", "ls"], ["/ is not an s2r cache folder", "no .s2r-cache marker"],
                env={"S2R_CACHE_DIR": "/"}, outputs=[Path("/.s2r-cache"), Path("/index")])


def case_cache_clear_of_the_root_folder(root):
    return Case(["cache", "clear"], ["/ is not an s2r cache folder", "nothing was deleted"],
                env={"S2R_CACHE_DIR": "/"}, outputs=[Path("/.s2r-cache"), Path("/index")])


def case_cache_ls_of_a_users_folder(root):
    folder, files = _users_folder(root)
    return Case(["cache", "ls", "--json"], ["thesis is not an s2r cache folder",
                                            "holds 'chapter000.tex' and 2 more"],
                env={"S2R_CACHE_DIR": str(folder)}, kept=files, outputs=_cache_files(folder))


def case_cache_clear_of_a_users_folder(root):
    folder, files = _users_folder(root)
    return Case(["cache", "clear"], ["thesis is not an s2r cache folder", "nothing was deleted"],
                env={"S2R_CACHE_DIR": str(folder)}, kept=files, outputs=_cache_files(folder))


def case_cache_clear_of_a_big_folder_reads_a_few_names(root):
    """A home folder: hundreds of names; s2r reads 65 of them and stops."""
    folder, files = _users_folder(root, n_files=300)
    return Case(["cache", "clear", "--cache-dir", str(folder)],
                [f"holds more than {PEEK_NAMES} entries", "nothing was deleted"],
                kept=files, outputs=_cache_files(folder))


def case_cache_clear_of_a_folder_with_a_marker_that_is_a_link(root):
    """A marker s2r did not write (a link to some file) does not make a folder s2r's."""
    folder, files = _users_folder(root)
    (folder / ".s2r-cache").symlink_to(files[-1])
    return Case(["cache", "clear", "--cache-dir", str(folder)],
                ["thesis is not an s2r cache folder", "its .s2r-cache is a link or a folder",
                 "nothing was deleted"], kept=files,
                outputs=[folder / "index", folder / "locks", folder / "records"])


def case_embed_into_a_users_folder_as_cache(root):
    """A command that writes the cache refuses the folder before loading the dataset."""
    folder, files = _users_folder(root)
    out = root / "z.npz"
    return Case(["embed", TINY_DEMO, "--encoder", "pixels", "--cache-dir", str(folder),
                 "--out", str(out)], ["thesis is not an s2r cache folder"], kept=files,
                outputs=[out, *_cache_files(folder)])


def case_score_into_a_users_folder_as_cache(root):
    folder, files = _users_folder(root)
    out = root / "scores.json"
    return Case(["score", TINY_DEMO, "--encoders", "pixels", "--out", str(out)],
                ["thesis is not an s2r cache folder", "writes and deletes nothing there"],
                env={"S2R_CACHE_DIR": str(folder)}, kept=files,
                outputs=[out, *_cache_files(folder)])


# ----------------------------------------------------------------------------- S2R_CACHE_DIR
def case_cache_dir_empty(root):
    return _settings_case(["cache", "ls"], "S2R_CACHE_DIR", "",
                          ["is set but empty", "unset it for its default (./cache)"])


def case_cache_dir_blank(root):
    return _settings_case(["cache", "clear"], "S2R_CACHE_DIR", "   ", ["is set but empty"])


def case_cache_dir_with_a_newline(root):
    return _settings_case(["cache", "ls"], "S2R_CACHE_DIR", f"{root}/c\nd",
                          ["holds a control character ('\\n'"],
                          outputs=[root / "c\nd", root / "c"])


def case_cache_dir_with_terminal_escapes(root):
    return _settings_case(["cache", "ls"], "S2R_CACHE_DIR", f"\x1b]0;pwned\x07{root}/c",
                          ["holds a control character ('\\x1b'"], not_words=["\x1b", "\x07"])


def case_cache_dir_of_a_megabyte(root):
    return _settings_case(["cache", "ls"], "S2R_CACHE_DIR", LONG,
                          [f"(1,000,000 characters) is longer than {MAX_VALUE_CHARS:,}"],
                          not_words=["x" * 101])


def case_cache_dir_with_a_name_over_255_bytes(root):
    return _settings_case(["cache", "ls"], "S2R_CACHE_DIR", f"{root}/{'n' * 300}",
                          ["a name in it is 300 bytes long", "at most 255 bytes"])


def case_cache_dir_of_an_unknown_user(root):
    return _settings_case(["cache", "ls"], "S2R_CACHE_DIR", "~no-such-user-s2r/cache",
                          ["~no-such-user-s2r names no user"], outputs=[Path("~no-such-user-s2r")])


# ----------------------------------------------------------------------------- weights, config
def case_weights_dir_empty(root):
    return _settings_case(["encoders"], "S2R_WEIGHTS_DIR", "", ["is set but empty",
                                                               "(./weights)"])


def case_weights_dir_with_a_newline(root):
    return _settings_case(["weights", "verify"], "S2R_WEIGHTS_DIR", f"{root}/w\n",
                          ["holds a control character"])


def case_encoders_config_with_a_tab(root):
    return _settings_case(["encoders"], "S2R_ENCODERS", " \t ", ["holds a control character"])


def case_encoders_config_empty(root):
    return _settings_case(["encoders", "--all"], "S2R_ENCODERS", "", ["is set but empty"])


def case_encoders_config_of_a_megabyte(root):
    return _settings_case(["encoders"], "S2R_ENCODERS", LONG, ["is longer than"],
                          not_words=["x" * 101])


def case_offline_neither_on_nor_off(root):
    return _settings_case(["encoders"], "S2R_OFFLINE", "maybe",
                          ["'maybe' is not a switch", "0, false, no or off"])


def case_mirror_that_is_no_url(root):
    return _settings_case(["weights", "fetch", "vip"], "S2R_WEIGHTS_MIRROR", "mirror.lab/s2r",
                          ["is not a base URL"], outputs=[root / "w"])


def case_hf_home_with_a_newline(root):
    return _settings_case(["encoders"], "HF_HOME", f"{root}/hf\nx",
                          ["holds a control character"])


# ----------------------------------------------------------------------------- the dashboard's
# ``s2r app`` checks the server's settings before it starts it (the guard below fails the test
# if it would start).
def case_app_demo_spec_empty(root):
    return _settings_case(["app"], "S2R_DEMO_SPEC", "", ["is set but empty",
                                                        "(the built-in demo)"])


def case_app_default_encoders_naming_none(root):
    return _settings_case(["app"], "S2R_DEFAULT_ENCODERS", " , ,", ["names nothing"])


def case_app_autocompute_neither_on_nor_off(root):
    return _settings_case(["app"], "S2R_AUTOCOMPUTE", "sometimes", ["is not a switch"])


def case_app_data_roots_naming_none(root):
    """``S2R_DATA_ROOTS=:`` meant the default roots: narrowing what links open widened it."""
    return _settings_case(["app"], "S2R_DATA_ROOTS", os.pathsep, ["names nothing"])


def case_app_ray_address_blank(root):
    return _settings_case(["app"], "S2R_RAY_ADDRESS", "  ", ["is set but empty"])


def case_app_cache_dir_flag_over_a_bad_variable(root):
    """``--cache-dir`` replaces ``S2R_CACHE_DIR`` for the server, the other settings stay:
    checked as the server will read them."""
    return Case(["app", "--cache-dir", str(root / "c")], ["S2R_OFFLINE='2' is not a switch"],
                env={"S2R_OFFLINE": "2"}, outputs=[root / "c"])


CASES = {name[5:]: fn for name, fn in globals().copy().items() if name.startswith("case_")}


# ----------------------------------------------------------------------------- running them
@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every case's files, built once: name -> (Case, root)."""
    out = {}
    for name, fn in CASES.items():
        root = tmp_path_factory.mktemp(name)
        out[name] = (fn(root), root)
    return out


def _tree(folder: Path) -> dict:
    """Every path under ``folder`` with its bytes (files) or kind, links not followed."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            found[str(path)] = ("link", os.readlink(path)) if path.is_symlink() else (
                path.read_bytes() if path.is_file() else "folder")
    return found


class _Counted:
    """``os.scandir`` of a guarded folder: fails the test past ``limit`` names."""

    def __init__(self, it, path, limit):
        self._it, self._path, self._limit, self._n = it, path, limit, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._it.close()

    def __iter__(self):
        return self

    def __next__(self):
        self._n += 1
        assert self._n <= self._limit, f"{self._path} was listed past {self._limit} names"
        return next(self._it)

    def close(self):
        self._it.close()


def _guard_walks(monkeypatch, folders) -> None:
    """Listing a folder of ``folders`` past ``PEEK_NAMES + 1`` names, or anything inside one,
    fails the test (``os.walk``, ``Path.glob``/``rglob``/``iterdir`` all list through these)."""
    real_scandir, real_listdir = os.scandir, os.listdir
    guarded = [os.path.realpath(f) for f in folders]

    def where(path):
        if isinstance(path, int):
            return None
        real = os.path.realpath(os.fsdecode(path))
        for folder in guarded:
            if real == folder:
                return "at"
            if folder != "/" and real.startswith(folder.rstrip("/") + "/"):
                return "inside"
        return None

    def scandir(path="."):
        place = where(path)
        assert place != "inside", f"{path} was listed: a walk of a refused folder"
        it = real_scandir(path)
        return _Counted(it, path, PEEK_NAMES + 1) if place == "at" else it

    def listdir(path="."):
        assert where(path) is None, f"{path} was listed whole"
        return real_listdir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)


@pytest.fixture(autouse=True)
def never_start_the_dashboard(monkeypatch):
    """``s2r app`` becomes the Streamlit server (``os.execve``): a case that got that far
    failed, and must not replace the test process."""
    import subprocess

    def started(*args, **kwargs):
        raise AssertionError(f"the dashboard was started: {args[:2]}")

    monkeypatch.setattr(os, "execve", started)
    monkeypatch.setattr(subprocess, "call", started)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_main_exits_2_with_one_line_naming_the_setting(built, capsys, monkeypatch, name):
    """One line, exit 2, nothing written; every folder the case gives as a cache is never
    walked (at most ``PEEK_NAMES + 1`` of its names read) and keeps every byte and name."""
    case, root = built[name]
    folders = {str(Path(p).parent) for p in case.kept} | {
        v for k, v in case.env.items() if k == "S2R_CACHE_DIR" and os.path.isdir(v)}
    if "--cache-dir" in case.argv:
        folders.add(case.argv[case.argv.index("--cache-dir") + 1])
    tops = {f for f in folders if f != "/" and not any(
        f != g and f.startswith(g + os.sep) for g in folders)}
    before = {f: _tree(Path(f)) for f in tops}
    with monkeypatch.context() as mp:
        _guard_walks(mp, folders)
        run_case(case, capsys, name)
    for folder, tree in before.items():
        assert _tree(Path(folder)) == tree, f"{folder} changed"
    assert not Path("~no-such-user-s2r").exists() and not Path("~").exists()


def test_the_walk_guard_catches_a_walk(tmp_path, monkeypatch):
    """The guard above is not a no-op: a whole listing, a walk or ``rglob`` of a guarded
    folder fails."""
    folder, _ = _users_folder(tmp_path, n_files=PEEK_NAMES + 5)
    with monkeypatch.context() as mp:
        _guard_walks(mp, [folder])
        with pytest.raises(AssertionError, match="past"):
            list(os.scandir(folder))
        with pytest.raises(AssertionError, match="listed"):
            list(folder.rglob("*.npy"))
        with pytest.raises(AssertionError, match="listed whole"):
            list(folder.iterdir())
        with pytest.raises(AssertionError):
            list(os.walk(folder))


def test_a_cache_of_s2r_is_used_and_the_settings_with_a_tilde_reach_it(tmp_path, capsys,
                                                                         monkeypatch):
    """The other side: a good cache, named with ``~``, is listed and cleared as before."""
    from s2r.cache import Cache
    from s2r.cli import main

    monkeypatch.setenv("HOME", str(tmp_path))
    Cache(tmp_path / "c").get_or_compute_json({"kind": "k"}, lambda: {"x": 1})
    monkeypatch.setenv("S2R_CACHE_DIR", "~/c")
    assert main(["cache", "ls"]) == 0
    assert "1 entries, " in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert not (tmp_path / "~").exists()


def test_a_bad_setting_fails_a_command_that_reads_no_setting(capsys, monkeypatch):
    """``info demo`` reads no setting itself; a bad one still fails it before any work."""
    from s2r.cli import main

    monkeypatch.setenv("S2R_OFFLINE", "maybe")
    assert main(["info", "demo:episodes=2,steps=4,height=64,width=80"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "S2R_OFFLINE" in err and len(err.strip().splitlines()) == 1


def test_cache_dir_option_expands_the_home_folder(tmp_path, monkeypatch, capsys):
    """``--cache-dir=~/x`` (the shell leaves ``~`` after ``=``) is the home folder's ``x``,
    never a literal ``./~``."""
    from s2r.cli import main

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert main(["cache", "ls", "--cache-dir=~/x"]) == 0
    capsys.readouterr()
    assert not (tmp_path / "~").exists()


def test_app_refuses_a_user_folder_as_its_cache_before_starting(tmp_path, capsys, monkeypatch):
    """``s2r app --cache-dir FOLDER`` with someone's files in FOLDER: one line, and no server
    is started."""
    import os

    from s2r.cli import main

    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "holiday.jpg").write_bytes(b"jpeg")
    monkeypatch.setattr(os, "execve", lambda *a: (_ for _ in ()).throw(AssertionError("started")))
    assert main(["app", "--cache-dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "photos" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["holiday.jpg"]
