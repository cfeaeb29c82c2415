"""The depth profile (``s2r.figures.layers``, ``python -m s2r figure layers``): its points sit at
their depth and score, skill axes stop at the floor, a click names (encoder, layer)."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.cli import main
from s2r.figures import chart_bytes
from s2r.figures.layers import PICK, SKILL_FLOOR, depth_profile, layer_choices, layers_frame
from tests.figures import svg as S


def _record(encoder, layer, index, depth, final, best, value, skill):
    return {"encoder": {"id": encoder, "name": encoder.upper()}, "layer": layer,
            "layer_index": index, "layer_depth": depth, "layer_is_final": final,
            "layer_best": best, "embedding_dim": 8 * (index + 1),
            "sim2real_score": value, "sim2real_score_ci_low": value - 0.05,
            "sim2real_score_ci_high": value + 0.05,
            "transfer_score_skill": skill, "transfer_score_skill_ci_low": skill - 0.1,
            "transfer_score_skill_ci_high": skill + 0.1,
            "skill_reference": {"transfer_score": "ceiling"}}


@pytest.fixture
def records():
    return [_record("a", "l0", 0, 0.2, False, False, 0.10, -50.0),
            _record("a", "l1", 1, 0.6, False, True, 0.40, 0.30),
            _record("a", "head", 2, 1.0, True, False, 0.30, 0.20),
            _record("b", "only", 0, 1.0, True, True, 0.25, 0.10),
            {"encoder": {"id": "plain"}, "sim2real_score": 0.9}]       # no layer: left out


def test_layers_frame(records):
    df = layers_frame(records)
    assert list(df["point"]) == ["a @ l0", "a @ l1", "a @ head", "b @ only"]
    assert list(df["layer_depth"]) == [0.2, 0.6, 1.0, 1.0]
    assert df["sim2real_score_txt"][1] == "0.400 [0.350, 0.450]"


def test_the_profile_draws_each_layer_at_its_depth_and_score(records):
    chart = depth_profile(layers_frame(records), "sim2real_score")
    spec = chart.to_dict()
    params = spec.get("params", []) + [p for layer in spec["layer"]
                                       for p in layer.get("params", [])]
    assert [(p["name"], p["select"]["fields"]) for p in params] == [(PICK, ["encoder",
                                                                           "layer"])]
    svg = chart_bytes(chart, "svg").decode()
    points = S.symbols(svg)
    assert len(points) == 4
    fx, fy = S.axis_maps(svg)
    got = sorted((round(float(fx(x)), 2), round(float(fy(y)), 2)) for x, y in points)
    assert got == sorted([(0.2, 0.1), (0.6, 0.4), (1.0, 0.3), (1.0, 0.25)])


def test_a_skill_far_below_the_floor_is_drawn_on_the_edge(records):
    df = layers_frame(records)
    chart = depth_profile(df, "transfer_score_skill")
    data = next(iter(chart.to_dict()["datasets"].values()))
    row = next(r for r in data if r["layer"] == "l0")
    assert row["y_plot"] == SKILL_FLOOR and row["mark"] == "below the axis"
    assert row["transfer_score_skill_txt"].startswith("-50.000")
    assert min(r["lo_plot"] for r in data) == SKILL_FLOOR
    svg = chart_bytes(chart, "svg").decode()
    _, fy = S.axis_maps(svg)
    assert min(float(fy(y)) for _, y in S.symbols(svg)) == pytest.approx(SKILL_FLOOR, abs=0.02)
    assert "Triangles: below -1" in str(chart.to_dict()["title"])
    # the same records on an axis without a floor keep every value
    data = next(iter(depth_profile(df, "sim2real_score").to_dict()["datasets"].values()))
    assert all(r["mark"] != "below the axis" for r in data)


def test_marks_best_and_final_and_checks_the_score(records):
    data = next(iter(depth_profile(layers_frame(records), "sim2real_score",
                                   selected=("a", "l1")).to_dict()["datasets"].values()))
    assert {r["point"]: r["mark"] for r in data} == {
        "a @ l0": "layer", "a @ l1": "best layer", "a @ head": "final layer",
        "b @ only": "best layer"}
    assert {r["point"]: r["kind"] for r in data}["b @ only"] == "best layer (final)"
    assert set(layer_choices()) >= {"sim2real_score", "transfer_score_skill", "dis"}
    with pytest.raises(ValueError, match="y must be one of"):
        depth_profile(layers_frame(records), "n_frames")
    empty = depth_profile(layers_frame([]), "dis")
    assert chart_bytes(empty, "svg")


def _point_layer(chart):
    return next(layer for layer in chart.to_dict()["layer"]
                if layer["mark"]["type"] == "point")


def test_the_legend_names_below_the_axis_only_when_a_point_is_there(records):
    df = layers_frame(records)
    clipped = _point_layer(depth_profile(df, "transfer_score_skill"))["encoding"]["shape"]
    assert clipped["scale"]["domain"][-1] == "below the axis"
    plain = _point_layer(depth_profile(df, "sim2real_score"))["encoding"]["shape"]
    assert plain["scale"]["domain"] == ["best layer", "final layer", "layer"]
    assert plain["scale"]["range"] == ["diamond", "square", "circle"]


def test_the_best_layer_is_drawn_larger(records):
    size = _point_layer(depth_profile(layers_frame(records), "sim2real_score"))["encoding"][
        "size"]
    assert size["condition"]["value"] > size["value"]
    assert "best layer" in size["condition"]["test"]


def test_figure_layers_cli(tmp_path, capsys):
    out = tmp_path / "l.svg"
    assert main(["figure", "layers", "demo:episodes=4,steps=5,height=64,width=80",
                 "--encoders", "resnet18@random", "--y", "dis", "--device", "cpu",
                 "--cache-dir", str(tmp_path / "c"), "--out", str(out)]) == 0
    svg = out.read_text()
    assert len(S.symbols(svg)) == 5
    fx, _ = S.axis_maps(svg)
    assert max(float(fx(x)) for x, _ in S.symbols(svg)) == pytest.approx(1.0, abs=0.01)
    assert np.isfinite(S.symbols(svg)).all()
    assert main(["figure", "layers", "demo:episodes=4,steps=5,height=64,width=80",
                 "--encoders", "resnet18@random", "--y", "nope", "--out",
                 str(tmp_path / "x.svg")]) == 2
    assert "--y must be one of" in capsys.readouterr().err
