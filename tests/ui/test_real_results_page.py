"""Your robot's results on the Validation page (ui/real_results.py): a table of 4 encoders on
the demo gives correlations with intervals, the scatter and its downloads; a bad row is one
error naming it; encoders without scores are named."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.ui.apptest import ENCODERS, no_exception, open_app, use_env
from ui import state as S
from ui import pages

PAGE = pages.VALIDATION.path
FOUR = (*ENCODERS, "state", "efficientnet-lite0")
CSV = ("encoder,successes,trials\npixels,4,20\nefficientnet-lite0,14,20\n"
       "resnet18@random,7,20\nstate,19,20\n")


@pytest.fixture
def four_scored(computed, tmp_path, monkeypatch):
    """The shared cache plus the state reference and EfficientNet-Lite0 (home page)."""
    cache_dir = tmp_path / "cache"
    shutil.copytree(computed[0], cache_dir)
    use_env(monkeypatch, cache_dir)
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", ",".join(FOUR))
    at = open_app()
    at.run()
    no_exception(at)
    return at


@pytest.mark.slow
def test_four_encoders_give_correlations_with_intervals(four_scored):
    at = four_scored
    at.switch_page(PAGE).run()
    no_exception(at)
    at.text_area(key=S.VALIDATION_REAL_PASTE).set_value(CSV).run()
    no_exception(at)
    table = next(d.value for d in at.dataframe if "Kendall" in d.value.columns)
    assert set(table["n"]) == {4}
    row = table.set_index("score").loc["Domain invariance (DIS)"]
    lo, hi = (float(v) for v in row["95% interval"].strip("[]").split(","))
    assert lo <= row["Spearman"] <= hi
    assert not any("No scores" in w.value for w in at.warning)
    assert {b.proto.label for b in at.get("download_button")} >= {"SVG", "PDF", "PNG"}
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    assert spec["title"]["text"].startswith("Your real success vs")
    assert spec["layer"][1]["encoding"]["y"]["field"] == "success_rate"


def test_bad_row_and_missing_scores(computed, monkeypatch):
    use_env(monkeypatch, computed[0])
    at = open_app(PAGE)
    at.run()
    at.text_area(key=S.VALIDATION_REAL_PASTE).set_value(
        "encoder,successes,trials\npixels,30,20\n").run()
    no_exception(at)
    assert [e.value for e in at.error] == [
        "pasted table row 1 (line 2): successes (30) > trials (20)"]
    at.text_area(key=S.VALIDATION_REAL_PASTE).set_value(CSV).run()
    no_exception(at)
    missing = [w.value for w in at.warning if "No scores" in w.value]
    assert missing and "efficientnet-lite0, state" in missing[0]
    table = next(d.value for d in at.dataframe if "Kendall" in d.value.columns)
    assert set(table["n"]) == {2} and table["Spearman"].isna().all()   # 2 encoders: undefined


def test_the_page_reads_the_table_with_the_same_bounds(computed, monkeypatch):
    """A paste over the size bound, an inline reference, extra fields: one error each, no
    exception; the upload box refuses a file over the bound in the browser."""
    from s2r.pipeline.results_table import MAX_BYTES

    use_env(monkeypatch, computed[0])
    at = open_app(PAGE)
    at.run()
    no_exception(at)
    uploader = at.get("file_uploader")[0].proto
    assert uploader.max_upload_size_mb == max(1, MAX_BYTES >> 20)
    big = CSV + "\n" * MAX_BYTES
    for text, words in [
            (big, [f"pasted table is {len(big):,} bytes, over the limit of {MAX_BYTES:,}"]),
            ("encoder,successes,trials\nckpt:resnet18:/etc/passwd,1,2\n",
             ["pasted table row 1 (line 2): encoder 'ckpt:resnet18:/etc/passwd' is an "
              "inline reference"]),
            ("encoder,successes,trials\npixels,4,20,1\n",
             ["pasted table row 1 (line 2): 4 fields, but the header has 3"])]:
        at.text_area(key=S.VALIDATION_REAL_PASTE).set_value(text).run()
        no_exception(at)
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and all(w in errors[0] for w in words), errors
        assert not at.dataframe or not any("Kendall" in d.value.columns for d in at.dataframe)
