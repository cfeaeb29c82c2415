"""``python -m s2r weights fetch`` (s2r.encoders.fetch) against a real HTTP server on
127.0.0.1 (the standard library's, with Range support) serving random-init checkpoints with
the releases' key layouts: fetch, resume after a cut connection, Google Drive's confirmation
page, zip members, corrupt files refused with nothing left, md5 and pinned sha256, the
encoder then ``ready``."""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from s2r.cli import main
from s2r.encoders import fetch as fetch_mod
from s2r.encoders import status
from s2r.encoders.fetch_http import drive_confirm_url
from s2r.errors import EncoderError
from tests.helpers.release_site import Handler, Site, saved, serving, synthetic, vip_checkpoint
from s2r.settings import current

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server():
    with serving() as url:
        yield url
@pytest.fixture
def site(server, monkeypatch, tmp_path):
    Handler.site = Site()
    monkeypatch.setenv("S2R_WEIGHTS_MIRROR", server)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    Handler.site.url = server
    return Handler.site


@pytest.fixture
def weights():
    return Path(os.environ["S2R_WEIGHTS_DIR"])


@pytest.fixture(scope="module")
def vip_file() -> bytes:
    return vip_checkpoint()


@pytest.fixture(scope="module")
def r3m_file() -> bytes:
    sd = synthetic("resnet18", 2)
    r3m = {f"module.convnet.{k}": v for k, v in sd.items()}
    r3m["module.lang_enc.model.embeddings.word_embeddings.weight"] = torch.randn(30, 8)
    return saved({"r3m": r3m})


@pytest.fixture(scope="module")
def hrp_file() -> bytes:
    sd = synthetic("resnet18-gn16", 3)
    return saved({"model": {f"_model.{k}": v for k, v in sd.items()}})


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# fetch

def test_cli_fetch_vip_from_the_mirror_makes_it_ready(site, vip_file, weights):
    """The done-when: S2R_WEIGHTS_MIRROR=http://127.0.0.1:PORT python -m s2r weights fetch vip."""
    site.files["/vip_resnet50.pt"] = vip_file
    env = {**os.environ, "S2R_WEIGHTS_MIRROR": site.url}
    assert json.loads(_cli(["encoders", "vip", "--json"], env).stdout)[0]["status"] \
        == "weights-missing"
    run = _cli(["weights", "fetch", "vip"], env)
    assert run.returncode == 0, run.stderr
    assert "vip:" in run.stdout and "pinned" in run.stdout
    assert (weights / "vip_resnet50.pt").read_bytes() == vip_file
    assert sorted(p.name for p in weights.iterdir()) == ["manifest.json", "vip_resnet50.pt"]
    pinned = json.loads((weights / "manifest.json").read_text())["files"]["vip_resnet50.pt"]
    assert pinned["sha256"] == sha256(vip_file) and pinned["encoder"] == "vip"
    assert pinned["source"] == f"{site.url}/vip_resnet50.pt"
    record = json.loads(_cli(["encoders", "vip", "--json"], env).stdout)[0]
    assert record["status"] == "ready"
    assert record["weights_file"] == str(weights / "vip_resnet50.pt")
    again = _cli(["weights", "fetch", "vip"], env)  # present: checked, not downloaded again
    assert again.returncode == 0 and "as pinned" in again.stdout
    assert [p for p, _ in site.log].count("/vip_resnet50.pt") == 1


def _cli(argv, env):
    return subprocess.run([sys.executable, "-m", "s2r", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_cut_connection_is_resumed_with_a_range_request(site, r3m_file, weights):
    site.files["/r3m_resnet18.pt"] = r3m_file
    site.cut_once.add("/r3m_resnet18.pt")
    calls = []
    result = fetch_mod.fetch("r3m-resnet18", progress=lambda *a: calls.append(a),
                             settings=current())
    half, n = len(r3m_file) // 2, len(r3m_file)
    assert calls[0] == (0, n, "r3m-resnet18") and calls[-1] == (n, n, "r3m-resnet18")
    assert (half, n, "r3m-resnet18") in calls  # the resumed request starts where the cut was
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))
    assert result.action == "fetched"
    assert (weights / "r3m_resnet18.pt").read_bytes() == r3m_file
    assert site.log == [("/r3m_resnet18.pt", None),
                        ("/r3m_resnet18.pt", f"bytes={len(r3m_file) // 2}-")]
    assert not (weights / "r3m_resnet18.pt.part").exists()
    assert status("r3m-resnet18", settings=current()).state == "ready"


def test_a_download_cut_every_time_keeps_its_part_and_the_next_run_continues(
        site, r3m_file, weights):
    site.files["/r3m_resnet18.pt"] = r3m_file
    site.cut_always.add("/r3m_resnet18.pt")
    with pytest.raises(EncoderError, match="cut 4 times.*run the command again to resume"):
        fetch_mod.fetch("r3m-resnet18", settings=current())
    part = weights / "r3m_resnet18.pt.part"
    have = part.stat().st_size
    assert 0 < have < len(r3m_file) and r3m_file.startswith(part.read_bytes())
    assert not (weights / "r3m_resnet18.pt").exists()
    assert status("r3m-resnet18", settings=current()).state == "weights-missing"
    site.cut_always.clear()
    site.log.clear()
    assert main(["weights", "fetch", "r3m-resnet18", "--quiet"]) == 0
    assert site.log == [("/r3m_resnet18.pt", f"bytes={have}-")]
    assert (weights / "r3m_resnet18.pt").read_bytes() == r3m_file
    assert not part.exists()


def test_a_server_without_range_support_starts_over(site, r3m_file, weights):
    site.files["/r3m_resnet18.pt"] = r3m_file
    site.no_range = True
    (weights).mkdir()
    (weights / "r3m_resnet18.pt.part").write_bytes(r3m_file[:1000])
    assert fetch_mod.fetch("r3m-resnet18", settings=current()).action == "fetched"
    assert (weights / "r3m_resnet18.pt").read_bytes() == r3m_file


def test_a_complete_part_is_not_downloaded_again(site, r3m_file, weights):
    site.files["/r3m_resnet18.pt"] = r3m_file
    weights.mkdir()
    (weights / "r3m_resnet18.pt.part").write_bytes(r3m_file)
    # the server answers 416
    assert fetch_mod.fetch("r3m-resnet18", settings=current()).action == "fetched"
    assert site.log == [("/r3m_resnet18.pt", f"bytes={len(r3m_file)}-")]
    assert (weights / "r3m_resnet18.pt").read_bytes() == r3m_file


def test_google_drive_confirmation_page_is_followed(site, r3m_file, weights):
    site.files["/r3m_resnet18.pt"] = r3m_file
    site.drive.add("/r3m_resnet18.pt")
    fetch_mod.fetch("r3m-resnet18", settings=current())
    assert (weights / "r3m_resnet18.pt").read_bytes() == r3m_file
    assert site.log[1][0] == ("/download?id=r3m_resnet18.pt&export=download&confirm=t"
                              "&uuid=abc-123")


def test_drive_confirm_url_old_and_new_pages():
    base = "https://drive.google.com/uc?id=ABC&export=download"
    old = '<a id="uc-download-link" href="/uc?export=download&amp;confirm=Xy_1&amp;id=ABC">'
    assert drive_confirm_url(old, base) == \
        "https://drive.google.com/uc?export=download&confirm=Xy_1&id=ABC"
    new = ('<form id="download-form" action="https://drive.usercontent.google.com/download" '
           'method="get"><input type="hidden" name="id" value="ABC"><input type="hidden" '
           'name="confirm" value="t"></form>')
    assert drive_confirm_url(new, base) == \
        "https://drive.usercontent.google.com/download?id=ABC&confirm=t"
    assert drive_confirm_url("<html>quota exceeded</html>", base) is None


def test_a_web_page_instead_of_the_file_is_one_error(site, weights):
    site.pages["/vip_resnet50.pt"] = ("<html><head><title>Google Drive - Quota exceeded"
                                      "</title></head><body>Too many users</body></html>")
    with pytest.raises(EncoderError, match="returned a web page .Google Drive - Quota "
                                           "exceeded., not the file"):
        fetch_mod.fetch("vip", settings=current())
    assert not weights.exists() or list(weights.iterdir()) == []


@pytest.mark.parametrize("kind", ["garbage", "truncated", "wrong-architecture", "code"])
def test_a_corrupt_download_is_refused_and_nothing_is_left(site, vip_file, r3m_file, weights,
                                                           kind, capsys):
    served = {"garbage": os.urandom(4096), "truncated": vip_file[: len(vip_file) // 3],
              "wrong-architecture": r3m_file.replace(b"r3m", b"vip"),
              "code": saved({"vip": {"x": torch.zeros(1)}, "cfg": Site()})}[kind]
    site.files["/vip_resnet50.pt"] = served
    assert main(["weights", "fetch", "vip", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: vip:") and "\n" not in err
    assert not weights.exists() or list(weights.iterdir()) == []
    assert status("vip", settings=current()).state == "weights-missing"


def test_zip_member_is_extracted_and_the_zip_removed(site, hrp_file, weights):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("visual_features/", b"")
        zf.writestr("visual_features/resnet18/IN_1M_resnet18.pth", hrp_file)
        zf.writestr("visual_features/hrp/IN_hrp.pth", b"not this one")
        zf.writestr("__MACOSX/visual_features/resnet18/._IN_1M_resnet18.pth", b"junk")
    site.files["/features.zip"] = buf.getvalue()  # the mirror holds the release as it is
    result = fetch_mod.fetch("hrp-resnet18", settings=current())
    assert "IN_1M_resnet18.pth" in json.loads(
        (weights / "manifest.json").read_text())["files"]["hrp_resnet18.pth"]["source"]
    assert result.action == "fetched"
    assert [p for p, _ in site.log] == ["/hrp_resnet18.pth", "/features.zip"]
    assert (weights / "hrp_resnet18.pth").read_bytes() == hrp_file
    assert sorted(p.name for p in weights.iterdir()) == ["hrp_resnet18.pth", "manifest.json"]
    assert status("hrp-resnet18", settings=current()).state == "ready"


def _features_zip(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_one_release_zip_serves_several_encoders_in_one_run(site, hrp_file, weights, capsys):
    site.files["/features.zip"] = _features_zip({
        "visual_features/resnet18/IN_1M_resnet18.pth": hrp_file,
        "visual_features/hrp/IN_hrp.pth": b"\x80\x02 damaged"})
    assert main(["weights", "fetch", "hrp-resnet18", "hrp-vit", "--quiet"]) == 2
    assert "error: hrp-vit: refused the download" in capsys.readouterr().err
    assert [p for p, _ in site.log].count("/features.zip") == 1  # downloaded once
    assert sorted(p.name for p in weights.iterdir()) == ["hrp_resnet18.pth", "manifest.json"]


def test_a_release_zip_put_in_the_weights_folder_is_used_offline(hrp_file, weights,
                                                                 monkeypatch, no_network):
    monkeypatch.delenv("S2R_WEIGHTS_MIRROR", raising=False)
    weights.mkdir()
    (weights / "features.zip").write_bytes(_features_zip(
        {"visual_features/resnet18/IN_1M_resnet18.pth": hrp_file}))
    assert fetch_mod.fetch("hrp-resnet18", settings=current()).action == "fetched"
    assert (weights / "hrp_resnet18.pth").read_bytes() == hrp_file
    assert (weights / "features.zip").is_file()  # the user's file stays


def test_timm_entries_come_from_the_mirror_under_their_weights_file_name(site, weights):
    import timm
    from safetensors.torch import save as save_safetensors

    with torch.device("meta"):
        model = timm.create_model("resnet18")  # the hub file has the 1000-class head
    sd = {k: torch.rand(v.shape) if v.dtype.is_floating_point else torch.zeros(v.shape,
                                                                              dtype=v.dtype)
          for k, v in model.state_dict().items()}
    site.files["/resnet18.safetensors"] = save_safetensors(sd)
    assert status("resnet18", settings=current()).state == "weights-missing"
    assert fetch_mod.fetch("resnet18", settings=current()).action == "fetched"
    assert status("resnet18", settings=current()).state == "ready"
    assert status("resnet18", settings=current()).file == str(weights / "resnet18.safetensors")


def test_hrp_entries_download_the_hrp_release_zip(monkeypatch):
    """data4robotics branch hrp_release, download_features.sh: the lab's release site (the
    main branch's Box link predates HRP and has no hrp/ member)."""
    monkeypatch.delenv(fetch_mod.MIRROR_ENV, raising=False)
    url = "https://www.cs.cmu.edu/~data4robotics/release/features.zip"
    for encoder_id in ("hrp-vit", "hrp-resnet18"):
        assert fetch_mod.source_urls(fetch_mod.get_spec(encoder_id), settings=current()) == [url]
    assert fetch_mod.ZIP_MEMBERS["hrp-vit"][1] == ("*hrp/IN_hrp.pth",)


def test_zip_without_the_member_is_refused(site, weights):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("visual_features/vc1/model.pth", b"x")
    site.files["/features.zip"] = buf.getvalue()
    with pytest.raises(EncoderError, match="no member matching.*IN_hrp.pth"):
        fetch_mod.fetch("hrp-vit", settings=current())
    assert not weights.exists() or list(weights.iterdir()) == []


def test_the_known_mvp_md5_is_checked(site, r3m_file, weights, monkeypatch):
    assert fetch_mod.expected_md5(fetch_mod.get_spec("mvp")) == \
        "526093597ac1dc55df618bcbdfe8da4a"
    site.files["/mae_pretrain_egosoup_vit_base.pth"] = b"\x80\x02not the release"
    with pytest.raises(EncoderError, match="md5 .* the release publishes 5260935"):
        fetch_mod.fetch("mvp", settings=current())
    assert not weights.exists() or list(weights.iterdir()) == []
    # a matching md5 passes on to the load check
    site.files["/r3m_resnet18.pt"] = r3m_file
    monkeypatch.setitem(fetch_mod.KNOWN_MD5, "r3m-resnet18", hashlib.md5(r3m_file).hexdigest())
    assert fetch_mod.fetch("r3m-resnet18", settings=current()).action == "fetched"


def test_a_changed_file_or_release_is_reported_against_the_pinned_sha256(
        site, r3m_file, weights, capsys):
    site.files["/r3m_resnet18.pt"] = r3m_file
    assert main(["weights", "fetch", "r3m-resnet18", "--quiet"]) == 0
    assert main(["weights", "verify"]) == 0
    path = weights / "r3m_resnet18.pt"
    with open(path, "r+b") as fh:
        fh.seek(len(r3m_file) - 10)
        fh.write(b"0123456789")
    capsys.readouterr()
    assert main(["weights", "fetch", "r3m-resnet18", "--quiet"]) == 2
    assert "changed since its sha256 was pinned" in capsys.readouterr().err
    assert main(["weights", "verify"]) == 2
    assert "r3m_resnet18.pt: changed since pinned" in capsys.readouterr().out
    # the release itself changed: the new download is refused, the folder keeps no file
    path.unlink()
    changed = torch.load(io.BytesIO(r3m_file), weights_only=True)
    changed["r3m"]["module.convnet.conv1.weight"] += 1
    site.files["/r3m_resnet18.pt"] = saved(changed)
    assert main(["weights", "fetch", "r3m-resnet18", "--quiet"]) == 2
    assert "not the" in capsys.readouterr().err
    assert sorted(p.name for p in weights.iterdir()) == ["manifest.json"]


def test_errors_are_one_line_exit_2(site, capsys, monkeypatch):
    assert main(["weights", "fetch", "no-such-encoder"]) == 2
    assert "unknown encoder 'no-such-encoder'" in capsys.readouterr().err
    assert main(["weights", "fetch", "vip", "--quiet"]) == 2  # nothing on the mirror
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: vip: HTTP 404") and "\n" not in err
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("S2R_WEIGHTS_MIRROR", f"http://127.0.0.1:{port}/")
    assert main(["weights", "fetch", "vip", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot reach 127.0.0.1" in err and "\n" not in err
    assert not Path(os.environ["S2R_WEIGHTS_DIR"]).exists()  # no empty folder left either
    assert main(["weights", "fetch"]) == 2
    assert "give encoder ids or --all" in capsys.readouterr().err


def test_fetch_all_reports_each_failure_and_continues(site, r3m_file, weights, capsys):
    ids = fetch_mod.fetchable_ids(settings=current())
    assert {"vip", "mvp", "r3m-resnet18", "hrp-vit", "vgg16", "clip-base-16"} <= set(ids)
    assert not {"pixels", "state", "efficientnet-lite0", "vip@random"} & set(ids)
    site.files["/r3m_resnet18.pt"] = r3m_file
    assert main(["weights", "fetch", "--all", "--quiet"]) == 2
    out = capsys.readouterr()
    assert "r3m-resnet18: " in out.out and "error: vip: HTTP 404" in out.err
    assert f"{len(ids) - 1} of {len(ids)} encoders not fetched" in out.err
    assert (weights / "r3m_resnet18.pt").read_bytes() == r3m_file


def test_nothing_to_download_is_said(capsys):
    assert main(["weights", "fetch", "pixels", "resnet18@random", "efficientnet-lite0"]) == 0
    out = capsys.readouterr().out
    assert "pixels: no weights needed" in out and "resnet18@random: random init" in out


def test_hub_entries_offline_say_what_to_do(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("S2R_WEIGHTS_MIRROR", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["weights", "fetch", "vgg16"]) == 2
    err = capsys.readouterr().err
    assert "vgg16: no network" in err and "model.safetensors" in err and "vgg16.safetensors" in err


def test_hub_entries_download_through_the_hub_library_online(monkeypatch, tmp_path):
    import huggingface_hub

    from s2r.encoders import locate

    calls = []

    def fake_download(repo_id, filename, cache_dir=None, **kwargs):
        calls.append((repo_id, filename))
        path = tmp_path / "dl" / filename
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"weights")
        return str(path)

    monkeypatch.delenv("S2R_WEIGHTS_MIRROR", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(locate, "hub_reachable", lambda *a, **k: True)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    result = fetch_mod.fetch("vgg16", settings=current())
    assert result.action == "fetched" and calls == [("timm/vgg16.tv_in1k", "model.safetensors")]


def test_the_s2r_offline_switch_blocks_release_downloads(monkeypatch):
    monkeypatch.delenv("S2R_WEIGHTS_MIRROR", raising=False)
    monkeypatch.setenv("S2R_OFFLINE", "1")
    with pytest.raises(EncoderError, match="S2R_OFFLINE is set.*vip_resnet50.pt"):
        fetch_mod.fetch("vip", settings=current())
    assert not Path(os.environ["S2R_WEIGHTS_DIR"]).exists()
