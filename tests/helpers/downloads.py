"""No weights here, and every way of downloading recorded and refused: for the tests that
check that looking, listing or refusing never fetches."""

from __future__ import annotations

import socket


def refuse_downloads(tmp_path, monkeypatch) -> list:
    """An empty weights folder and hub cache under ``tmp_path``, downloads on, a hub that
    would answer, and every way of downloading (the hub library, s2r's HTTP fetcher, a raw
    socket) recorded and refused. Returns the record: ``(what, first two arguments)`` per
    attempt."""
    import huggingface_hub

    from s2r.encoders import fetch, fetch_http, locate

    attempts = []

    def refuse(what):
        def call(*args, **kwargs):
            attempts.append((what, args[:2]))
            raise OSError(f"test: {what} must not be called")
        return call

    (tmp_path / "weights").mkdir()
    monkeypatch.setenv("S2R_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("S2R_OFFLINE", raising=False)
    monkeypatch.setattr(locate, "hub_reachable", lambda *a, **k: True)
    monkeypatch.setattr(locate, "download_hub_weights", refuse("download_hub_weights"))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", refuse("hf_hub_download"))
    monkeypatch.setattr(fetch_http, "download", refuse("fetch_http.download"))
    monkeypatch.setattr(fetch, "download", refuse("fetch.download"))
    monkeypatch.setattr(socket, "create_connection", refuse("socket.create_connection"))
    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    return attempts
