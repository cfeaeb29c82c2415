"""Weights in one command: download an encoder's weights into the weights folder.

``python -m s2r weights fetch ID [ID ...] | --all`` (:mod:`s2r.commands.weights`) calls
:func:`fetch_many`. For each encoder:

- released research checkpoints (``spec.checkpoint.url``): streamed from the release URL
  (Google Drive's confirmation page followed, Box links followed) into
  ``<weights>/<file>.part`` with a progress bar, resumed with HTTP Range after a cut
  connection (:mod:`s2r.encoders.fetch_http`); a release that is a zip (HRP's
  ``features.zip``) has the right member extracted (:data:`ZIP_MEMBERS`);
- timm / open_clip entries: through the hub library into its cache, online only;
- with ``S2R_WEIGHTS_MIRROR=BASE_URL``, every file comes from ``BASE_URL/<its file name in
  the weights folder>`` instead (zip releases: that name, else ``BASE_URL/<zip name>``).

A downloaded file is moved into place (``os.replace``, atomic) only when it is complete,
matches the known md5 (MVP) and loads into the encoder's architecture exactly as
:func:`~s2r.encoders.build_encoder` would load it (read with the safe reader
:func:`~s2r.encoders.safe_load.read_checkpoint`); otherwise it is deleted and nothing is
left in the weights folder. Its sha256 is pinned in ``<weights>/manifest.json`` on first
download, so a later change of the file (or of the release) is reported.
"""

from __future__ import annotations

import datetime
import fnmatch
import hashlib
import json
import os
import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from s2r.encoders import locate
from s2r.encoders.backend import get_backend
from s2r.encoders.fetch_http import download
from s2r.encoders.registry import get_spec, list_encoders
from s2r.encoders.safe_load import _sniff
from s2r.errors import EncoderError

MIRROR_ENV = "S2R_WEIGHTS_MIRROR"
MANIFEST = "manifest.json"

#: Encoder id -> (the release zip's file name, fnmatch patterns of the member to extract,
#: preferred first). The specs say so only in words (``checkpoint.how``).
ZIP_MEMBERS = {
    "hrp-resnet18": ("features.zip", ("*resnet18/*hrp*.pth", "*resnet18/IN_1M_resnet18.pth",
                                      "*resnet18/*.pth")),
    "hrp-vit": ("features.zip", ("*hrp/IN_hrp.pth",)),
}

#: Encoder id -> md5 published by the release (also read from ``checkpoint.how``).
KNOWN_MD5 = {"mvp": "526093597ac1dc55df618bcbdfe8da4a"}


@dataclass(frozen=True)
class FetchResult:
    """What :func:`fetch` did for one encoder.

    Attributes
    ----------
    id : str
    action : str
        ``"fetched"``, ``"present"`` (already here, sha256 as pinned) or ``"skipped"``
        (nothing to download: random init, no weights, a user's own file).
    message : str
        One line for people.
    path : str or None
        The weights file.
    """

    id: str
    action: str
    message: str
    path: Optional[str] = None


def mirror() -> Optional[str]:
    """``$S2R_WEIGHTS_MIRROR`` without a trailing slash, or ``None``."""
    base = os.environ.get(MIRROR_ENV, "").strip()
    return base.rstrip("/") or None


def _s2r_offline() -> bool:
    return os.environ.get("S2R_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def expected_md5(spec) -> Optional[str]:
    """The md5 the release publishes for ``spec``'s file (table, else ``checkpoint.how``)."""
    if spec.id in KNOWN_MD5:
        return KNOWN_MD5[spec.id]
    how = spec.checkpoint.how if spec.checkpoint is not None else ""
    found = re.search(r"md5\s*:?\s*([0-9a-f]{32})", how or "", re.I)
    return found.group(1).lower() if found else None


def file_digest(path, name: str = "sha256") -> str:
    digest = hashlib.new(name)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# the manifest of pinned sha256 digests

def manifest_path(folder: Optional[Path] = None) -> Path:
    return Path(folder or locate.weights_dir()) / MANIFEST


def read_manifest(folder: Optional[Path] = None) -> dict:
    """``{file name: {"sha256", "size", "source", "encoder", "pinned"}}`` (empty if none)."""
    path = manifest_path(folder)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise EncoderError(f"{path} is not a readable manifest ({exc}); fix or delete it") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise EncoderError(f"{path} is not an s2r weights manifest (no 'files' object)")
    return files


def pin(name: str, sha256: str, *, size: int, source: str, encoder: str,
        folder: Optional[Path] = None) -> None:
    """Record ``sha256`` of the weights file ``name`` (written atomically)."""
    files = read_manifest(folder)
    files[name] = {"sha256": sha256, "size": size, "source": source, "encoder": encoder,
                   "pinned": datetime.datetime.now(datetime.timezone.utc)
                   .strftime("%Y-%m-%dT%H:%M:%SZ")}
    path = manifest_path(folder)
    tmp = path.with_name(f".{MANIFEST}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps({"version": 1, "files": files}, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def check_pinned(path: Path, *, encoder: str, source: str = "") -> str:
    """Compare ``path`` with its pinned sha256 (pin it when it has none); return a message.

    Raises
    ------
    EncoderError
        The file differs from the sha256 pinned for it.
    """
    entry = read_manifest(path.parent).get(path.name)
    digest = file_digest(path)
    if entry is None:
        pin(path.name, digest, size=path.stat().st_size, source=source or "already here",
            encoder=encoder, folder=path.parent)
        return f"sha256 {digest[:16]} pinned now"
    if entry.get("sha256") != digest:
        raise EncoderError(
            f"{encoder}: {path} changed since its sha256 was pinned on {entry.get('pinned')} "
            f"(pinned {str(entry.get('sha256'))[:16]}, now {digest[:16]}); if the new file is "
            f"intended, delete its entry in {manifest_path(path.parent)}")
    return f"sha256 {digest[:16]} as pinned"


# ---------------------------------------------------------------------------------------------
# what to download

def _what(spec) -> Optional[str]:
    """``"release"``, ``"hub"``, or ``None`` with nothing to download."""
    backend = get_backend(spec.backend)
    if spec.random_init or backend.weightless:
        return None
    if spec.checkpoint is not None:
        return "release" if spec.checkpoint.url else None
    if getattr(backend, "download", False) and (spec.hub_repo or mirror()):
        return "hub"
    return None


def _skip_reason(spec) -> str:
    backend = get_backend(spec.backend)
    if spec.random_init:
        return "random init; nothing to download"
    if backend.weightless:
        return "no weights needed"
    if spec.checkpoint is not None:
        return f"a local checkpoint ({spec.checkpoint.file}); nothing to download"
    if not getattr(backend, "download", False):
        return f"nothing to download ({backend.status(spec).message})"
    return locate.how_to_get(spec)


def source_urls(spec) -> list:
    """The URLs tried in order for ``spec``'s file (the mirror's, else the release's)."""
    base = mirror()
    name = locate.expected_path(spec).name
    if base:
        urls = [f"{base}/{name}"]
        if spec.id in ZIP_MEMBERS:
            urls.append(f"{base}/{ZIP_MEMBERS[spec.id][0]}")
        return urls
    if spec.checkpoint is not None:
        return [spec.checkpoint.url]
    return []


def _is_plain_zip(path: Path) -> bool:
    """A zip archive that is not a torch.save file (a release bundle such as features.zip)."""
    with open(path, "rb") as fh:
        if fh.read(4) != b"PK\x03\x04":
            return False
    return _sniff(path) == "unknown" and zipfile.is_zipfile(path)


def extract_member(spec, archive: Path, dest: Path) -> str:
    """Extract ``spec``'s member of the release zip ``archive`` to ``dest``; its name."""
    patterns = ZIP_MEMBERS.get(spec.id, (None, ("*" + Path(spec.checkpoint.file).name,)))[1]
    try:
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist()
                     if not n.endswith("/") and not n.startswith("__MACOSX/")]
            member = next((n for p in patterns for n in names if fnmatch.fnmatch(n, p)), None)
            if member is None:
                raise EncoderError(
                    f"{spec.id}: the release zip has no member matching "
                    f"{' or '.join(patterns)} ({len(names)} files, e.g. {', '.join(names[:3])})")
            with zf.open(member) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 22)
    except (zipfile.BadZipFile, OSError) as exc:
        raise EncoderError(f"{spec.id}: the release zip is damaged ({exc})") from None
    return member


def verify_file(spec, path: Path, *, source: str) -> None:
    """Refuse a file that does not match the release's md5 or does not load exactly into
    ``spec``'s architecture (the same strict load :func:`build_encoder` does)."""
    from s2r.encoders.backends.base import build_with_weights

    md5 = expected_md5(spec)
    if md5 is not None:
        got = file_digest(path, "md5")
        if got != md5:
            raise EncoderError(f"{spec.id}: the file from {source} has md5 {got}, the release "
                               f"publishes {md5}; refused")
    backend = get_backend(spec.backend)
    prepare = lambda raw, model, src: backend.adapt_state_dict(raw, model, spec, src)  # noqa: E731
    try:
        build_with_weights(lambda: backend.make(spec), prepare, path, f"the file from {source}")
    except EncoderError as exc:
        raise EncoderError(f"{spec.id}: refused the download: "
                           f"{str(exc).replace(str(path), 'it')}") from None


def _download_first(spec, urls: list, part: Path, progress: bool) -> str:
    """Download the first of ``urls`` the server has (a 404 tries the next); its URL."""
    for i, url in enumerate(urls):
        try:
            download(url, part, desc=spec.id, progress=progress)
            return url
        except EncoderError as exc:
            if i + 1 < len(urls) and str(exc).startswith("HTTP 404"):
                continue
            raise EncoderError(f"{spec.id}: {exc}") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _fetch_file(spec, dest: Path, progress: bool) -> FetchResult:
    """Download ``spec``'s file from its release or the mirror into ``dest``."""
    urls = source_urls(spec)
    if not mirror() and _s2r_offline():
        raise EncoderError(f"{spec.id}: S2R_OFFLINE is set; {locate.how_to_get(spec)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if spec.id in ZIP_MEMBERS and not mirror():
        part = dest.with_name(ZIP_MEMBERS[spec.id][0] + ".part")
    url = _download_first(spec, urls, part, progress)
    check = part
    extracted = None
    try:
        if _is_plain_zip(part):
            extracted = dest.with_name(f".{dest.name}.extract-{os.getpid()}")
            member = extract_member(spec, part, extracted)
            check, url = extracted, f"{url} ({member})"
        verify_file(spec, check, source=url)
        digest = file_digest(check)
        pinned = read_manifest(dest.parent).get(dest.name)
        if pinned is not None and pinned.get("sha256") != digest:
            raise EncoderError(
                f"{spec.id}: the download from {url} has sha256 {digest[:16]}, not the "
                f"{str(pinned.get('sha256'))[:16]} pinned on {pinned.get('pinned')}; the "
                f"release changed; if that is intended, delete its entry in "
                f"{manifest_path(dest.parent)}")
        os.replace(check, dest)
    except BaseException:
        for leftover in (part, extracted):
            if leftover is not None and leftover.exists():
                leftover.unlink()
        _remove_if_empty(dest.parent)
        raise
    if part.exists():
        part.unlink()  # the zip, once its member is in place
    pin(dest.name, digest, size=dest.stat().st_size, source=url, encoder=spec.id,
        folder=dest.parent)
    return FetchResult(spec.id, "fetched", f"{spec.id}: {dest} (sha256 {digest[:16]} pinned)",
                       str(dest))


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()  # only when empty: a refused first download leaves no folder behind
    except OSError:
        pass


def _fetch_hub(spec, progress: bool) -> FetchResult:
    cached = locate.find_hub_cache(spec)
    if cached is not None:
        return FetchResult(spec.id, "present", f"{spec.id}: hub cache {cached}", str(cached))
    if locate.hub_offline():
        reason = "offline mode (HF_HUB_OFFLINE/S2R_OFFLINE is set)"
    elif not locate.hub_reachable():
        reason = "huggingface.co is not reachable"
    else:
        path = locate.download_hub_weights(spec)
        return FetchResult(spec.id, "fetched", f"{spec.id}: hub cache {path}", str(path))
    raise EncoderError(f"{spec.id}: no network: {reason}; {locate.how_to_get(spec)}, or set "
                       f"{MIRROR_ENV} to a mirror that has it")


def fetch(encoder, *, progress: bool = True) -> FetchResult:
    """Download the weights of ``encoder`` (id or spec) unless they are here already.

    Raises
    ------
    EncoderError
        Unknown id, no network, HTTP error, a cut download (the ``.part`` is kept for the
        next run), a corrupt file or md5 mismatch (nothing is kept), a file that changed
        since its sha256 was pinned.
    """
    spec = get_spec(encoder)
    kind = _what(spec)
    if kind is None:
        return FetchResult(spec.id, "skipped", f"{spec.id}: {_skip_reason(spec)}")
    dest = locate.expected_path(spec)
    local = locate.find_local_weights(spec)
    if local is not None:
        return FetchResult(spec.id, "present",
                           f"{spec.id}: {local} ({check_pinned(local, encoder=spec.id)})",
                           str(local))
    if kind == "hub" and not mirror():
        return _fetch_hub(spec, progress)
    return _fetch_file(spec, dest, progress)


def fetchable_ids() -> list:
    """Ids of every registry entry (no ``@random``) that has weights to download."""
    return [spec.id for spec in list_encoders() if _what(spec) is not None]


def fetch_many(ids, *, progress: bool = True, report=print) -> list:
    """:func:`fetch` each of ``ids`` (every error reported, then the others continue).

    Returns
    -------
    list of FetchResult

    Raises
    ------
    EncoderError
        After all ids, when any failed (one line naming them; each failure was reported).
    """
    ids = list(dict.fromkeys(ids))
    for encoder_id in ids:
        get_spec(encoder_id)  # unknown ids fail before any download
    results, failed = [], []
    for encoder_id in ids:
        try:
            result = fetch(encoder_id, progress=progress)
        except EncoderError as exc:
            if len(ids) == 1:
                raise
            failed.append(encoder_id)
            report(f"error: {exc}")
            continue
        results.append(result)
        report(result.message)
    if failed:
        raise EncoderError(f"{len(failed)} of {len(ids)} encoders not fetched: "
                           f"{', '.join(failed)}")
    return results


def verify_pinned(folder: Optional[Path] = None) -> list:
    """``(name, ok, message)`` for each file pinned in the manifest."""
    folder = Path(folder or locate.weights_dir())
    out = []
    for name, entry in sorted(read_manifest(folder).items()):
        path = folder / name
        if not path.is_file():
            out.append((name, False, f"{name}: pinned but missing"))
            continue
        digest = file_digest(path)
        ok = digest == entry.get("sha256")
        out.append((name, ok, f"{name}: " + ("sha256 as pinned" if ok else
                   f"changed since pinned on {entry.get('pinned')} (pinned "
                   f"{str(entry.get('sha256'))[:16]}, now {digest[:16]})")))
    return out
