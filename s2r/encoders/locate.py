"""Where a weights file is: the weights folder, the Hugging Face hub cache, or a download.

Resolution order for the weights of an entry with a weights file (first hit wins; nothing
here touches the network except :func:`download_hub_weights`, which :func:`resolve_file`
calls only when asked to, online):

Where to look is a setting the caller hands down (``settings``: :class:`s2r.settings.Settings`;
the library never reads the environment): a function that needs the weights folder or the hub
cache and was handed no settings raises ``TypeError`` (:func:`s2r.settings.need`). An absolute
checkpoint path of a user entry needs no settings.

1. The weights folder ``settings.weights_dir`` (``$S2R_WEIGHTS_DIR``, default ``./weights``):
   - checkpoint entries: their ``checkpoint.file`` (e.g. ``r3m_resnet50.pt``);
   - timm / open_clip entries: ``<id>.safetensors`` (or ``.pth``, ``.pt``, ``.bin``): the
     file the hub library would download (``hub_repo``/``hub_files[0]``), renamed.
2. Entries with a ``hub_repo``: the local Hugging Face hub cache (``settings.hf_hub_cache``:
   ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``), i.e. weights
   fetched by an earlier online run.
3. Backends that download (timm, open_clip), online only (``settings.no_downloads`` off and
   huggingface.co reachable within a few seconds): download from the hub into that cache.

Which entries have a weights file at all, and what else they do, is their backend's business
(:mod:`s2r.encoders.backend`); :mod:`s2r.encoders.weights` is the public front.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from s2r.errors import EncoderError
from s2r.settings import need

WEIGHT_SUFFIXES = (".safetensors", ".pth", ".pt", ".bin")
STATES = ("ready", "random", "weights-missing")


@dataclass(frozen=True)
class EncoderStatus:
    """Whether an encoder can be built with its real weights right now.

    Attributes
    ----------
    state : str
        ``"ready"`` (weights found, or none needed), ``"random"`` (random-init control) or
        ``"weights-missing"``.
    message : str
        One line for people: where the weights are, or how to get them.
    file : str or None
        The weights file found, or the path s2r expects when missing.
    url : str or None
        Where to download the weights.
    """

    state: str
    message: str
    file: Optional[str] = None
    url: Optional[str] = None


def weights_dir(settings) -> Path:
    """The weights folder of ``settings`` (``$S2R_WEIGHTS_DIR`` or ``./weights``)."""
    return need(settings, "the weights folder").weights_dir


def file_kind(mode: int) -> str:
    """What a path is, for a message (``st_mode`` from ``os.stat``/``lstat``): ``"a file"``,
    ``"a link"``, ``"a folder"``, ``"a FIFO (named pipe)"``, ``"a device"``, ``"a socket"``."""
    import stat

    for test, kind in ((stat.S_ISREG, "a file"), (stat.S_ISLNK, "a link"),
                       (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def writable_weights_dir(settings) -> Path:
    """The weights folder (:func:`weights_dir`), checked before anything is trained into it:
    a folder (or a link to one), or missing with a folder as its nearest existing ancestor
    (it is made when a file is written), in which a file can be created: probed by creating
    and removing a temporary file (permission bits do not tell, e.g. for root or on a
    read-only mount), so a training of minutes never ends in a save that fails. Nothing is
    left behind.

    Raises
    ------
    EncoderError
        One line naming ``S2R_WEIGHTS_DIR`` and the path: it (or an ancestor) is a file, it
        cannot be looked at (too long a name, no permission), or nothing can be written in
        it (read-only).
    """
    import stat

    folder = weights_dir(settings)
    where = f"the weights folder {folder} (S2R_WEIGHTS_DIR)"
    probe = folder
    try:
        while True:
            try:
                mode = os.stat(probe).st_mode
                break
            except (FileNotFoundError, NotADirectoryError):
                if probe.parent == probe:
                    raise
                probe = probe.parent
    except OSError as exc:
        raise EncoderError(f"{where} cannot be used ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(mode):
        what = "is" if probe == folder else f"is inside {probe}, which is"
        raise EncoderError(f"{where} {what} {file_kind(mode)}, not a folder; set "
                           "S2R_WEIGHTS_DIR to a folder")
    _probe_write(probe, where)
    return folder


def _probe_write(folder: Path, where: str) -> None:
    """Raise unless a file can be created (and removed) in the existing folder ``folder``;
    ``where`` names the weights folder in the message."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".s2r-probe-", dir=folder)
    except OSError as exc:
        inside = "" if where.startswith(f"the weights folder {folder} ") else f" ({folder})"
        raise EncoderError(f"{where} cannot be written{inside}: {exc.strerror or exc} "
                           "(trained weights are saved there); set S2R_WEIGHTS_DIR to a "
                           "folder you can write") from None
    os.close(fd)
    os.unlink(probe)


def hf_cache_dir(settings) -> Path:
    """The Hugging Face hub cache folder of ``settings``."""
    return need(settings, "the Hugging Face hub cache").hf_hub_cache


def hub_offline(settings) -> bool:
    """True when the user asked for offline mode (``HF_HUB_OFFLINE`` / ``S2R_OFFLINE``)."""
    return need(settings, "offline mode").no_downloads


def hub_reachable(host: str = "huggingface.co", port: int = 443, timeout: float = 3.0) -> bool:
    """Whether ``host`` accepts a TCP connection within ``timeout`` seconds (never hangs:
    DNS runs in a daemon thread that is abandoned on timeout)."""
    import socket

    result = []

    def probe():
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    return bool(result and result[0])


def hub_url(spec) -> Optional[str]:
    """Download URL of the preferred hub file of a timm/open_clip entry."""
    if not spec.hub_repo or not spec.hub_files:
        return None
    return f"https://huggingface.co/{spec.hub_repo}/resolve/main/{spec.hub_files[0]}"


def expected_path(spec, settings=None) -> Optional[Path]:
    """The path s2r looks for first (absolute checkpoint paths of user entries are kept;
    others are in the weights folder of ``settings``)."""
    name = spec.weights_file
    if name is None:
        return None
    path = Path(name).expanduser()
    return path if path.is_absolute() else weights_dir(settings) / path


def find_local_weights(spec, settings=None) -> Optional[Path]:
    """The weights file of ``spec`` in the weights folder, or ``None``."""
    path = expected_path(spec, settings)
    if path is None:
        return None
    if spec.checkpoint is not None:
        return path if path.is_file() else None
    stem = path.name[: -len(path.suffix)] if path.suffix in WEIGHT_SUFFIXES else path.name
    for suffix in WEIGHT_SUFFIXES:
        candidate = path.with_name(stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def find_hub_cache(spec, settings=None) -> Optional[Path]:
    """The weights of a timm/open_clip entry in the local hub cache, or ``None`` (offline)."""
    if not spec.hub_repo:
        return None
    cache_dir = hf_cache_dir(settings)
    repo_dir = cache_dir / ("models--" + spec.hub_repo.replace("/", "--"))
    if not repo_dir.is_dir():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with timm
        return None
    for filename in spec.hub_files:
        found = try_to_load_from_cache(spec.hub_repo, filename, cache_dir=str(cache_dir))
        if isinstance(found, str) and os.path.isfile(found):
            return Path(found)
    return None


def _local_checkpoint(spec) -> bool:
    """A user checkpoint: a file of the user's with nowhere to download it from."""
    return spec.checkpoint is not None and not spec.checkpoint.url


def _missing_local_checkpoint(spec, settings=None) -> str:
    where = f" (from {spec.source})" if spec.source.startswith("encoder config") else ""
    return (f"encoder {spec.id!r}: checkpoint file {expected_path(spec, settings)} does not exist"
            f"{where}; fix the path or use {spec.id}@random for random weights")


def how_to_get(spec, settings=None) -> str:
    """Instructions to get ``spec``'s weights offline (file name, URL, folder)."""
    path = expected_path(spec, settings)
    if _local_checkpoint(spec):
        return f"checkpoint file {path} does not exist; fix the path"
    if spec.checkpoint is not None:
        extra = f" ({spec.checkpoint.how})" if spec.checkpoint.how else ""
        return (f"download {spec.checkpoint.url}{extra} and save it as {path} "
                "(set S2R_WEIGHTS_DIR to use another folder)")
    url = hub_url(spec)
    if url is None:
        return (f"{spec.pretrained_name} has no published pretrained weights; put a "
                f"state_dict at {path} or use {spec.id}@random")
    return (f"run once online (the hub library caches {spec.pretrained_name}), or download "
            f"{url} and save it as {path} (set S2R_WEIGHTS_DIR to use another folder)")


def file_status(spec, settings=None) -> EncoderStatus:
    """:class:`EncoderStatus` of an entry whose weights are a file (never touches the
    network): ready when the file is in the weights folder or the hub cache."""
    local = find_local_weights(spec, settings)
    if local is not None:
        return EncoderStatus("ready", f"weights file {local}", str(local), _url(spec))
    cached = find_hub_cache(spec, settings)
    if cached is not None:
        return EncoderStatus("ready", f"hub cache {cached}", str(cached), _url(spec))
    path = str(expected_path(spec, settings))
    if _local_checkpoint(spec):
        return EncoderStatus("weights-missing", _missing_local_checkpoint(spec, settings), path)
    return EncoderStatus("weights-missing",
                         f"{spec.id}: weights not found; {how_to_get(spec, settings)}", path,
                         _url(spec))


def _url(spec) -> Optional[str]:
    return (spec.checkpoint.url or None) if spec.checkpoint is not None else hub_url(spec)


def download_hub_weights(spec, settings) -> Path:
    """Download a timm/open_clip entry's weights into the hub cache (needs the network)."""
    from huggingface_hub import hf_hub_download

    errors = []
    cache_dir = str(hf_cache_dir(settings))
    for filename in spec.hub_files:
        try:
            return Path(hf_hub_download(spec.hub_repo, filename, cache_dir=cache_dir))
        except Exception as exc:
            errors.append(f"{filename}: {type(exc).__name__}: {exc}")
    raise EncoderError(f"{spec.id}: could not download weights from {spec.hub_repo} "
                       f"({'; '.join(errors)}); {how_to_get(spec, settings)}")



def resolve_file(spec, settings=None, *, download: bool = False) -> Path:
    """The weights file of a pretrained (non-random) ``spec`` whose weights are a file;
    downloaded from its ``hub_repo`` only when ``download`` is set and s2r is online.

    Raises
    ------
    EncoderError
        The weights are not here and cannot be downloaded; the message names the file, the
        URL and ``S2R_WEIGHTS_DIR``.
    """
    found = find_local_weights(spec, settings) or find_hub_cache(spec, settings)
    if found is not None:
        return found
    if download and spec.hub_repo:
        if hub_offline(settings):
            reason = "offline mode (HF_HUB_OFFLINE/S2R_OFFLINE is set)"
        elif not hub_reachable():
            reason = "huggingface.co is not reachable"
        else:
            return download_hub_weights(spec, settings)
        raise EncoderError(f"{spec.id}: pretrained weights are not here and {reason}; "
                           f"{how_to_get(spec, settings)}. Or use {spec.id}@random for random "
                           "weights.")
    if _local_checkpoint(spec):
        raise EncoderError(_missing_local_checkpoint(spec, settings))
    raise EncoderError(f"{spec.id}: weights file not found; {how_to_get(spec, settings)}. "
                       f"Or use {spec.id}@random for random weights.")


def file_fingerprint(path) -> str:
    """``sha256:<first 16 hex digits>`` of the file's bytes (streamed, 4 MiB chunks).

    Memoised per (path, size, modification time), so a 1.7 GB CLIP-L file is hashed once
    per process.
    """
    path = Path(path).expanduser().resolve()
    stat = path.stat()
    return _hash_file(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _hash_file(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()[:16]
