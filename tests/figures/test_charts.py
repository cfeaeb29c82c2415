"""s2r/figures (scores, tables, projection): the score table frame, reference lines and the
Altair specs the pages draw and ``python -m s2r figure`` writes.

Charts are checked through their Vega-Lite dicts (``chart.to_dict()``): titles, axis titles,
legends, layers and the data each layer draws.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from s2r.metrics import catalogue
from s2r.figures import projection, tables
from s2r.figures import scores as charts


def _record(eid, *, name, table_number=None, architecture="CNN", group="general", dis=0.5,
            skill=0.3, precision="auto", reference="ceiling", params_m=11.7, **extra):
    rec = {
        "encoder": {"id": eid, "name": name, "table_number": table_number,
                    "architecture": architecture, "pretraining_group": group,
                    "pretraining_data": "ImageNet", "params_m": params_m, "dim": 512,
                    "random_init": False, "status": "ready"},
        "dataset": {"name": "demo", "fingerprint": "f" * 16},
        "precision": precision,
        "dis": dis, "dis_ci_low": dis - 0.1, "dis_ci_high": dis + 0.1,
        "transfer_score_skill": skill, "transfer_score_skill_ci_low": None,
        "transfer_score_skill_ci_high": None,
        "transfer_score": None if skill is None else 2.0 * skill, "transfer_score_floor": 0.0,
        "transfer_score_ceiling": 3.0,
        "skill_reference": {"transfer_score": reference, "action_score_heldout": reference},
        "replicates": {"dis": [0.1, 0.2]},
    }
    rec.update(extra)
    return rec


RECORDS = [
    _record("resnet18", name="ResNet18", table_number=14, dis=0.6, skill=0.4,
            transfer_score_skill_ci_low=0.35, transfer_score_skill_ci_high=0.45),
    _record("pixels", name="Raw pixels", architecture=None, group=None, dis=0.2, skill=0.1,
            params_m=None),
    _record("r18i8", name="ResNet18", table_number=14, precision="int8", dis=0.61, skill=None),
]


# ----------------------------------------------------------------------------- frame
def test_fmt_ci_writes_the_interval_or_says_na():
    row = {"a": 0.81234, "a_ci_low": 0.79, "a_ci_high": 0.8333}
    assert charts.fmt_ci(row, "a") == "0.812 [0.790, 0.833]"
    assert charts.fmt_ci({"a": 0.5}, "a") == "0.500"
    assert charts.fmt_ci({"a": np.nan}, "a") == "n/a"
    assert charts.fmt_ci({}, "a") == "n/a"


def test_scores_frame_labels_legends_and_tooltip_text():
    df = charts.scores_frame(RECORDS)
    assert list(df["encoder"]) == ["resnet18", "pixels", "r18i8"]
    assert list(df["label"]) == ["#14 ResNet18", "Raw pixels", "#14 ResNet18 · int8"]
    assert list(df["arch"]) == ["CNN", "Pixels", "CNN"]       # no architecture: the pixels
    assert list(df["group"]) == ["general", "none", "general"]
    assert list(df["params_m"]) == [11.7, 0.0, 11.7]
    assert df["transfer_score_skill_txt"].tolist()[:2] == ["0.400 [0.350, 0.450]", "0.100"]
    assert df["transfer_score_skill_txt"].iloc[2] == "n/a"
    assert not [c for c in df.columns if c.startswith("replicates.")]  # never charted
    assert charts.scores_frame([]).empty


def test_unstable_penalty_choice_is_marked_in_table_text_and_tooltip():
    def choice(unstable, mean_share):
        return {"alpha": [0.1], "grid": [0.1, "inf"], "share": [1 - mean_share, mean_share],
                "mean_action_share": mean_share, "flip_share": mean_share,
                "unstable": unstable}

    shaky = _record("shaky", name="Shaky", transfer_score_skill_ci_low=-0.1,
                    transfer_score_skill_ci_high=0.5, sim2real_score=0.2,
                    ridge_alpha_choice={"transfer_score": choice(True, 0.41),
                                        "action_score_heldout": choice(False, 0.05)})
    steady = _record("steady", name="Steady", sim2real_score=0.3,
                     ridge_alpha_choice={"transfer_score": choice(False, 0.0),
                                         "action_score_heldout": choice(False, 0.0)})
    df = charts.scores_frame([shaky, steady, RECORDS[0]])      # the last: an older record
    assert df["transfer_score_skill_txt"].tolist() == [
        "0.300 [-0.100, 0.500] ⚠", "0.300", "0.400 [0.350, 0.450]"]
    assert df["sim2real_score_txt"].iloc[0].endswith(charts.UNSTABLE_MARK)
    assert not df["sim2real_score_txt"].iloc[1].endswith(charts.UNSTABLE_MARK)
    assert df["penalty_note"].iloc[0] == ("transfer probe: the mean action (no probe) in 41% "
                                          "of the bootstrap replicates, so the score may be "
                                          "its floor")
    assert df["penalty_note"].iloc[1:].tolist() == ["", ""]
    assert not [c for c in df.columns if c.startswith("ridge_alpha_choice.")]
    spec = charts.score_scatter(df, y="transfer_score_skill").to_dict()
    tips = [t["title"] for layer in spec["layer"] for t in layer.get("encoding", {}).get(
        "tooltip", []) if isinstance(t, dict)]
    assert "⚠ Unstable penalty choice" in tips
    note = tables.unstable_penalty_note(df)
    assert note.startswith("⚠ Unstable penalty choice: Shaky (transfer probe: the mean action")
    assert "Steady" not in note
    assert tables.unstable_penalty_note(charts.scores_frame([steady])) is None
    table = tables.score_table(df, "table")
    assert table.loc[table["id"] == "shaky", "Transfer skill"].item().endswith(" ⚠")
    calm = charts.score_scatter(charts.scores_frame([steady]), y="transfer_score_skill").to_dict()
    assert "⚠ Unstable penalty choice" not in [
        t["title"] for layer in calm["layer"]
        for t in layer.get("encoding", {}).get("tooltip", []) if isinstance(t, dict)]


# ----------------------------------------------------------------------------- references
def test_reference_lines_for_skills_floor_and_ceiling():
    df = charts.scores_frame(RECORDS)
    refs = charts.reference_lines(df, "transfer_score_skill")
    assert refs["value"].tolist() == [0.0, 1.0]
    assert refs["label"].tolist() == ["0 = floor (no information)", "1 = robot-state ceiling"]
    no_state = charts.scores_frame([_record("a", name="A", reference="perfect")])
    assert charts.reference_lines(no_state, "transfer_score_skill")["label"].iloc[1] == \
        "1 = perfect prediction"
    raw = charts.reference_lines(df, "transfer_score")
    assert raw["value"].tolist() == [0.0, 3.0]
    assert raw["label"].tolist() == ["floor (mean action) 0.00", "ceiling (robot state) 3.00"]
    assert charts.reference_lines(df, "action_score_train").empty  # a null per encoder instead


# ----------------------------------------------------------------------------- scatter
def _layers(spec):
    return spec["layer"]


def test_score_scatter_has_title_axes_legends_and_reference_rules():
    df = charts.scores_frame(RECORDS)
    spec = charts.score_scatter(df, y="transfer_score_skill", selected="pixels").to_dict()
    assert spec["title"]["text"] == "Domain invariance vs action score (paper Fig. 5)"
    assert "Dashed green" in spec["title"]["subtitle"]
    marks = [layer["mark"]["type"] for layer in _layers(spec)]
    assert marks == ["rule", "text", "rule", "rule", "point", "text"]
    points = _layers(spec)[4]["encoding"]
    assert points["x"]["title"].startswith(catalogue.get("dis").title)
    assert points["y"]["title"] == catalogue.get("transfer_score_skill").title
    assert points["color"]["title"] == "Architecture" and points["shape"]["title"] == "Pretraining"
    assert points["size"]["title"] == "Parameters (M)"
    assert points["strokeWidth"]["condition"]["value"] == 3  # the selected encoder's outline
    # the int8 row has no skill: it is not drawn (no NaN point at the bottom)
    drawn = [d for d in spec["datasets"].values() if d and "encoder" in d[0]]
    assert {row["encoder"] for row in drawn[0]} == {"resnet18", "pixels"}


def test_score_scatter_names_the_papers_figure_and_each_axiss_record():
    from s2r.evidence import score_record
    from tests.evidence.handmade import dis_strongest

    df = charts.scores_frame(RECORDS)
    keys = ("dis", "transfer_score_skill", "transfer_score")
    records = {k: score_record(dis_strongest(), k) for k in keys}
    for y, paper in (("transfer_score_skill", True), ("transfer_score", False)):
        spec = charts.score_scatter(df, y=y, records=records).to_dict()
        assert spec["title"]["text"].endswith("(paper Fig. 5)") is paper
        assert spec["title"]["subtitle"][1:] == [
            f"DIS: {records['dis'].phrase}", f"{catalogue.get(y).short}: {records[y].phrase}"]
        tips = {t["field"]: t["title"] for layer in spec["layer"]
                for t in layer.get("encoding", {}).get("tooltip", []) if isinstance(t, dict)}
        assert tips["record_y"] == f"Record of {catalogue.get(y).short}"
        (rows,) = [d for d in spec["datasets"].values() if d and "record_x" in d[0]]
        assert {r["record_y"] for r in rows} == {records[y].short}
    assert records["transfer_score_skill"].short == (
        "rho -0.80 [-1.00, -0.50], above chance at 0 of 2 task-gaps")
    assert records["transfer_score"].short == "never validated"


def test_score_scatter_train_axis_draws_null_ticks_and_rejects_unknown_axes():
    df = charts.scores_frame([_record("a", name="A", action_score_train=0.7,
                                      action_score_train_null=0.2)])
    spec = charts.score_scatter(df, y="action_score_train", error_bars=False).to_dict()
    ticks = [layer for layer in _layers(spec) if layer["mark"]["type"] == "tick"]
    assert len(ticks) == 1 and ticks[0]["encoding"]["y"]["field"] == "action_score_train_null"
    assert "Red ticks" in spec["title"]["subtitle"]
    with pytest.raises(ValueError, match="y must be one of"):
        charts.score_scatter(df, y="dis")


# ----------------------------------------------------------------------------- heatmap
def test_win_heatmap_writes_probabilities_and_bolds_resolved_cells():
    labels = ["A", "B", "C"]
    matrix = pd.DataFrame([[np.nan, 0.99, 0.6], [0.01, np.nan, 0.5], [0.4, 0.5, np.nan]],
                          index=labels, columns=labels)
    spec = charts.win_heatmap(matrix, title="Sim2Real", ci=0.95).to_dict()
    assert spec["title"]["text"] == "Ranking confidence: Sim2Real"
    cells, bold, plain = spec["layer"]
    assert cells["encoding"]["color"]["title"] == "P(row beats column)"
    assert bold["mark"]["fontWeight"] == "bold"
    data = next(iter(spec["datasets"].values()))
    assert len(data) == 6  # the diagonal is not drawn
    resolved = {(d["row"], d["column"]) for d in data if d["resolved"]}
    assert resolved == {("A", "B"), ("B", "A")}
    assert cells["encoding"]["x"]["sort"] == labels and cells["encoding"]["y"]["sort"] == labels
    assert isinstance(spec["title"]["subtitle"], str)          # no record given: one line
    titled = charts.win_heatmap(matrix, title="Sim2Real", record="never validated").to_dict()
    assert titled["title"]["subtitle"] == [
        spec["title"]["subtitle"], "Record against closed-loop success: never validated"]


# ----------------------------------------------------------------------------- projection
def test_projection_scatter_colours_domains_and_enlarges_the_selected_frame():
    df = pd.DataFrame({"x": [0.0, 1.0], "y": [1.0, 0.0], "index": [3, 9],
                       "domain": ["sim", "real"], "episode": [0, 1], "step": [3, 1]})
    spec = projection.projection_scatter(df, title="ResNet18", subtitle="mixing 0.9",
                                         selected_index=9).to_dict()
    assert spec["title"] == {"text": "ResNet18", "subtitle": "mixing 0.9"}
    enc = spec["encoding"]
    assert enc["x"]["title"] == "t-SNE 1" and enc["y"]["title"] == "t-SNE 2"
    assert enc["color"]["title"] == "Domain"
    assert enc["color"]["scale"]["domain"] == ["sim", "real"]
    assert enc["size"]["condition"]["value"] == 220
    assert spec["params"][0]["name"] == projection.FRAME_PICK


# ----------------------------------------------------------------------------- clipped axes
def _with_random_init():
    """RECORDS' two scored encoders and a random-init one far below the skill axis (the
    issue's ResNet18@random on the demo: transfer skill -3 to -31)."""
    rand = _record("resnet18@random", name="ResNet18 (random init)", group=None, dis=0.35,
                   skill=-31.0, transfer_score_skill_ci_low=-40.0,
                   transfer_score_skill_ci_high=-3.0)
    return charts.scores_frame(RECORDS[:2] + [rand])


def _y_scales(spec):
    return [layer["encoding"][ch]["scale"] for layer in spec["layer"]
            for ch in ("y",) if "scale" in layer["encoding"].get(ch, {})]


def test_score_scatter_clips_its_axes_and_still_draws_the_outlier_at_the_edge():
    df = _with_random_init()
    spec = charts.score_scatter(df, y="transfer_score_skill").to_dict()
    scales = _y_scales(spec)
    assert scales and all(s == scales[0] for s in scales)   # every layer: the same scale
    low, high = scales[0]["domain"]
    assert (low, scales[0]["clamp"]) == (-1.0, True) and high <= 1.1
    points = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
    drawn = spec["datasets"][points["data"]["name"]]
    assert {r["encoder"] for r in drawn} == {"resnet18", "pixels", "resnet18@random"}
    assert "Off scale" in [t["title"] for t in points["encoding"]["tooltip"]]
    marker = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"
              and layer["encoding"].get("text", {}).get("field") == "off_scale"]
    assert len(marker) == 1
    [row] = spec["datasets"][marker[0]["data"]["name"]]
    assert row["encoder"] == "resnet18@random"
    assert row["off_scale"] == "\u25bc off scale \u221231.00"
    assert "-31.000 [-40.000, -3.000] is below the axis (-1 to 1.1)" in row["off_scale_note"]
    # without the outlier nothing is marked, and the axis zooms in on the data
    calm = charts.score_scatter(charts.scores_frame(RECORDS), y="transfer_score_skill").to_dict()
    assert "Off scale" not in str(calm)
    assert _y_scales(calm)[0]["domain"][0] > -1.0


def test_validation_scatters_clip_their_score_axis():
    from s2r.figures import real_results, validation

    rows = pd.DataFrame({"encoder": ["a", "b", "r"], "gap": [0.5] * 3,
                         "transfer_score_skill": [0.2, 0.5, -12.0],
                         "transfer_score_skill_ci_low": [0.1, 0.4, -20.0],
                         "transfer_score_skill_ci_high": [0.3, 0.6, -5.0],
                         "success_real": [0.3, 0.6, 0.0], "success_real_ci_low": [0.2] * 3,
                         "success_real_ci_high": [0.7] * 3, "success_sim": [0.9] * 3})
    rows["gap_label"] = "gap 0.5"
    for chart in (validation.success_scatter(rows, "transfer_score_skill"),
                  real_results.success_scatter(
                      rows.assign(task=None, success_rate=rows["success_real"],
                                  success_ci_low=0.0, success_ci_high=1.0),
                      "transfer_score_skill", "Transfer skill")):
        spec = chart.to_dict()
        x_scales = [layer["encoding"]["x"]["scale"] for layer in spec["layer"]
                    if "scale" in layer["encoding"].get("x", {})]
        assert x_scales and all(s["domain"][0] == -1.0 and s["clamp"] for s in x_scales)
        texts = [r.get("off_scale") for d in spec["datasets"].values() for r in d]
        assert "\u25c4 off scale \u221212.00" in texts
