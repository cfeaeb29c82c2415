"""The home page says which runtime will embed each chosen encoder (a Runtime column and one
caption line), without building or computing anything."""

from __future__ import annotations

from tests.ui.apptest import ENCODERS, TIMEOUT, open_app, use_env


def test_home_names_the_runtime_of_each_chosen_encoder(monkeypatch, tmp_path):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    monkeypatch.setenv("S2R_RUNTIME", "auto")
    monkeypatch.setattr("ui.loaders.encoders.device", lambda: "cpu")
    at = open_app().run(timeout=TIMEOUT)
    assert not at.exception
    table = next(d.value for d in at.dataframe if "runtime" in d.value.columns)
    want = {e: "torch" if e == "pixels" else "onnx" for e in ENCODERS}   # raw pixels: torch
    assert "onnx" in want.values()
    assert dict(zip(table["encoder"], table["runtime"])) == want
    captions = [c.value for c in at.caption]
    torch_ids = [e for e, runtime in want.items() if runtime == "torch"]
    line = "Embeddings run in ONNX Runtime on the CPU" + (
        f" (torch for: {', '.join(torch_ids)})." if torch_ids else ".")
    assert line in captions, captions
    assert not (tmp_path / "cache" / "graphs").exists()      # nothing exported to say so
