"""Every task's default validation gaps: what `validate` runs without --gaps and what the
Validation page opens on."""

from __future__ import annotations

import pytest

from s2r.cli import main
from s2r.worlds import WORLDS, task_gaps


def test_every_task_has_sorted_gaps_in_unit_interval_starting_at_the_sim_look():
    gaps = task_gaps()
    assert ("demo", None) in gaps
    assert {t for w, t in gaps if w == "metaworld"} == set(WORLDS["metaworld"].tasks)
    for key, g in gaps.items():
        assert g[0] == 0.0, key                     # the sim look's twin comes first
        assert list(g) == sorted(set(g)), key
        assert all(0.0 <= x <= 1.0 for x in g), key
        assert len(g) >= 2, key                     # at least one real gap


def test_meta_world_tasks_whose_image_policies_all_fail_at_half_use_smaller_gaps():
    gaps = task_gaps()
    assert max(gaps[("metaworld", "assembly-v3")]) < 0.5
    assert max(gaps[("metaworld", "hammer-v3")]) < 0.5
    assert gaps[("metaworld", "button-press-topdown-v3")] == (0.0, 0.5, 1.0)


class _Ran(Exception):
    pass


def _gaps_run(monkeypatch, tmp_path, spec: str, *extra: str) -> list:
    """The gaps `validate SPEC ...` hands the closed loop (which is stopped there)."""
    seen = {}

    def fake_validate(spec, ids, gaps, **kwargs):
        seen["gaps"] = list(gaps)
        raise _Ran

    monkeypatch.setattr("s2r.closedloop.validation.validate", fake_validate)
    with pytest.raises(_Ran):
        main(["validate", spec, "--encoders", "state,pixels,efficientnet-lite0", *extra,
              "--out", str(tmp_path / "r.json")])
    return seen["gaps"]


@pytest.mark.parametrize("spec, expected", [
    ("demo:episodes=2,steps=4,height=96,width=128", [0.0, 0.5, 1.0]),
    ("metaworld:task=assembly-v3,episodes=2,height=96,width=128", [0.0, 0.1, 0.25]),
    ("metaworld:task=hammer-v3,episodes=2,height=96,width=128", [0.0, 0.05, 0.1]),
])
def test_validate_without_gaps_runs_the_tasks_own(spec, expected, monkeypatch, tmp_path):
    assert _gaps_run(monkeypatch, tmp_path, spec) == expected


def test_given_gaps_win_over_the_tasks(monkeypatch, tmp_path):
    spec = "metaworld:task=assembly-v3,episodes=2,height=96,width=128"
    assert _gaps_run(monkeypatch, tmp_path, spec, "--gaps", "0.75,0") == [0.75, 0.0]


def test_help_lists_each_tasks_gaps(capsys):
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "assembly-v3 0,0.1,0.25" in text.replace("- ", "-")
