"""``python -m s2r score``: scoring into JSON/CSV, merging, and user errors (exit status 2)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from s2r.cli import main
from s2r.metrics import catalogue

SCORE_KEYS = catalogue.interval_keys()

DEMO = "demo:episodes=4,steps=8,height=64,width=64,gap=0.5"


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """One CLI run writing CSV, one reading the same scores from the cache into JSON."""
    out = tmp_path_factory.mktemp("score")
    cache = out / "cache"
    csv_path, json_path = out / "board.csv", out / "board.json"
    args = [DEMO, "--encoders", "pixels", "--n-boot", "10", "--pca-dim", "8",
            "--device", "cpu", "--cache-dir", str(cache)]
    assert main(["score", *args, "--out", str(csv_path)]) == 0
    assert main(["score", *args, "--out", str(json_path)]) == 0
    return csv_path, json_path


def test_csv_has_one_flat_row_per_encoder(scored, capsys):
    csv_path, _ = scored
    frame = pd.read_csv(csv_path)
    assert list(frame["encoder.id"]) == ["pixels"]
    for k in SCORE_KEYS:
        assert {k, f"{k}_ci_low", f"{k}_ci_high"} <= set(frame.columns)
        assert frame[f"{k}_ci_low"][0] <= frame[k][0] <= frame[f"{k}_ci_high"][0], k
    assert frame["params.pca_dim"][0] == 8 and frame["params.n_boot"][0] == 10
    assert frame["params.distance"][0] == "squared"
    assert frame["params.ridge_alpha"][0] == "auto"
    assert frame["n_frames.sim"][0] == 32


def test_json_is_nested_and_matches_the_csv(scored):
    csv_path, json_path = scored
    records = json.loads(json_path.read_text())
    assert len(records) == 1
    r = records[0]
    assert r["params"]["pca_dim"] == 8 and r["encoder"]["id"] == "pixels"
    assert r["dataset"]["fingerprint"]
    row = pd.read_csv(csv_path).iloc[0]
    for k in SCORE_KEYS:
        assert r[k] == pytest.approx(row[k])


def test_null_control_and_pairwise_file(tmp_path, capsys):
    cache = tmp_path / "cache"
    args = [DEMO, "--encoders", "pixels,state", "--n-boot", "100", "--pca-dim", "4",
            "--device", "cpu", "--cache-dir", str(cache)]
    pairs = tmp_path / "pairs.json"
    assert main(["score", *args, "--out", str(tmp_path / "s.json"),
                 "--pairwise", str(pairs)]) == 0
    out = capsys.readouterr().out
    assert "tiers:" in out
    data = json.loads(pairs.read_text())
    rows = [r for r in data["comparisons"] if r["metric"] == "action_score_heldout_skill"]
    assert {(r["encoder_a"], r["encoder_b"]) for r in rows} == {("pixels", "state"),
                                                                 ("state", "pixels")}
    for r in rows:
        assert 0.0 <= r["p_a_beats_b"] <= 1.0
        assert r["difference_ci_low"] <= r["difference"] <= r["difference_ci_high"]
    state_wins = [r for r in rows if r["encoder_a"] == "state"][0]
    assert state_wins["p_a_beats_b"] > 0.975 and state_wins["resolved"]
    assert data["tiers"]["action_score_heldout_skill"][0] == ["state"]
    # The null: every held-out and transfer skill sits at 0 within its interval.
    null = tmp_path / "null.json"
    assert main(["score", *args, "--out", str(null), "--null", "shuffle:3"]) == 0
    for r in json.loads(null.read_text()):
        assert r["params"]["null"] == "shuffle:3"
        for k in ("action_score_heldout", "transfer_score", "transfer_score_reverse"):
            assert r[f"{k}_skill_ci_low"] <= 0.0 <= r[f"{k}_skill_ci_high"], (r, k)


def test_too_few_episodes_are_reported_not_estimable(tmp_path, capsys):
    out = tmp_path / "few.json"
    assert main(["score", "demo:episodes=3,steps=8,height=64,width=64", "--encoders", "pixels",
                 "--n-boot", "20", "--pca-dim", "4", "--device", "cpu", "--cache-dir",
                 str(tmp_path / "cache"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "not estimable" in printed and "at least 4 per domain" in printed
    r = json.loads(out.read_text())[0]
    assert r["action_score_heldout_skill"] is None and r["sim2real_score"] is None
    assert r["dis"] is not None


def test_merge_files(scored, tmp_path, capsys):
    csv_path, json_path = scored
    out = tmp_path / "merged.csv"
    assert main(["score", "--merge", str(csv_path), str(json_path), "--out", str(out)]) == 0
    assert "1 row(s)" in capsys.readouterr().out        # same encoder, dataset and params
    assert len(pd.read_csv(out)) == 1


@pytest.mark.parametrize("argv, message", [
    (["score", DEMO, "--encoders", "pixels", "--out", "x.txt"], "--out must name a .json"),
    (["score", DEMO, "--encoders", "no-such-encoder", "--out", "x.csv"], "no-such-encoder"),
    (["score", DEMO, "--encoders", "zz*", "--out", "x.csv"], "no encoder id matches"),
    (["score", DEMO, "--out", "x.csv"], "--encoders is required"),
    (["score", DEMO, "--encoders", "pixels", "--pca-dim", "500", "--n-boot", "0",
      "--device", "cpu", "--out", "x.csv"], "pca_dim=500 is too large"),
    (["score", DEMO, "--encoders", "pixels", "--distance", "squared", "--ci", "2",
      "--out", "x.csv"], "ci must be <= 1"),
    (["score", "--merge", "missing.json", "--out", "x.csv"], "does not exist"),
    (["score", DEMO, "--encoders", "pixels", "--null", "permute", "--out", "x.csv"],
     "null must be 'shuffle'"),
    (["score", DEMO, "--encoders", "pixels", "--pairwise", "p.txt", "--out", "x.csv"],
     "--pairwise must name a .json"),
])
def test_user_errors_exit_2(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error:") and message in last


def test_bad_ridge_alpha_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["score", DEMO, "--encoders", "pixels", "--ridge-alpha", "lots", "--out", "x.csv"])
    assert exc.value.code == 2
    assert "expected a number or 'auto'" in capsys.readouterr().err


def test_score_sorts_by_the_evidences_score_and_says_which_encoder_to_pick(tmp_path, capsys,
                                                                          swap_evidence):
    """The evidence in effect decides the order and the pick; S2R_EVIDENCE swaps it."""
    args = ["score", DEMO, "--encoders", "pixels,resnet18@random,state", "--n-boot", "20",
            "--pca-dim", "4", "--device", "cpu", "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--out", str(tmp_path / "a.json")]) == 0
    shipped = capsys.readouterr().out
    from s2r.evidence import score_record, shipped_evidence

    assert ("record against closed-loop success (the evidence shipped with s2r):\n"
            f"  sim2real_score: {score_record(shipped_evidence(), 'sim2real_score').short}\n"
            ) in shipped
    swap_evidence()
    assert main([*args, "--out", str(tmp_path / "b.json")]) == 0
    swapped = capsys.readouterr().out
    records = json.loads((tmp_path / "b.json").read_text())
    images = [r for r in records if r["encoder"]["id"] != "state"]
    best_dis = max(images, key=lambda r: r["dis"])["encoder"]["id"]
    block = swapped[swapped.index("Which encoder should I pick?"):]
    assert block.splitlines()[1].strip().startswith(f"{best_dis}, the leader on the Domain "
                                                    "invariance (DIS)")
    assert "sorted by the Domain invariance (DIS)" in swapped
    table = swapped[swapped.index("sorted by"):].splitlines()[2:5]
    order = [line.split()[0] for line in table]
    assert order == sorted(order, key=lambda e: -next(r["dis"] for r in records
                                                      if r["encoder"]["id"] == e))
    assert "sorted by the Domain invariance" not in shipped
    assert "Which encoder should I pick?" in shipped and "state, the leader" not in shipped
