"""One settings module (issue 25 item 2): every variable parsed in one place, one way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from s2r.settings import Settings, child_environment, current


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
                                             ("", False), ("maybe", False)])
def test_switches_parse_one_way(value, expected):
    s = Settings.from_environ({"S2R_OFFLINE": value, "HF_HUB_OFFLINE": value,
                               "S2R_AUTOCOMPUTE": value})
    assert s.offline is expected and s.hf_offline is expected and s.no_downloads is expected
    # autocompute defaults to on: only an explicit "off" value turns it off
    assert s.autocompute is (value.strip().lower() not in {"0", "off"})


def test_current_reads_the_environment_now_and_child_environment_adds(monkeypatch):
    monkeypatch.setenv("S2R_RAY_ADDRESS", "auto")
    assert current().ray_address == "auto"
    monkeypatch.delenv("S2R_RAY_ADDRESS")
    assert current().ray_address is None
    env = child_environment(S2R_DEMO_SPEC="demo:gap=0")
    assert env["S2R_DEMO_SPEC"] == "demo:gap=0" and env["PATH"] == os.environ["PATH"]
    with pytest.raises(AttributeError):
        current().cache_dir = Path("x")   # frozen
