"""format_world: the canonical spec string of a world's dataset, parse_world's inverse."""

from __future__ import annotations

import pytest

from s2r.datasets.world import format_world, parse_world
from s2r.errors import DataError
from s2r.worlds import WORLDS
from tests.worlds.toy import TOY


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(WORLDS._worlds, TOY.name, TOY)
    return TOY


def test_every_option_written_sorted_booleans_lower_case():
    spec = format_world("demo", {"paired": True, "gap": 0.25, "episodes": 3})
    assert spec == ("demo:episodes=3,gap=0.25,height=240,paired=true,seed=0,steps=24,"
                    "width=320")


@pytest.mark.parametrize("options", [
    {}, {"paired": True, "gap": 0.3, "seed": 7}, {"height": 64, "width": 96, "episodes": 2},
    {"gap": 1e-3, "steps": 2}])
def test_round_trips_through_parse_world(options):
    checked = parse_world(format_world("demo", options))["options"]
    assert parse_world(format_world("demo", checked))["options"] == checked
    assert format_world("demo", checked) == format_world("demo", options)  # one string a dataset


def test_a_registered_world_round_trips(toy):
    checked = toy.check_options({"mode": "fancy", "gap": 0.75})
    spec = format_world("toy", checked)
    assert spec.startswith("toy:episodes=3,gap=0.75,height=64,mode=fancy,")
    assert parse_world(spec)["options"] == checked


@pytest.mark.parametrize("kind, options, words", [
    ("nope", {}, "unknown world"), ("demo", {"colour": 1}, "unknown option 'colour'"),
    ("demo", {"gap": 2.0}, "gap")])
def test_refuses_what_the_world_refuses(kind, options, words):
    with pytest.raises(DataError, match=words):
        format_world(kind, options)
