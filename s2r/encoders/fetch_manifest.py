"""The manifest of the weights folder: the sha256 of every file :mod:`s2r.encoders.fetch`
downloaded, pinned on first download (``<weights>/manifest.json``), so a later change of a
file, or of the release it came from, is reported.

Format: ``{"version": 1, "files": {NAME: {"sha256", "size", "source", "encoder",
"pinned"}}}`` (``pinned``: UTC time, ISO 8601).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from pathlib import Path
from s2r.errors import EncoderError

MANIFEST = "manifest.json"


def file_digest(path, name: str = "sha256") -> str:
    digest = hashlib.new(name)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def manifest_path(folder) -> Path:
    """The manifest of the weights folder ``folder`` (``settings.weights_dir``)."""
    return Path(folder) / MANIFEST


def read_manifest(folder) -> dict:
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


def pin(name: str, sha256: str, *, size: int, source: str, encoder: str, folder) -> None:
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


def verify_pinned(folder) -> list:
    """``(name, ok, message)`` for each file pinned in the manifest of ``folder``."""
    folder = Path(folder)
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
