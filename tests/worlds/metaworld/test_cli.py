"""The CLI on a Meta-World spec: info, score, project, saliency, figure, train-encoder and
validate work on ``metaworld:...`` as on ``demo:...`` (what the pages call)."""

from __future__ import annotations

import json

import pytest

from s2r.cli import main

#: Tiny: 4 episodes of 10 world steps at 64 x 80 (seed 3: no check uses it).
SPEC = "metaworld:task=button-press-topdown-v3,episodes=4,steps=10,seed=3,height=64,width=80"


def test_info_prints_both_domains_a_4d_action_and_the_state(capsys):
    assert main(["info", f"{SPEC},gap=0.5"]) == 0
    out = capsys.readouterr().out
    info = json.loads(out[out.index("{"):])
    assert info["frames"] == {"sim": 40, "real": 40} and info["action_dim"] == 4
    assert info["state_dim"] == 41 and info["source"]["state_names"][4] == "button x"


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    out = tmp_path_factory.mktemp("mw")
    args = [f"{SPEC},gap=1", "--encoders", "pixels,state", "--n-boot", "10", "--pca-dim", "8",
            "--device", "cpu", "--cache-dir", str(out / "cache")]
    assert main(["score", *args, "--out", str(out / "board.json")]) == 0
    return out


def test_score_project_saliency_and_figure_run_on_a_meta_world_spec(scored):
    records = json.loads((scored / "board.json").read_text())
    assert [r["encoder"]["id"] for r in records] == ["pixels", "state"]
    assert records[0]["n_frames"]["sim"] == 40 and records[0]["sim2real_score"] is not None
    cache = ["--cache-dir", str(scored / "cache")]
    assert main(["project", f"{SPEC},gap=1", "--encoder", "pixels", "--out",
                 str(scored / "map.csv"), "--perplexity", "5", *cache]) == 0
    assert len((scored / "map.csv").read_text().splitlines()) == 81
    assert main(["saliency", f"{SPEC},gap=1", "--encoder", "mobilenetv3@random", "--frames",
                 "0,5", "--out", str(scored / "sal"), *cache]) == 0
    assert any((scored / "sal").iterdir())
    assert main(["figure", "scores", f"{SPEC},gap=1", "--encoders", "pixels,state", "--out",
                 str(scored / "fig.svg"), *cache]) == 0
    assert (scored / "fig.svg").read_text().lstrip().startswith("<")


@pytest.mark.slow
def test_train_encoder_and_validate_run_on_a_meta_world_spec(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train-encoder", f"{SPEC},gap=0.5", "--augment", "0.5", "--out", "mwcnn",
                 "--epochs", "1"]) == 0
    out = tmp_path / "report.json"
    assert main(["validate", SPEC, "--encoders", "state,pixels,mwcnn", "--gaps", "0,1",
                 "--rollouts", "2", "--horizon", "6", "--demos", "3",
                 "--control-demos", "6", "--control-members", "1", "--n-boot", "20",
                 "--out", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    report = json.loads(out.read_text())
    assert report["stages"] == ["above the button", "at the button", "half pressed",
                                "pressed"]
    assert "Meta-World button-press-topdown-v3" in report["params"]["task"]
    assert {r["encoder"] for r in report["results"]} == {"state", "pixels", "mwcnn"}
    for c in report["correlations"]:
        assert c["outcome"] in ("success", "progress") and "state" not in c["encoders"]
