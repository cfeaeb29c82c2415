"""One settings module (issue 25 item 2): every variable parsed in one place, one way
(issue 33 item 5: ``~`` expands in every path; an empty, blank, multi-line or huge value is
one line naming the variable)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from s2r.errors import S2RError
from s2r.settings import MAX_VALUE_CHARS, Settings, SettingsError, child_environment, current

#: s2r's own variables: each is checked the same way.
OWN = ("S2R_CACHE_DIR", "S2R_WEIGHTS_DIR", "S2R_ENCODERS", "S2R_WEIGHTS_MIRROR", "S2R_OFFLINE",
       "S2R_RAY_ADDRESS", "S2R_DATASET", "S2R_DEMO_SPEC", "S2R_DEFAULT_ENCODERS",
       "S2R_AUTOCOMPUTE",
       "S2R_DATA_ROOTS", "S2R_THREADS", "S2R_EVIDENCE")


def test_defaults_of_an_empty_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Settings.from_environ({})
    assert s.cache_dir == tmp_path / "cache" and s.weights_dir == Path("weights")
    assert s.encoders_config is None and s.weights_mirror is None and s.ray_address is None
    assert s.demo_spec is None and s.default_encoders is None
    assert not s.offline and not s.hf_offline and not s.no_downloads and s.autocompute
    assert s.hf_hub_cache == Path(os.path.expanduser("~")) / ".cache" / "huggingface" / "hub"
    assert not s.hf_hub_cache_set
    assert s.data_roots == (os.path.realpath(tmp_path),
                            os.path.realpath(os.path.expanduser("~")))


def test_every_variable_is_read(tmp_path):
    env = {"S2R_CACHE_DIR": str(tmp_path / "c"), "S2R_WEIGHTS_DIR": str(tmp_path / "w"),
           "S2R_ENCODERS": str(tmp_path / "e.toml"), "S2R_WEIGHTS_MIRROR": "http://m/x///",
           "S2R_RAY_ADDRESS": " ray://h:10001 ", "S2R_DEMO_SPEC": "demo:gap=1",
           "S2R_DEFAULT_ENCODERS": " pixels, ,state ", "S2R_AUTOCOMPUTE": "No",
           "S2R_DATA_ROOTS": os.pathsep.join([str(tmp_path), ""]), "HF_HOME": str(tmp_path / "h")}
    s = Settings.from_environ(env)
    assert s.cache_dir == tmp_path / "c" and s.weights_dir == tmp_path / "w"
    assert s.encoders_config == tmp_path / "e.toml"
    assert s.weights_mirror == "http://m/x" and s.ray_address == "ray://h:10001"
    assert s.demo_spec == "demo:gap=1" and s.default_encoders == ("pixels", "state")
    assert s.autocompute is False and s.data_roots == (os.path.realpath(tmp_path),)
    assert s.hf_hub_cache == tmp_path / "h" / "hub"
    assert Settings.from_environ({"HF_HUB_CACHE": str(tmp_path / "hc"),
                                  "HF_HOME": "x"}).hf_hub_cache == tmp_path / "hc"


@pytest.mark.parametrize("value, expected", [("1", True), ("TRUE", True), (" yes ", True),
                                             ("on", True), ("0", False), ("off", False),
                                             ("No", False)])
def test_switches_parse_one_way(value, expected):
    s = Settings.from_environ({"S2R_OFFLINE": value, "HF_HUB_OFFLINE": value,
                               "S2R_AUTOCOMPUTE": value})
    assert s.offline is expected and s.hf_offline is expected and s.no_downloads is expected
    assert s.autocompute is expected


@pytest.mark.parametrize("name", ["S2R_OFFLINE", "S2R_AUTOCOMPUTE"])
@pytest.mark.parametrize("value", ["maybe", "2", "enabled", ""])
def test_a_switch_that_says_neither_on_nor_off_is_an_error(name, value):
    with pytest.raises(SettingsError, match=f"^{name}"):
        Settings.from_environ({name: value})


@pytest.mark.parametrize("value, expected", [("1", True), ("", False), ("maybe", False)])
def test_hugging_face_offline_is_read_as_hugging_face_reads_it(value, expected):
    assert Settings.from_environ({"HF_HUB_OFFLINE": value}).hf_offline is expected


# ----------------------------------------------------------------------------- ~ in paths
def test_a_tilde_expands_in_every_path_setting(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    s = Settings.from_environ({
        "S2R_CACHE_DIR": "~/c", "S2R_WEIGHTS_DIR": "~/w", "S2R_ENCODERS": "~/e.toml",
        "S2R_DATA_ROOTS": os.pathsep.join(["~/a", "~/b"]),
        "S2R_DEMO_SPEC": os.pathsep.join(["~/sim.zarr", " ~/real.zarr"]), "HF_HOME": "~/hf"})
    assert s.cache_dir == home / "c" and s.weights_dir == home / "w"
    assert s.encoders_config == home / "e.toml" and s.hf_hub_cache == home / "hf" / "hub"
    assert s.data_roots == (os.path.realpath(home / "a"), os.path.realpath(home / "b"))
    assert s.demo_spec == os.pathsep.join([str(home / "sim.zarr"), str(home / "real.zarr")])
    assert Settings.from_environ({"S2R_DEMO_SPEC": "~/folder"}).demo_spec == str(home / "folder")
    assert Settings.from_environ({"HF_HUB_CACHE": "~/hc"}).hf_hub_cache == home / "hc"
    assert Settings.from_environ({"XDG_CACHE_HOME": "~/x"}).hf_hub_cache == \
        home / "x" / "huggingface" / "hub"
    assert Settings.from_environ({"S2R_DEMO_SPEC": "demo:gap=1"}).demo_spec == "demo:gap=1"


def test_a_cache_dir_with_a_tilde_is_made_in_the_home_folder_not_in_a_folder_named_tilde(
        tmp_path, monkeypatch):
    """The bug: ``S2R_CACHE_DIR=~/x`` (quoted, so the shell left it) made ``./~/x``."""
    from s2r.cache import Cache

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("S2R_CACHE_DIR", "~/x")
    monkeypatch.chdir(tmp_path)
    Cache(current().cache_dir).get_or_compute_json({"kind": "k"}, lambda: 1)
    assert (tmp_path / "home" / "x" / ".s2r-cache").is_file()
    assert not (tmp_path / "~").exists()


def test_a_tilde_of_no_user_is_an_error_not_a_literal_folder():
    with pytest.raises(SettingsError, match="S2R_CACHE_DIR='~no-such-user-s2r/x': "
                                            "~no-such-user-s2r names no user"):
        Settings.from_environ({"S2R_CACHE_DIR": "~no-such-user-s2r/x"})


# ----------------------------------------------------------------------------- bad values
BAD_VALUES = {
    "empty": ("", ["is set but empty", "unset it for its default"]),
    "blank": ("   ", ["is set but empty"]),
    "a newline": ("/data/a\nb", ["holds a control character ('\\n' at character 8)"]),
    "a trailing newline": ("/data/a\n", ["holds a control character"]),
    "an escape": ("/data/\x1b[31mred", ["holds a control character ('\\x1b'"]),
    "a tab": ("a\tb", ["holds a control character ('\\t'"]),
    "very long": ("x" * (MAX_VALUE_CHARS + 1),
                  [f"({MAX_VALUE_CHARS + 1:,} characters) is longer than {MAX_VALUE_CHARS:,}"]),
}


@pytest.mark.parametrize("name", OWN)
@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_a_bad_value_of_any_own_variable_is_one_line_naming_it(name, case):
    value, words = BAD_VALUES[case]
    with pytest.raises(SettingsError) as info:
        Settings.from_environ({name: value})
    message = str(info.value)
    assert isinstance(info.value, S2RError) and message.startswith(name)
    assert "\n" not in message and "\x1b" not in message and len(message) < 400, message
    for w in words:
        assert w in message, (w, message)


@pytest.mark.parametrize("name", ["HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"])
def test_other_tools_path_variables_empty_means_unset_but_junk_is_refused(name, tmp_path):
    default = Settings.from_environ({}).hf_hub_cache
    assert Settings.from_environ({name: ""}).hf_hub_cache == default
    assert Settings.from_environ({name: "  "}).hf_hub_cache == default
    with pytest.raises(SettingsError, match=f"^{name}=.*control character"):
        Settings.from_environ({name: "/a\nb"})
    with pytest.raises(SettingsError, match=f"^{name}=.*longer than"):
        Settings.from_environ({name: "/" + "a/" * MAX_VALUE_CHARS})


@pytest.mark.parametrize("name", ["S2R_CACHE_DIR", "S2R_WEIGHTS_DIR", "S2R_ENCODERS",
                                  "S2R_DATA_ROOTS", "HF_HOME"])
def test_a_path_with_a_name_over_255_bytes_is_refused(name):
    with pytest.raises(SettingsError, match=f"^{name}=.*a name in it is 300 bytes long"):
        Settings.from_environ({name: "/data/" + "n" * 300 + "/x"})
    # 255 bytes is the most a name may have (here: 85 three-byte characters)
    assert Settings.from_environ({name: "/data/" + "\u20ac" * 85})


@pytest.mark.parametrize("name, value, words", [
    ("S2R_DATA_ROOTS", os.pathsep * 3, "names nothing; give folders separated by"),
    ("S2R_DEFAULT_ENCODERS", " , ,", "names nothing; give ids separated by commas"),
    ("S2R_WEIGHTS_MIRROR", "mirror.lab/s2r", "is not a base URL"),
    ("S2R_WEIGHTS_MIRROR", "http:///", "is not a base URL"),
    ("S2R_WEIGHTS_MIRROR", "ftp://mirror.lab", "is not a base URL"),
])
def test_a_list_that_names_nothing_or_a_mirror_that_is_no_url_is_an_error(name, value, words):
    """``S2R_DATA_ROOTS=:`` used to mean the default roots (the working and home folders):
    a setting meant to narrow what links open silently widened it."""
    with pytest.raises(SettingsError, match=f"^{name}=.*{words}"):
        Settings.from_environ({name: value})


def test_current_reads_the_environment_now_and_child_environment_adds(monkeypatch):
    monkeypatch.setenv("S2R_RAY_ADDRESS", "auto")
    assert current().ray_address == "auto"
    monkeypatch.delenv("S2R_RAY_ADDRESS")
    assert current().ray_address is None
    env = child_environment(S2R_DEMO_SPEC="demo:gap=0")
    assert env["S2R_DEMO_SPEC"] == "demo:gap=0" and env["PATH"] == os.environ["PATH"]
    with pytest.raises(AttributeError):
        current().cache_dir = Path("x")   # frozen
    # the child's settings are checked before it starts: one line here, not in the child
    with pytest.raises(SettingsError, match="^S2R_CACHE_DIR is set but empty"):
        child_environment(S2R_CACHE_DIR="")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "sometimes")
    with pytest.raises(SettingsError, match="^S2R_AUTOCOMPUTE='sometimes' is not a switch"):
        current()


def test_dataset_is_read_from_s2r_dataset_and_its_older_name():
    assert Settings.from_environ({"S2R_DATASET": "toy:mode=fancy"}).dataset == "toy:mode=fancy"
    older = Settings.from_environ({"S2R_DEMO_SPEC": "demo:gap=1"})
    assert older.dataset == older.demo_spec == "demo:gap=1"
    both = Settings.from_environ({"S2R_DATASET": "demo:gap=0", "S2R_DEMO_SPEC": "demo:gap=1"})
    assert both.dataset == "demo:gap=0"
    assert Settings.from_environ({"S2R_DATASET": "metaworld:task=assembly-v3"}).dataset == \
        "metaworld:task=assembly-v3"


@pytest.mark.parametrize("value, expected", [(None, None), ("auto", None), (" AUTO ", None),
                                             ("1", 1), (" 3 ", 3), ("64", 64)])
def test_threads_are_auto_or_a_whole_number(value, expected):
    env = {} if value is None else {"S2R_THREADS": value}
    assert Settings.from_environ(env).threads == expected


@pytest.mark.parametrize("value", ["0", "-2", "1.5", "two", "2 threads", "+2", "all"])
def test_a_thread_count_that_is_not_a_whole_number_from_1_is_one_line(value):
    with pytest.raises(SettingsError) as info:
        Settings.from_environ({"S2R_THREADS": value})
    message = str(info.value)
    assert message.startswith(f"S2R_THREADS={value!r} is not a thread count: give auto or a "
                              "whole number >= 1 (unset: auto)")
    assert "\n" not in message


def test_auto_threads_are_every_core_this_process_may_use(monkeypatch):
    from s2r import settings as settings_module
    from s2r.settings import embedding_threads, share_of_cores

    assert embedding_threads(None, cores=8) == 8 and embedding_threads(None, cores=0) == 1
    assert embedding_threads(3, cores=2) == 3                    # a count is used as it is
    monkeypatch.setattr(settings_module.os, "sched_getaffinity", lambda pid: {0, 2, 5},
                        raising=False)
    assert settings_module.core_count() == 3                     # its affinity, not the machine
    assert embedding_threads(None) == 3
    # a share of the cores (Meta-World's render workers): at least one each
    assert share_of_cores(2) == 1 and share_of_cores(1) == 3 and share_of_cores(4, 8) == 2
    assert share_of_cores(5) == 1
    for name, bad in (("threads", 0), ("threads", 1.5), ("threads", True)):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            embedding_threads(bad)
    with pytest.raises(ValueError, match="^parties must be"):
        share_of_cores(0)
