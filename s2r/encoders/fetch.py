"""Weights in one command: download an encoder's weights into the weights folder.

``python -m s2r weights fetch ID [ID ...] | --all`` (:mod:`s2r.commands.weights`) calls
:func:`fetch_many`. For each encoder:

- released research checkpoints (``spec.checkpoint.url``): streamed from the release URL
  (Google Drive's confirmation page followed, Box links followed) into
  ``<weights>/<file>.part`` (bytes reported to ``progress``), resumed with HTTP Range after a cut
  connection (:mod:`s2r.encoders.fetch_http`); a release that is a zip (HRP's
  ``features.zip``) has the right member extracted (:data:`ZIP_MEMBERS`);
- timm / open_clip entries: through the hub library into its cache, online only;
- with ``S2R_WEIGHTS_MIRROR=BASE_URL``, every file comes from ``BASE_URL/<its file name in
  the weights folder>`` instead (zip releases: that name, else ``BASE_URL/<zip name>``).

The weights folder, the mirror and offline mode are settings: every function here takes
``settings`` (:class:`s2r.settings.Settings`, handed down by the caller; never read here).

A downloaded file is moved into place (``os.replace``, atomic) only when it is complete,
matches the known md5 (MVP) and loads into the encoder's architecture exactly as
:func:`~s2r.encoders.build_encoder` would load it (read with the safe reader
:func:`~s2r.encoders.safe_load.read_checkpoint`); otherwise it is deleted and nothing is
left in the weights folder. Its sha256 is pinned in ``<weights>/manifest.json`` on first
download (:mod:`s2r.encoders.fetch_manifest`), so a later change of the file (or of the
release) is reported.
"""

from __future__ import annotations

import fnmatch
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
from s2r.encoders.fetch_manifest import (  # noqa: F401  (the public names live here too)
    MANIFEST, check_pinned, file_digest, manifest_path, pin, read_manifest, verify_pinned)
from s2r.encoders.registry import get_spec, list_encoders
from s2r.encoders.safe_load import _sniff
from s2r.errors import EncoderError
from s2r.settings import need

MIRROR_ENV = "S2R_WEIGHTS_MIRROR"

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


def mirror(settings) -> Optional[str]:
    """``settings.weights_mirror`` (``$S2R_WEIGHTS_MIRROR``, no trailing slash), or ``None``."""
    return need(settings, "the weights mirror").weights_mirror


def expected_md5(spec) -> Optional[str]:
    """The md5 the release publishes for ``spec``'s file (table, else ``checkpoint.how``)."""
    if spec.id in KNOWN_MD5:
        return KNOWN_MD5[spec.id]
    how = spec.checkpoint.how if spec.checkpoint is not None else ""
    found = re.search(r"md5\s*:?\s*([0-9a-f]{32})", how or "", re.I)
    return found.group(1).lower() if found else None


# ---------------------------------------------------------------------------------------------
# what to download

def _what(spec, settings) -> Optional[str]:
    """``"release"``, ``"hub"``, or ``None`` with nothing to download."""
    backend = get_backend(spec.backend)
    if spec.random_init or backend.weightless:
        return None
    if spec.checkpoint is not None:
        return "release" if spec.checkpoint.url else None
    if getattr(backend, "download", False) and (spec.hub_repo or mirror(settings)):
        return "hub"
    return None


def _skip_reason(spec, settings) -> str:
    backend = get_backend(spec.backend)
    if spec.random_init:
        return "random init; nothing to download"
    if backend.weightless:
        return "no weights needed"
    if spec.checkpoint is not None:
        return f"a local checkpoint ({spec.checkpoint.file}); nothing to download"
    if not getattr(backend, "download", False):
        return f"nothing to download ({backend.status(spec, settings).message})"
    return locate.how_to_get(spec, settings)


def source_urls(spec, settings) -> list:
    """The URLs tried in order for ``spec``'s file (the mirror's, else the release's)."""
    base = mirror(settings)
    name = locate.expected_path(spec, settings).name
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
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            with zf.open(member) as src, os.fdopen(os.open(dest, flags, 0o644), "wb") as out:
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
    prepare = lambda raw, model, src: backend.adapt_state_dict(raw, model, spec, src)
    try:
        build_with_weights(lambda: backend.make(spec), prepare, path, f"the file from {source}")
    except Exception as exc:
        text = str(exc).replace(str(path), "it").splitlines()
        what = text[0][:300] if text else type(exc).__name__
        if not isinstance(exc, EncoderError):
            what = f"{type(exc).__name__}: {what}"
        raise EncoderError(f"{spec.id}: refused the download: {what}") from None


def _download_first(spec, urls: list, part: Path, progress) -> str:
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


def _fetch_file(spec, dest: Path, progress, archives: Optional[list], settings) -> FetchResult:
    """Download ``spec``'s file from its release or the mirror into ``dest``.

    A release zip already in the weights folder under its own name (``features.zip``) is
    used as it is; one downloaded here is kept under that name when ``archives`` is a list
    (appended to it; :func:`fetch_many` deletes them at the end), else deleted.
    """
    zip_name = ZIP_MEMBERS.get(spec.id, (None,))[0]
    archive = dest.with_name(zip_name) if zip_name else None
    downloaded = not (archive is not None and archive.is_file())
    base = mirror(settings)
    if downloaded and not base and settings.offline:
        raise EncoderError(f"{spec.id}: S2R_OFFLINE is set; {locate.how_to_get(spec, settings)}")
    part = dest.with_name((zip_name if zip_name and not base else dest.name) + ".part")
    _check_writable_places(spec, dest, [dest] + ([part] if downloaded else []))
    created = not dest.parent.exists()
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not downloaded:
        part, url = archive, str(archive)
    else:
        try:
            url = _download_first(spec, source_urls(spec, settings), part, progress)
        except BaseException:
            if created:  # a partial .part stays (the next run resumes it), an empty folder not
                _remove_if_empty(dest.parent)
            raise
    check, extracted = part, None
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
        for leftover in (part if downloaded else None, extracted):
            if leftover is not None and leftover.exists():
                leftover.unlink()
        if created:
            _remove_if_empty(dest.parent)
        raise
    if downloaded and part.exists():  # the zip, once its member is in place
        if archives is not None and archive is not None:
            os.replace(part, archive)
            archives.append(archive)
        else:
            part.unlink()
    pin(dest.name, digest, size=dest.stat().st_size, source=url, encoder=spec.id,
        folder=dest.parent)
    return FetchResult(spec.id, "fetched", f"{spec.id}: {dest} (sha256 {digest[:16]} pinned)",
                       str(dest))


def _check_writable_places(spec, dest: Path, paths: list) -> None:
    """Before any download: the weights folder is a folder, and nothing at ``paths`` (the
    weights file, its ``.part``) is a symbolic link (a planted link would turn the download
    into an overwrite of what it points to: the weights folder may be shared) or a folder."""
    folder = dest.parent
    if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
        raise EncoderError(f"{spec.id}: the weights folder {folder} is not a folder (set "
                           "S2R_WEIGHTS_DIR to a folder)")
    for path in paths:
        if path.is_symlink():
            raise EncoderError(f"{spec.id}: {path} is a symbolic link; s2r does not download "
                               "through a link (it would overwrite the file it points to); "
                               "remove the link")
        if path.exists() and not path.is_file():
            raise EncoderError(f"{spec.id}: {path} exists and is not a regular file (a folder?); "
                               "move it away")


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()  # only when empty: a refused first download leaves no folder behind
    except OSError:
        pass


def _fetch_hub(spec, progress, settings) -> FetchResult:
    cached = locate.find_hub_cache(spec, settings)
    if cached is not None:
        return FetchResult(spec.id, "present", f"{spec.id}: hub cache {cached}", str(cached))
    if locate.hub_offline(settings):
        reason = "offline mode (HF_HUB_OFFLINE/S2R_OFFLINE is set)"
    elif not locate.hub_reachable():
        reason = "huggingface.co is not reachable"
    else:
        path = locate.download_hub_weights(spec, settings)
        return FetchResult(spec.id, "fetched", f"{spec.id}: hub cache {path}", str(path))
    raise EncoderError(f"{spec.id}: no network: {reason}; {locate.how_to_get(spec, settings)}, "
                       f"or set {MIRROR_ENV} to a mirror that has it")


def fetch(encoder, *, settings=None, progress=None,
          archives: Optional[list] = None) -> FetchResult:
    """Download the weights of ``encoder`` (id or spec) unless they are here already.

    ``settings`` (required; :class:`s2r.settings.Settings`): the weights folder, the mirror,
    offline mode and the user config.

    Raises
    ------
    EncoderError
        Unknown id, no network, HTTP error, a cut download (the ``.part`` is kept for the
        next run), a corrupt file or md5 mismatch (nothing is kept), a file that changed
        since its sha256 was pinned.
    """
    settings = need(settings, "fetching weights")
    spec = get_spec(encoder, settings=settings)
    kind = _what(spec, settings)
    if kind is None:
        return FetchResult(spec.id, "skipped", f"{spec.id}: {_skip_reason(spec, settings)}")
    dest = locate.expected_path(spec, settings)
    local = locate.find_local_weights(spec, settings)
    if local is not None:
        return FetchResult(spec.id, "present",
                           f"{spec.id}: {local} ({check_pinned(local, encoder=spec.id)})",
                           str(local))
    if kind == "hub" and not mirror(settings):
        return _fetch_hub(spec, progress, settings)
    cached = locate.find_hub_cache(spec, settings) if kind == "hub" else None
    if cached is not None:
        return FetchResult(spec.id, "present", f"{spec.id}: hub cache {cached}", str(cached))
    return _fetch_file(spec, dest, progress, archives, settings)


def fetchable_ids(settings) -> list:
    """Ids of every registry entry (no ``@random``) that has weights to download."""
    return [spec.id for spec in list_encoders(settings=settings)
            if _what(spec, settings) is not None]


def fetch_many(ids, *, settings=None, progress=None, report=None) -> list:
    """:func:`fetch` each of ``ids`` (every error reported, then the others continue).

    Parameters
    ----------
    settings : s2r.settings.Settings
        Required (see :func:`fetch`).
    progress : ProgressCallback or None
        ``progress(bytes_done, bytes_total, encoder_id)`` while a file downloads
        (``bytes_total`` 0 when the server does not say).
    report : callable or None
        ``report(line)``: one line per encoder (``"error: ..."`` for a failure).

    Returns
    -------
    list of FetchResult

    Raises
    ------
    EncoderError
        After all ids, when any failed (one line naming them; each failure was reported).
    """
    report = report or (lambda line: None)
    ids = list(dict.fromkeys(ids))
    settings = need(settings, "fetching weights")
    for encoder_id in ids:
        get_spec(encoder_id, settings=settings)  # unknown ids fail before any download
    results, failed, archives = [], [], []
    try:
        for encoder_id in ids:
            try:
                result = fetch(encoder_id, settings=settings, progress=progress,
                               archives=archives)
            except EncoderError as exc:
                if len(ids) == 1:
                    raise
                failed.append(encoder_id)
                report(f"error: {exc}")
                continue
            results.append(result)
            report(result.message)
    finally:
        for archive in archives:  # release zips downloaded for several encoders
            if archive.exists():
                archive.unlink()
    if failed:
        raise EncoderError(f"{len(failed)} of {len(ids)} encoders not fetched: "
                           f"{', '.join(failed)}")
    return results
