"""Reading weights files without executing code (a leaf helper).

Every file is read with safetensors or ``torch.load(..., weights_only=True)`` (plus a few
data-only classes research checkpoints pickle next to their weights): a pickle that needs code
execution is refused, never run, and the refusal names the globals it would import.
"""

from __future__ import annotations

import contextlib
import warnings
import zipfile
from pathlib import Path
from typing import Optional

from s2r.errors import EncoderError


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
        except Exception as exc:
            raise EncoderError(f"{path}: not a valid safetensors file ({exc})") from None
    if kind == "torchscript":
        raise EncoderError(
            f"{path} is a TorchScript archive (e.g. OpenAI's original CLIP .pt); s2r reads "
            "state_dicts only. Use the hub's open_clip_pytorch_model.bin / "
            "model.safetensors, or save the archive's state_dict with torch.save.")
    if kind == "unknown":
        # Never echo the file's bytes: the path may name any file (ckpt:ARCH:/etc/passwd).
        raise EncoderError(
            f"{path} is not a checkpoint: expected a .safetensors file or a file written by "
            "torch.save (.pt/.pth/.bin), but its first bytes are neither")
    try:
        with _quiet_protocol_warning(), torch.serialization.safe_globals(_allowed_globals()):
            return torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:
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
    except Exception:
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
    except Exception:
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
    except Exception:
        return None
    return head[1] if len(head) == 2 and head[0] == 0x80 else None


def _pickle_globals(path: Path, kind: str) -> list:
    """``module.name`` of every class or function the pickle(s) would import, read with
    :mod:`pickletools` (which executes nothing); best effort, for messages only."""
    import io
    import pickletools

    try:
        stream = io.BytesIO(_pickle_bytes(path, kind))
    except Exception:
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
        except Exception:
            break
    return list(dict.fromkeys(found))


def _global_from_message(text: str) -> str:
    for line in text.splitlines():
        if "GLOBAL" in line or "Unsupported global" in line:
            return line.strip()[:200]
    return "a class or function outside the weights-only allowlist"
