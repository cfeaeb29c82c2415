"""The home page's Ray toggle: drawn only when ``$S2R_RAY_ADDRESS`` is set; a cluster that
does not answer is one error in the run's box, not an exception."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.helpers import APP

TOGGLE = "home.ray_backend"


def _open(monkeypatch, tmp_path, address=None) -> AppTest:
    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    if address is None:
        monkeypatch.delenv("S2R_RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("S2R_RAY_ADDRESS", address)
    at = AppTest.from_file(str(APP), default_timeout=240).run()
    assert not at.exception
    return at


def test_no_toggle_without_a_cluster_address(monkeypatch, tmp_path):
    at = _open(monkeypatch, tmp_path)
    assert [t.key for t in at.toggle if t.key == TOGGLE] == []


def test_toggle_runs_on_the_cluster_and_reports_an_unreachable_one(monkeypatch, tmp_path):
    at = _open(monkeypatch, tmp_path, "127.0.0.1:1")
    toggle = at.toggle(key=TOGGLE)
    assert toggle.label == "Compute on the Ray cluster at 127.0.0.1:1"
    toggle.set_value(True).run()
    labels = [b.label for b in at.button]
    at.button[labels.index("Compute scores")].click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("no Ray cluster answers at 127.0.0.1:1" in e for e in errors), errors
    assert [s.label for s in at.status] == ["Ray run: failed"]
