"""Leaderboard files (s2r.leaderboard): JSON and CSV round trips, merging, bad files."""

from __future__ import annotations

import json

import pytest

from s2r import leaderboard as lb
from s2r.metrics import catalogue

SCORE_KEYS = catalogue.interval_keys()


def _fake(encoder, fingerprint="abc", pca_dim=16, value=0.5):
    rec = {k: value for k in SCORE_KEYS}
    rec.update({f"{k}_ci_low": value - 0.1 for k in SCORE_KEYS})
    rec.update({f"{k}_ci_high": value + 0.1 for k in SCORE_KEYS})
    rec["transfer_score_ci_low"] = None
    rec.update({"encoder": {"id": encoder, "name": encoder.upper(), "table_number": None,
                            "dim": 512, "random_init": False},
                "dataset": {"name": "demo", "fingerprint": fingerprint},
                "params": {"pca_dim": pca_dim, "distance": "squared", "ridge_alpha": "auto",
                           "ci": 0.95},
                "n_frames": {"sim": 10, "real": 12}, "warnings": ["w1"],
                "constant_action_dims": [9]})
    return rec


def test_leaderboard_round_trips_json_and_csv(tmp_path):
    records = [_fake("a"), _fake("b", value=0.7)]
    for name in ("board.json", "board.csv"):
        path = lb.write_records(records, tmp_path / name)
        assert lb.read_records(path) == records
    text = (tmp_path / "board.csv").read_text().splitlines()[0].split(",")
    assert text[0] == "encoder.id" and "params.pca_dim" in text and "n_frames.sim" in text
    nested = json.loads((tmp_path / "board.json").read_text())
    assert nested[0]["params"]["pca_dim"] == 16
    frame = lb.records_to_frame(records)
    assert list(frame["encoder.id"]) == ["a", "b"]
    assert list(frame.columns[:2]) == ["encoder.id", "encoder.name"]


def test_merge_keeps_one_row_per_encoder_dataset_and_params(tmp_path):
    lb.write_records([_fake("a", value=0.1), _fake("b")], tmp_path / "one.json")
    lb.write_records([_fake("a", value=0.9), _fake("a", pca_dim=8), _fake("a", fingerprint="x")],
                     tmp_path / "two.csv")
    merged = lb.merge_leaderboards([tmp_path / "one.json", tmp_path / "two.csv"])
    assert len(merged) == 4
    a = merged[(merged["encoder.id"] == "a") & (merged["params.pca_dim"] == 16)
               & (merged["dataset.fingerprint"] == "abc")]
    assert list(a["dis"]) == [0.9]                # the file given last wins


def test_leaderboard_bad_files(tmp_path):
    from s2r.errors import DataError

    with pytest.raises(DataError, match="expected a .json or .csv"):
        lb.write_records([], tmp_path / "x.txt")
    with pytest.raises(DataError, match="does not exist"):
        lb.read_records(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        lb.read_records(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('[{"a": 1}]')
    with pytest.raises(DataError, match="no encoder id"):
        lb.read_records(tmp_path / "other.json")
    with pytest.raises(DataError, match="no leaderboard files"):
        lb.merge_leaderboards([])
