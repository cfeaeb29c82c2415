"""Unchanged behaviour across restructurings (issue 34): what s2r computes for fixed inputs is
pinned, byte for byte, by files written *before* the change.

* ``tests/data/golden/score_demo_pixels_state.json``: ``python -m s2r score SCORE_SPEC
  --encoders pixels,state --out ...`` (every number of both records);
* ``tests/data/golden/validation_small.json``: ``python -m s2r validate VALIDATION_SPEC
  *VALIDATION_ARGS --out ...`` (a tiny closed-loop validation: scores, rollouts in both looks,
  correlations);
* the cache keys of :data:`SCORE_SPEC`'s ``pixels`` embeddings and score record, so entries
  written before are hits after;
* the demo's frames: :data:`RENDER_ID` (part of every demo frame's identity, so of every key
  built on demo frames), and the pixels, masks, states and actions of a small demo.

Neither golden file holds anything run-specific (no timings, paths or dates; the cache folder
is not in the reports), so they are compared whole. Regenerate them only when a change of the
numbers is intended and explained in the commit: run the two commands above (with
``--cache-dir`` an empty folder) and copy the ``--out`` files here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from s2r.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
SCORE_SPEC = "demo:episodes=6,steps=16,seed=3,height=64,width=80,gap=0.5"
#: The FrameSet fingerprint of SCORE_SPEC (labels + the identity of its frames).
SCORE_FINGERPRINT = "453d27882b8b822e"
#: ``key_hash`` of the ``pixels`` embeddings key and score key of SCORE_SPEC (default
#: ScoreParams): the names of those cache entries on disk.
PIXELS_EMBEDDINGS_KEY = "151a07d641557877d7aa0d3c2ced7a3e"
PIXELS_SCORE_KEY = "eb98c367237817570c14f47a5c94f5c5"
VALIDATION_SPEC = "demo:paired=true,episodes=4,steps=8,height=96,width=128,seed=3"
VALIDATION_ARGS = ["--encoders", "state,pixels,mobilenetv3@random", "--gaps", "0,1",
                   "--rollouts", "4", "--horizon", "30", "--demos", "10", "--demo-steps", "16",
                   "--control-demos", "60", "--control-members", "1", "--n-boot", "50"]
#: The demo's RENDER_ID (what draws its frames); its frames did not change, so neither may it.
RENDER_ID_HEX = "38282faede9176cb0780454abbb5ffdf"
#: Digest of the pixels, masks, states and actions of ``make_demo(episodes=1, steps=4,
#: gap=1.0, seed=2, height=64, width=80)`` (the real look at full strength: every effect).
DEMO_CONTENT = "27590c8dcdcb58f5f0aa3a1757c4e8c1"


def _golden(name: str):
    return json.loads((GOLDEN / name).read_text())


@pytest.mark.slow
def test_the_score_json_of_the_demo_is_unchanged(tmp_path):
    from s2r.cache import Cache

    out = tmp_path / "score.json"
    assert main(["score", SCORE_SPEC, "--encoders", "pixels,state", "--out", str(out),
                 "--cache-dir", str(tmp_path / "c")]) == 0
    assert json.loads(out.read_text()) == _golden("score_demo_pixels_state.json")
    # and the entries were written under the pinned keys (what an older cache holds)
    names = {e.hash for e in Cache(tmp_path / "c").ls()}
    assert {PIXELS_EMBEDDINGS_KEY, PIXELS_SCORE_KEY} <= names


@pytest.mark.slow
def test_the_validation_report_of_a_small_spec_is_unchanged(tmp_path):
    out = tmp_path / "validation.json"
    assert main(["validate", VALIDATION_SPEC, *VALIDATION_ARGS, "--runtime", "torch",
                 "--out", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    assert json.loads(out.read_text()) == _golden("validation_small.json")


def _close(a, b, path=""):
    """Where two reports differ beyond float rounding amplified by a score (5 % of the value,
    1e-3 near 0): a list of paths; numbers that are not floats must be equal."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return [p for k in a for p in _close(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in _close(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=0.05, abs_tol=1e-3) else [path]
    return [] if a == b else [path]


@pytest.mark.slow
def test_onnx_runtime_moves_no_outcome_of_the_small_validation(tmp_path):
    """The default runtime (ONNX Runtime on the CPU) against the golden torch report: the
    same rollouts' outcomes and rank correlations, scores equal to float rounding."""
    out = tmp_path / "validation.json"
    assert main(["validate", VALIDATION_SPEC, *VALIDATION_ARGS, "--runtime", "auto",
                 "--device", "cpu", "--out", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    report, golden = json.loads(out.read_text()), _golden("validation_small.json")
    for row in report["results"]:    # the image encoder's rows name the runtime; the rest not
        if row["encoder"] == "mobilenetv3@random":
            assert row.pop("runtime") == "onnxruntime/v1"
        else:
            assert "runtime" not in row
    for section in ("outcomes", "correlations", "stages"):
        assert report[section] == golden[section], section
    outcome = [k for k in golden["results"][0] if k.startswith(("success_", "progress_"))]
    assert outcome
    for mine, want in zip(report["results"], golden["results"]):
        assert {k: mine[k] for k in outcome} == {k: want[k] for k in outcome}
    assert _close(report["results"], golden["results"]) == []
    assert report["results"] != golden["results"]   # it did run ONNX Runtime: last bits differ


def test_the_cache_keys_of_the_demo_are_unchanged():
    from s2r.cache.keys import key_hash
    from s2r.datasets import load_dataset
    from s2r.embed import embeddings_key
    from s2r.metrics.scoring import ScoreParams
    from s2r.pipeline.scores import score_key

    fs = load_dataset(SCORE_SPEC)
    assert fs.fingerprint == SCORE_FINGERPRINT
    assert key_hash(embeddings_key(fs, "pixels")) == PIXELS_EMBEDDINGS_KEY
    assert key_hash(score_key(fs, "pixels", ScoreParams())) == PIXELS_SCORE_KEY


def test_the_demo_frames_and_their_render_id_are_unchanged():
    from s2r.worlds.demo.dataset import RENDER_ID, make_demo
    from s2r.identity import digest

    assert RENDER_ID.hex() == RENDER_ID_HEX
    fs = make_demo(episodes=1, steps=4, gap=1.0, seed=2, height=64, width=80)
    idx = np.arange(len(fs))
    assert digest(fs.read_images(idx).tobytes(), fs.read_masks(idx).tobytes(),
                  fs.state.tobytes(), fs.actions.tobytes()).hex() == DEMO_CONTENT
