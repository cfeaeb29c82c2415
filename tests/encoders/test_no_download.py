"""Looking never fetches: with the weights missing and the hub "answering", cache keys,
statuses, ``encoders --json``, ``cache ls`` and every app page work without a single download
attempt; only computing fetches, and a key naming missing weights is never written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from s2r.encoders import BUILTIN_SPECS, status, weights_fingerprint
from s2r.settings import current
from tests.helpers.downloads import refuse_downloads

FILE_BACKENDS = ("timm", "open_clip", "checkpoint")


@pytest.fixture
def hub_answers(tmp_path, monkeypatch):
    """No weights here, a hub that would answer, and every way of downloading (the hub
    library, s2r's HTTP fetcher, a raw socket) recorded and refused. Yields the record."""
    yield refuse_downloads(tmp_path, monkeypatch)


def _file_entries():
    return [s.id for s in BUILTIN_SPECS.values() if s.backend in FILE_BACKENDS]


def test_fingerprints_statuses_and_keys_of_missing_weights_never_fetch(hub_answers,
                                                                       small_demo):
    from s2r.embed import embeddings_key

    ids = _file_entries()
    assert len(ids) == 27  # the 23 rows of Table I and the 4 torchvision ResNets
    for encoder_id in ids:
        assert status(encoder_id, settings=current()).state == "weights-missing", encoder_id
        assert weights_fingerprint(encoder_id, settings=current()) == "missing", encoder_id
        assert embeddings_key(small_demo, encoder_id, settings=current())["weights"] == "missing"
    # entries without a file keep their fingerprints
    assert weights_fingerprint("pixels", settings=current()) == "pixels:v1"
    assert weights_fingerprint("resnet18@random", settings=current()).startswith("random:0/")
    assert hub_answers == []


def test_cli_encoders_json_and_cache_ls_never_fetch(hub_answers, capsys):
    from s2r.cli import main

    assert main(["encoders", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    by_id = {r["id"]: r for r in records}
    assert by_id["hrp-vit"]["status"] == "weights-missing"
    assert by_id["resnet18"]["tag"] == "a1_in1k"
    assert main(["cache", "ls"]) == 0
    assert hub_answers == []


def _hub_download_resnet18(hub_cache: Path) -> Path:
    """What ``hf_hub_download("timm/resnet18.a1_in1k", "model.safetensors")`` leaves in the
    hub cache (its folder layout; random values in timm's keys)."""
    import timm
    from safetensors.torch import save_file

    from tests.helpers.state_dicts import synthetic

    repo = hub_cache / "models--timm--resnet18.a1_in1k"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("c0ffee")
    (repo / "snapshots" / "c0ffee").mkdir(parents=True)
    path = repo / "snapshots" / "c0ffee" / "model.safetensors"
    save_file(synthetic(lambda: timm.create_model("resnet18", pretrained=False), seed=11),
              str(path))
    return path


def test_a_key_naming_missing_weights_is_never_written(hub_answers, small_demo, tmp_path,
                                                       monkeypatch):
    """A look-up (the app's read-only view) misses without fetching; computing fetches
    first and stores everything under the fingerprint of the file that now exists."""
    from s2r.cache import Cache
    from s2r.encoders import locate
    from s2r.encoders.locate import file_fingerprint
    from s2r.pipeline import score_encoder
    from ui.compute import cached_record, stored_record

    cache = Cache(tmp_path / "cache")
    assert cached_record(small_demo, "resnet18", cache) is None
    assert stored_record(small_demo, "resnet18", cache) is None   # object focus first, then plain
    assert hub_answers == [] and cache.ls() == []

    downloads = []

    def download(spec, settings):  # the hub library's download, simulated
        downloads.append(spec.hub_repo)
        return _hub_download_resnet18(tmp_path / "hf")

    monkeypatch.setattr(locate, "download_hub_weights", download)
    record = score_encoder(small_demo, "resnet18", cache=cache)
    assert downloads == ["timm/resnet18.a1_in1k"]
    digest = file_fingerprint(next((tmp_path / "hf").rglob("model.safetensors")))
    keys = [entry.key for entry in cache.ls()]
    assert {k["kind"] for k in keys} >= {"embeddings", "score"}
    for key in keys:
        assert "missing" not in json.dumps(key), key
        inner = key.get("embeddings", key)
        assert inner["weights"] == digest
    assert record["encoder"]["id"] == "resnet18"


@pytest.mark.slow
def test_every_page_opens_without_a_download_attempt(hub_answers, tmp_path, monkeypatch):
    """The home page (first visit: it computes only what has weights here), then every page,
    with two missing-weights encoders selected."""
    from tests.ui.apptest import no_exception, open_app, use_env

    use_env(monkeypatch, tmp_path / "app-cache")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "resnet18,vip,pixels")
    from ui.pages import PAGES

    pages = [entry.path for entry in PAGES[1:]]   # every page but the home page
    assert len(pages) >= 5
    home = open_app()
    home.run()
    no_exception(home)
    held = home.session_state["results.records"]
    assert [sorted(r) for r in held.values()] == [["pixels"]]  # the others wait for a click
    for page in pages:
        at = open_app(page)
        at.run()
        no_exception(at)
    assert hub_answers == []
