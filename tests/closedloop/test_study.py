"""The study (s2r.closedloop.study, `s2r study`): the grid as data, the resumable run, the
manifest, the command."""

import json
import time

import pytest

from s2r.closedloop.validation import study_encoders
from s2r.evidence import read_evidence
from s2r.worlds import WORLDS

from s2r.cache import Cache
from s2r.cli import main
from s2r.closedloop import study as S
from s2r.closedloop.encoder_rollouts import RolloutParams
from s2r.closedloop.validation import BASE_ENCODERS
from s2r.errors import S2RError

TINY = RolloutParams(rollouts=3, horizon=6, demos=4, demo_steps=16, control_demos=6)
SPEC = "demo:paired=true,episodes=3,steps=6,height=64,width=64"
IDS = ("state", "pixels", "resnet18@random")
#: Gaps of the five CortexBench tasks, given here (the tasks' own defaults are SimTask.gaps).
GAPS = {"assembly-v3": (0, 0.1, 0.25), "bin-picking-v3": (0.5, 1),
        "button-press-topdown-v3": (0, 0.5, 1), "drawer-open-v3": (0, 0.5, 1),
        "hammer-v3": (0, 0.1, 0.25)}
MW = ("metaworld:camera=corner,episodes=8,gap=0.5,height=96,masks=true,repeat=2,seed=0,"
      "{shift}steps=40,task={task},width=128")


def demo_plan(**fields) -> S.StudyPlan:
    return S.default_plan([SPEC], gaps={"demo": (0, 1)}, encoders=IDS, params=TINY, shifts=(),
                          n_boot=50, **fields)


def test_the_default_plans_cells_are_every_task_then_each_shift_on_the_shift_tasks():
    cells = S.study_cells(S.default_plan(gaps=GAPS))
    expected = [(f"{t}--all", MW.format(shift="", task=t), GAPS[t]) for t in S.CORTEXBENCH_TASKS]
    expected += [(f"{t}--{k}", MW.format(shift=f"shift={k},", task=t), (0, 1))
                 for t in ("drawer-open-v3", "button-press-topdown-v3")
                 for k in ("lighting", "texture", "camera", "distractors")]
    assert [(c.name, c.spec, c.gaps) for c in cells] == expected
    (encoders,) = {c.encoders for c in cells}
    assert encoders == study_encoders(WORLDS["metaworld"])
    assert encoders[:len(BASE_ENCODERS)] == BASE_ENCODERS
    assert sum(e != "state" for e in encoders) >= 16           # the study's image encoders
    assert len(cells) == 13


def test_the_estimate_counts_rollout_runs_and_a_shift_cell_reuses_its_tasks_sim_look():
    cells = S.study_cells(S.default_plan(gaps=GAPS))
    shared = S.sim_shared(cells)
    assert shared == [False] * 5 + [True] * 8
    params = RolloutParams(rollouts=20)
    button = {c.name: c for c in cells}
    full = S.estimate_seconds(button["button-press-topdown-v3--all"], params)
    per_encoder = S.ENCODER_TASK_SECONDS       # the sim look and gaps 0.5 and 1: three runs
    assert full == pytest.approx(len(cells[0].encoders) * per_encoder)
    shift = button["button-press-topdown-v3--camera"]
    assert S.estimate_seconds(shift, params, True) == pytest.approx(full / 3)    # gap 1 only
    assert S.estimate_seconds(shift, params) == pytest.approx(full * 2 / 3)       # + the sim
    assert S.estimate_seconds(shift, RolloutParams(rollouts=10), True) == pytest.approx(full / 6)


def test_a_demo_cell_has_no_shift_and_draws_no_masks_it_cannot():
    (cell,) = S.study_cells(demo_plan())
    assert cell == S.Cell("demo--all", "demo:episodes=3,gap=0.5,height=64,paired=true,seed=0,"
                                       "steps=6,width=64", IDS, (0.0, 1.0))
    assert S.cell_units(cell) == 3 * (2 * 2 + 1)


@pytest.mark.parametrize("fields, message", [
    ({"encoders": ("state", "pixels")}, "a study ranks encoders, give at least 3 .got 2."),
    ({"shifts": ("fog",)}, "shifts: expected some of lighting, texture, camera, distractors, "
                           "got 'fog'"),
    ({"shifts": ("lighting",), "shift_tasks": ("hammer-v3",)},
     "shift tasks: 'hammer-v3' is not a task of the study"),
    ({"shifts": ("lighting",), "shift_tasks": ("demo",)},
     "shift tasks: the world of 'demo' has no kinds of shift"),
    ({"params": RolloutParams(rollouts=0)}, "rollouts"),
])
def test_a_bad_plan_is_one_line_before_any_work(fields, message):
    plan = S.default_plan([SPEC], gaps={"demo": (0, 1)}, **{"encoders": IDS, "shifts": (),
                                                              **fields})
    with pytest.raises(S2RError, match=message) as info:
        S.study_cells(plan)
    assert "\n" not in str(info.value)


def test_a_task_twice_and_gaps_out_of_range_are_refused():
    twice = S.StudyPlan(tasks=(S.StudyTask(SPEC, (0,)), S.StudyTask(SPEC + ",seed=1", (1,))),
                        shifts=())
    with pytest.raises(S2RError, match="names task 'demo' twice"):
        S.study_cells(twice)
    with pytest.raises(S2RError, match=r"gaps of demo: expected 1 to 21 numbers in \[0, 1\]"):
        S.study_cells(S.StudyPlan(tasks=(S.StudyTask(SPEC, (0, 1.5)),), shifts=()))


def test_the_bar_names_the_cell_and_estimates_the_time_left_from_units_computed():
    seen, now = [], [100.0]
    clock = S._Clock(lambda d, t, m: seen.append((d, t, m)), 10, clock=lambda: now[0])
    clock.skip(2)                                  # a cell already done: not in the rate
    callback = clock.at(2, "demo--all")
    callback(0, 4, "scores")
    assert seen[-1] == (2, 10, "demo--all: scores (estimate: time left unknown yet)")
    now[0] = 108.0                                 # 4 units in 8 s: 2 s a unit, 4 units left
    callback(4, 4, "rollouts")
    assert seen[-1] == (6, 10, "demo--all: rollouts (estimate: 8 s left)")
    assert S._duration(7500) == "2 h 05 min" and S._duration(61) == "2 min"


class Interrupted(Exception):
    """What a Ctrl-C or a lost machine does to a run, raised by a test."""


class FakeReport:
    def __init__(self, spec):
        self.spec = spec

    def to_dict(self):
        return {"dataset": self.spec}


def test_finished_cells_are_skipped_and_the_manifest_says_what_is_done(tmp_path, monkeypatch):
    plan = S.default_plan(gaps=GAPS, encoders=IDS)
    calls, interrupt = [], [True]

    def fake(spec, ids, gaps, **kw):
        calls.append(spec)
        time.sleep(0.02)
        if interrupt[0] and len(calls) == 3:
            raise Interrupted
        return FakeReport(spec)

    monkeypatch.setattr(S, "validate", fake)
    monkeypatch.setattr(S, "study_evidence", lambda *a: {"evidence of": len(a[2])})
    out = tmp_path / "study"
    with pytest.raises(Interrupted):
        S.run_study(plan, out, cache=False, command=["s2r", "study"])
    manifest = json.loads((out / "study.json").read_text())
    assert [c["status"] for c in manifest["cells"]] == ["done"] * 2 + ["pending"] * 11
    assert manifest["cells"][0]["report"] == "reports/assembly-v3--all.json"
    # the interrupted cell keeps the time spent on it, the cells not begun have none
    assert manifest["cells"][0]["wall_s"] >= 0.02 and manifest["cells"][2]["wall_s"] >= 0.02
    assert manifest["cells"][3]["wall_s"] is None
    spent = manifest["cells"][2]["wall_s"]
    assert manifest["command"] == ["s2r", "study"] and manifest["s2r_version"]
    assert manifest["plan"]["tasks"][0]["gaps"] == [0, 0.1, 0.25]
    calls.clear()
    interrupt[0], seen = False, []
    paths = S.run_study(plan, out, cache=False, on_cell=lambda c, p, s: seen.append((c.name, s)))
    cells = S.study_cells(plan)
    assert calls == [c.spec for c in cells[2:]]            # the two done cells: not again
    assert [s is None for _, s in seen] == [True, True] + [False] * 11
    assert paths == [out / "reports" / f"{c.name}.json" for c in cells]
    assert json.loads(paths[5].read_text()) == {"dataset": cells[5].spec}
    assert json.loads((out / "evidence.json").read_text()) == {"evidence of": 13}
    again = json.loads((out / "study.json").read_text())["cells"]
    assert again[2]["wall_s"] >= spent + 0.02          # the resumed run adds its own time
    assert seen[2][1] == again[2]["wall_s"]
    calls.clear()                         # a manifest's report path is never followed elsewhere
    manifest = json.loads((out / "study.json").read_text())
    manifest["cells"][0]["report"] = "../elsewhere.json"
    (tmp_path / "elsewhere.json").write_text("{}")
    (out / "study.json").write_text(json.dumps(manifest))
    assert S.run_study(plan, out, cache=False)[0] == paths[0] and calls == [cells[0].spec]
    calls.clear()                                          # another way of measuring: all again
    S.run_study(S.default_plan(gaps=GAPS, encoders=IDS, n_boot=10), out, cache=False)
    assert len(calls) == 13


def test_sigterm_interrupts_the_study_and_the_handler_comes_back():
    import os
    import signal

    from s2r.commands.study import sigterm_interrupts

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)                    # the handler raises before this ends
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_manifest_that_is_not_one_is_one_line(tmp_path):
    (tmp_path / "study.json").write_text('{"cells": 3}')
    with pytest.raises(S2RError, match="study.json: not a study manifest of version 1"):
        S.run_study(demo_plan(), tmp_path, cache=False)


@pytest.mark.slow
def test_an_interrupted_study_resumes_from_the_cache_and_writes_the_same_report(tmp_path,
                                                                                monkeypatch):
    from s2r.closedloop import rollout

    plan = demo_plan()
    whole = S.run_study(plan, tmp_path / "whole", cache=Cache(tmp_path / "c1"))
    runs = []
    real_run = rollout.run_rollouts

    def counting(act, task, **kw):
        runs.append(kw["look"])
        return real_run(act, task, **kw)

    monkeypatch.setattr(rollout, "run_rollouts", counting)

    def stop(done, total, message):
        if "resnet18@random: rollouts" in message:        # state and pixels measured
            raise Interrupted

    cache = Cache(tmp_path / "c2")
    with pytest.raises(Interrupted):
        S.run_study(plan, tmp_path / "resumed", cache=cache, progress=stop)
    assert len(runs) == 2 * 2                              # sim and gap 1, two encoders
    runs.clear()
    (again,) = S.run_study(plan, tmp_path / "resumed", cache=cache)
    assert len(runs) == 2                                  # only resnet18@random's
    assert json.loads(again.read_text()) == json.loads(whole[0].read_text())
    evidence = read_evidence(tmp_path / "resumed" / "evidence.json")
    assert {r["task"] for r in evidence["rows"]} == {"demo"}
    assert evidence["provenance"]["source"] == "s2r study"
    assert evidence["provenance"]["report_files"] == ["demo--all.json"]
    assert evidence["provenance"]["wall_s"] > 0
    runs.clear()
    S.run_study(plan, tmp_path / "resumed", cache=cache)   # done: nothing at all
    assert runs == []


def test_the_command_refuses_bad_arguments_in_one_line(tmp_path, capsys):
    common = ["study", "--tasks", "", "--spec", SPEC, "--shifts", "", "--out-dir",
              str(tmp_path / "o"), "--dry-run"]
    for extra, message in [
        (["--gaps", "demo=0,2"], "--gaps demo: expected at most 21 numbers in [0, 1]"),
        (["--gaps", "demo"], "--gaps: expected TASK=G,G;... with each task once"),
        (["--gaps", "hammer-v3=0,1"], "--gaps: 'hammer-v3' is not a task of the study"),
        (["--gaps", "demo=0", "--encoders", "state,pixels"], "give at least 3 (got 2)"),
        (["--gaps", "demo=0", "--n-boot", "0"], "--n-boot must be in [1, "),
        (["--gaps", "demo=0", "--rollouts", "0"], "rollouts"),
        (["--gaps", "demo=0", "--ray", "no-port"], "--address must be HOST:PORT"),
        (["--gaps", "demo=0", "--shifts", "fog", "--shift-tasks", "demo"], "got 'fog'"),
        (["--gaps", "demo=0", "--tasks", "a b"], "--tasks: expected names separated by"),
    ]:
        assert main([*common, *extra]) == 2, extra
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err, (extra, err)
    assert not (tmp_path / "o").exists()


def test_the_dry_run_prints_the_cells_and_an_estimate(tmp_path, capsys):
    assert main(["study", "--tasks", "", "--spec", SPEC, "--gaps", "demo=0,0.5,1",
                 "--encoders", ",".join(IDS), "--shifts", "", "--out-dir", str(tmp_path / "o"),
                 "--dry-run"]) == 0
    text = capsys.readouterr().out
    # 3 encoders x ENCODER_TASK_SECONDS at 20 rollouts and 3 gaps
    minutes = round(3 * S.ENCODER_TASK_SECONDS / 60)
    assert "demo--all" in text and f"~{minutes} min" in text and "1 cells; estimate:" in text
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_the_command_runs_the_study_and_reruns_nothing(tmp_path, capsys):
    out = tmp_path / "o"
    args = ["study", "--tasks", "", "--spec", SPEC, "--gaps", "demo=0,1", "--encoders",
            ",".join(IDS), "--shifts", "", "--rollouts", "3", "--horizon", "6", "--demos", "4",
            "--demo-steps", "16", "--control-demos", "6", "--n-boot", "50",
            "--no-object-focus", "--out-dir", str(out), "--cache-dir", str(tmp_path / "c")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"demo--all: {out / 'reports' / 'demo--all.json'}" in text
    assert f"wrote {out / 'study.json'}" in text
    report = json.loads((out / "reports" / "demo--all.json").read_text())
    assert len(report["results"]) == 3 * 2 and "object_focus" not in report["params"]
    manifest = json.loads((out / "study.json").read_text())
    assert manifest["command"][:2] == ["s2r", *manifest["command"][1:2]]
    assert manifest["cells"][0]["status"] == "done"
    assert main(args) == 0                        # its own outputs: replaced without --force
    assert "(already done)" in capsys.readouterr().out


def test_a_task_without_given_gaps_runs_at_its_tasks_default_gaps(monkeypatch):
    from types import SimpleNamespace

    from s2r.worlds import WORLDS

    monkeypatch.setattr(WORLDS["demo"], "task", lambda options: SimpleNamespace(gaps=(0, 0.3)))
    assert S.default_plan([SPEC], shifts=()).tasks == (S.StudyTask(SPEC, (0.0, 0.3)),)


def test_an_unknown_task_or_a_spec_of_no_world_is_one_line(tmp_path, capsys):
    for extra in (["--tasks", "juggle-v3"], ["--tasks", "", "--spec", str(tmp_path)]):
        assert main(["study", *extra, "--out-dir", str(tmp_path / "o"), "--dry-run"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "\n" not in err, err
