"""The evidence's table and forest plot (s2r.figures.evidence) and `s2r figure evidence`."""

from __future__ import annotations

import json

import pytest

from s2r.cli import main
from s2r.evidence import build_evidence
from s2r.figures import evidence as E
from s2r.metrics import catalogue
from tests.evidence.reports import make_report, ranked_table

SCORES = {"sim2real_score": [0, 0, 0, .3, .5], "dis": [.5, .4, .3, .2, .1]}


@pytest.fixture(scope="module")
def evidence():
    hammer = make_report(ranked_table({0.0: [0, .25, .5, .75, 1], 0.5: [0, .25, .5, .75, 1]},
                                      SCORES), n_boot=50)
    drawer = make_report(ranked_table({0.0: [1, 1, 1, 1, 1], 1.0: [0, .25, .5, .75, 1]},
                                      SCORES), n_boot=50,
                         dataset="metaworld:task=drawer-open-v3,episodes=2,shift=lighting")
    return build_evidence([hammer, drawer], n_boot=200)


def test_rows_leave_out_the_sim_look_and_sort_by_task(evidence):
    rows = E.evidence_rows(evidence)
    assert list(dict.fromkeys(rows["place"])) == ["drawer-open-v3 gap 1, lighting",
                                                  "hammer-v3 gap 0.5"]
    assert len(E.evidence_rows(evidence, real_looks_only=False)) == 2 * len(rows)
    dis = rows[(rows["score"] == "dis") & (rows["task"] == "hammer-v3")].iloc[0]
    assert dis["spearman"] == pytest.approx(-1.0)       # ranked exactly against deployment
    assert dis["verdict"] == "against"


def test_table_marks_ties_and_ends_with_the_combined_estimate(evidence):
    table = E.evidence_table(evidence)
    assert list(table.columns) == ["drawer-open-v3 gap 1, lighting", "hammer-v3 gap 0.5",
                                   E.COMBINED]
    s2r = table.loc["Sim2Real score"]
    assert "(3 tied of 5)" in s2r["hammer-v3 gap 0.5"]  # the clipped zeros tie
    combined = {c["score"]: c for c in evidence["combined"] if c["outcome"] == "success"}
    assert s2r[E.COMBINED].startswith(f"{combined['sim2real_score']['mean_rho']:+.2f}")
    assert f"{combined['sim2real_score']['n_above_chance']} of 2 above chance" in s2r[E.COMBINED]
    assert table.loc["Domain invariance (DIS)", E.COMBINED].startswith("-1.00")


def test_narrowing_table_gives_both_widths_and_the_cells_at_each_k(evidence):
    table = E.narrowing_table(evidence, ks=(3, 6, "all"), n_boot=60, n_subsets=4)
    assert list(table.columns) == ["k = 3", "k = 6", "all"]
    assert list(table.index) == [catalogue.titles()[k] for k in evidence["scores"]]
    dis = table.loc["Domain invariance (DIS)"]      # rho -1 in both real looks: no width
    assert dis["k = 3"] == dis["all"] == "0.00 / 0.00 (2 cells)"
    assert dis["k = 6"] == "no cell (2 have fewer encoders)"
    widths = table.loc["Sim2Real score", "all"].split(" (")[0].split(" / ")
    assert all(0 < float(w) <= 2 for w in widths)     # the clipped zeros leave it uncertain


def test_markdown_is_a_pipe_table_with_one_line_a_score(evidence):
    text = E.markdown(E.evidence_table(evidence))
    lines = text.strip().splitlines()
    assert lines[0].startswith("| score | drawer-open-v3 gap 1, lighting |")
    assert lines[1] == "|---|---|---|---|"
    assert len(lines) == 2 + len(evidence["scores"])


def test_forest_plot_is_titled_labelled_with_chance_and_the_combined_marks(evidence):
    spec = E.forest_plot(evidence).to_dict()
    assert "Which score" in spec["title"]["text"]
    layers = spec["layer"]
    chance = spec["datasets"][layers[0]["data"]["name"]]
    assert layers[0]["mark"]["strokeDash"] and chance[0]["spearman"] == 0
    x = next(lay["encoding"]["x"] for lay in layers if lay["mark"]["type"] == "point")
    assert x["title"].startswith("Spearman rho with real success")
    diamonds = [lay for lay in layers if lay["mark"].get("shape") == "diamond"]
    assert len(diamonds) == 1
    points = next(lay for lay in layers if lay["mark"]["type"] == "point"
                  and lay["mark"].get("shape") != "diamond")
    assert points["encoding"]["color"]["title"] == "task"


def test_forest_plot_reads_on_light_and_dark_themes(evidence):
    """Every score title is drawn whole, the tasks' colours are a saturated scheme (not the
    app theme's pale one) and the combined estimate is black on a white halo."""
    from s2r.figures.render import chart_bytes

    spec = E.forest_plot(evidence).to_dict()
    points = next(lay for lay in spec["layer"] if lay["mark"]["type"] == "point"
                  and lay["mark"].get("shape") != "diamond")
    longest = max(len(t) for t in catalogue.titles().values())
    assert points["encoding"]["y"]["axis"]["labelLimit"] >= 6 * longest   # px per character
    assert points["encoding"]["color"]["scale"]["scheme"] == "tableau10"
    (diamond,) = [lay["mark"] for lay in spec["layer"] if lay["mark"].get("shape") == "diamond"]
    assert (diamond["color"], diamond["stroke"]) == ("black", "white")
    halo, line = [lay["mark"] for lay in spec["layer"]
                  if lay["mark"]["type"] == "rule" and lay["mark"].get("color") in ("white",
                                                                                    "black")]
    assert halo["strokeWidth"] > line["strokeWidth"]
    svg = chart_bytes(E.forest_plot(evidence), "svg").decode()
    assert "…" not in svg                     # no label cut with an ellipsis


def test_figure_command_writes_the_forest_plot(evidence, tmp_path, capsys):
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(evidence))
    out = tmp_path / "forest.svg"
    assert main(["figure", "evidence", str(path), "--out", str(out)]) == 0
    svg = out.read_text()
    assert "<svg" in svg and "Sim2Real score" in svg
    assert main(["figure", "evidence", str(tmp_path / "missing.json"),
                 "--out", str(tmp_path / "x.svg")]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_a_score_table_shows_the_score_it_is_sorted_by():
    import pandas as pd

    from s2r.figures.tables import score_table

    df = pd.DataFrame({"label": ["A", "B"], "encoder": ["a", "b"], "dis": [0.1, 0.9],
                       "paired_retrieval_mrr": [0.8, 0.2]})
    table = score_table(df, "summary", order_by="paired_retrieval_mrr")
    assert "Retrieval MRR" in table and list(table["id"]) == ["a", "b"]
    assert list(score_table(df, "summary", order_by="dis")["id"]) == ["b", "a"]
    assert "Retrieval MRR" not in score_table(df, "summary", order_by="dis")


@pytest.fixture(scope="module")
def study():
    """An evidence of the study's shape: 5 tasks in shift all and 4 kinds of shift alone on
    2 tasks, 18 real-look task-gaps of 19 encoders."""
    from tests.evidence.study_shape import study_evidence

    return study_evidence()


def test_the_all_table_keeps_shift_all_and_says_what_its_combined_covers(study):
    table = E.evidence_table(study, shift="all")
    assert len(table.columns) == 11                 # 5 tasks x 2 gaps, then the combined
    assert all(", " not in c for c in table.columns[:-1])      # no kind of shift among them
    assert table.columns[-1] == "combined (all 18 task-gaps, each kind of shift included)"
    combined = {catalogue.titles()[c["score"]]: c for c in study["combined"]
                if c["outcome"] == "success"}
    for title, c in combined.items():              # the evidence's own, over all 18
        assert table.loc[title, table.columns[-1]].startswith(f"{c['mean_rho']:+.2f}")
        assert f"of {c['n_task_gaps']} above chance" in table.loc[title, table.columns[-1]]
    assert len(E.evidence_table(study).columns) == 19      # every task-gap, as the app shows


def test_the_shift_table_has_a_column_a_kind_with_its_combined_and_each_task(study):
    from s2r.evidence.shifts import combined_by_shift

    table = E.shift_table(study, "progress")
    assert list(table.columns) == ["lighting", "texture", "camera", "distractors"]
    assert list(table.index) == [catalogue.titles()[k] for k in study["scores"]]
    dis = {c["shift"]: c for c in combined_by_shift(study, "progress") if c["score"] == "dis"}
    for kind in table.columns:
        parts = table.loc["Domain invariance (DIS)", kind].split("; ")
        assert parts[0].startswith(f"combined {dis[kind]['mean_rho']:+.2f}")
        assert [p.split(" ")[0] for p in parts[1:]] == ["button-press-topdown-v3",
                                                        "drawer-open-v3"]
    assert E.markdown(E.shift_table(study, sep="<br>")).count("<br>") == 4 * 7 * 2


def test_the_shift_table_is_empty_without_a_kind_of_shift_alone():
    from tests.evidence.reports import make_report, ranked_table

    doc = build_evidence([make_report(ranked_table({0.5: [0, .25, .5, .75, 1]}, SCORES),
                                      n_boot=20)], n_boot=50)
    assert E.shift_table(doc).empty and list(E.evidence_table(doc, shift="all").columns)[-1] \
        == E.COMBINED


def test_the_forest_plot_grows_with_the_task_gaps_and_gives_the_combined_a_line(study,
                                                                                 evidence):
    spec = E.forest_plot(study).to_dict()
    assert spec["height"] == E.FOREST_STEP * (18 + 1) * len(study["scores"])
    assert E.forest_height(evidence, least=0) == E.FOREST_STEP * (2 + 1) * 2
    assert E.forest_height(evidence) == 170        # 2 scores, 2 task-gaps: the least height
    assert E.forest_height(study, per_slot=1, least=500) == 500
    offsets = [lay["encoding"]["yOffset"] for lay in spec["layer"] if "yOffset" in
               lay.get("encoding", {})]
    assert len(offsets) == 5                       # both intervals, points, the combined's
    order = offsets[0]["sort"]
    assert order[-1] == E.COMBINED and len(order) == 19
    assert all(", " not in p for p in order[:10])             # shift all first
    assert [p.split(", ")[1] for p in order[10:18:2]] == ["lighting", "texture", "camera",
                                                         "distractors"]
    points = next(lay for lay in spec["layer"] if lay["mark"]["type"] == "point"
                  and lay["mark"].get("shape") != "diamond")
    assert points["encoding"]["shape"]["title"] == "kind of shift"
    assert points["encoding"]["shape"]["sort"] == ["all", "lighting", "texture", "camera",
                                                   "distractors"]
