"""Running an encoder's embedding pass in ONNX Runtime on the CPU (opt-in: ``runtime="onnx"``).

What runs where
---------------
``torch`` (the default) runs every pass in torch. ``onnx`` and ``auto`` (the same: ONNX
Runtime wherever the model exports) run :meth:`~s2r.encoders.build.Encoder.embed` and the layer
taps (:class:`~s2r.encoders.taps.LayerEmbedder`, the taps as extra graph outputs) on the CPU in
float32 in ONNX Runtime (``CPUExecutionProvider``): the BatchNorm-folded copy of the model
(:mod:`s2r.encoders.fuse`) is exported with the TorchScript exporter
(``torch.onnx.export(..., dynamo=False)``, opset :data:`OPSET`, the batch axis dynamic).
CUDA (fp16), int8 and saliency (gradients) always run torch. A model that does not export, a
graph ONNX Runtime cannot load, or one whose output on the example batch differs from torch's
by more than :data:`CHECK_RTOL` of its largest value (or is NaN or inf where torch's is finite,
or the other way round: the same NaN and inf as torch's are the same output) is one
:class:`RuntimeFallbackWarning` line naming the encoder and why, then torch runs that pass:
never a traceback.

The graph cache
---------------
Graphs are exported once and kept in ``graph_dir`` (``<cache_dir>/graphs``): a record
``<key hash>.json`` (the key: weights fingerprint, architecture, input shape, outputs,
:data:`EXPORT_VERSION`, opset, torch and onnxruntime versions; the graph's file name, byte
count and sha256) and the graph ``<key hash>-<sha256 prefix>.onnx``, each written atomically
(:func:`s2r.atomic.atomic_path`; the graph first, so the record is the commit). A graph file is
data: s2r loads only bytes whose sha256 is the one it recorded when it wrote them, and hands
ONNX Runtime those bytes (never the path), so a graph without a record, an edited or
truncated one, or a record that does not match its key is refused with one warning line and
exported again. No custom operator library is ever registered.

A pass that falls back to torch leaves a record in the graph's place, ``<key hash>.json``
holding ``{"key": ..., "fallback": "<why>"}`` (a later successful export replaces it), so
:func:`recorded_fallback` can say, without exporting anything, that an encoder runs torch and
why. The export is tried again by every process that runs the encoder: the record informs, it
never decides.

Threads
-------
Both runtimes run a pass on the encoder's :attr:`~s2r.encoders.build.Encoder.threads`: torch
through :func:`torch_threads` around the pass, ONNX Runtime as the session's intra-op threads.
:func:`s2r.encoders.build_encoder` takes them from the settings (``S2R_THREADS``,
:func:`s2r.settings.embedding_threads`: by default every core this process may use).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import io
import itertools
import json
import os
import warnings
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from s2r.atomic import atomic_path

__all__ = ["RUNTIMES", "EXPORT_VERSION", "OPSET", "CHECK_RTOL", "RuntimeFallbackWarning",
           "check_runtime", "runtime_tag", "has_graph", "graph_key", "OnnxModel",
           "export_bytes", "onnx_model", "recorded_fallback", "torch_threads"]

#: What ``runtime=`` / ``S2R_RUNTIME`` / ``--runtime`` accept.
RUNTIMES = ("torch", "onnx", "auto")
#: Bump when how a graph is made changes (wrappers, exporter options): part of every graph key
#: and of the embeddings key of a non-torch runtime.
EXPORT_VERSION = 1
#: ONNX opset of the exported graphs.
OPSET = 17
#: Largest difference of the graph's output from torch's on the example batch, relative to the
#: largest absolute value, for the graph to be used (measured: ~1e-6).
CHECK_RTOL = 1e-5
#: Largest graph-cache record read back as a fallback record (bytes), and most records looked
#: at when asking whether an encoder fell back (:func:`recorded_fallback`).
MAX_RECORD_BYTES = 64 << 10
MAX_RECORDS_SCANNED = 2000


class RuntimeFallbackWarning(UserWarning):
    """An encoder asked to run in ONNX Runtime runs torch (the message says which and why), or
    a cached graph file was refused and exported again."""


def check_runtime(runtime: Optional[str]) -> str:
    """``runtime`` checked (``None`` -> ``"torch"``); ValueError naming the choices."""
    value = "torch" if runtime is None else str(runtime).strip().lower()
    if value not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}; got {runtime!r}")
    return value


def runtime_tag(runtime: str) -> Optional[str]:
    """What an embeddings key records of ``runtime``: ``None`` for torch (every key made before
    runtimes existed stays the same), else ``"onnxruntime/v<EXPORT_VERSION>"``."""
    return None if check_runtime(runtime) == "torch" else f"onnxruntime/v{EXPORT_VERSION}"


def has_graph(spec) -> bool:
    """Whether ``spec``'s embedding pass is a model worth a graph: every image model but raw
    pixels (a resize and a flatten, nothing for ONNX Runtime to speed up) and the ``state``
    reference (no model)."""
    return bool(getattr(spec, "has_image_model", True)) and spec.family != "pixels"


def _versions() -> dict:
    import onnxruntime

    return {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__}


def graph_key(spec, weights_fingerprint: str, input_shape, outputs: str = "embed") -> dict:
    """Everything that shapes an exported graph (see the module docstring)."""
    return {"kind": "onnx-graph", "weights": str(weights_fingerprint),
            "architecture": _architecture(spec),
            "input": [int(v) for v in input_shape[1:]], "outputs": str(outputs),
            "export": EXPORT_VERSION, "opset": OPSET, **_versions()}


def _architecture(spec) -> list:
    """The fields of ``spec`` that shape its graph, as JSON values."""
    ck = getattr(spec, "checkpoint", None)
    arch = [spec.id, spec.backend, spec.identifier, spec.tag,
            [list(kv) if isinstance(kv, tuple) else kv for kv in spec.model_kwargs],
            None if ck is None else ck.arch, list(spec.input_size or ()), spec.dim, spec.family]
    return json.loads(json.dumps(arch, default=str))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


class _QuietExporterLog:
    """Keeps the TorchScript exporter from printing the whole traced graph when an export
    fails: its ``setup_onnx_logging`` turns the log on whatever ``verbose`` says (torch 2.14:
    it tests the function ``_jit_is_onnx_log_enabled`` instead of calling it), so it is made
    a no-op for the export (restored after)."""

    _NAME = "torch.onnx._internal.torchscript_exporter.utils"

    def __enter__(self):
        import contextlib
        import importlib

        try:
            self.module = importlib.import_module(self._NAME)
            self.saved = self.module.setup_onnx_logging
        except (ImportError, AttributeError):
            self.module = None
            return self
        self.module.setup_onnx_logging = lambda verbose: contextlib.nullcontext()
        return self

    def __exit__(self, *exc):
        if self.module is not None:
            self.module.setup_onnx_logging = self.saved
        return False


def export_bytes(module, example: torch.Tensor, n_outputs: int = 1) -> bytes:
    """``module`` (eval mode, CPU, float32) exported to ONNX bytes, input ``x``, outputs
    ``y0``..., the batch axis dynamic. Raises whatever the exporter raises."""
    names = [f"y{i}" for i in range(n_outputs)]
    buffer = io.BytesIO()
    kwargs = ({"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters
              else {})
    fastpath = torch.backends.mha.get_fastpath_enabled()
    quiet = _QuietExporterLog()
    with warnings.catch_warnings(), quiet:
        warnings.simplefilter("ignore")   # the exporter's notes about its own future
        # MultiheadAttention's fused inference kernel has no ONNX form: trace the plain ops
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            torch.onnx.export(module, (example,), buffer, opset_version=OPSET,
                              input_names=["x"], output_names=names, do_constant_folding=True,
                              verbose=False,
                              dynamic_axes={n: {0: "batch"} for n in ["x", *names]},
                              **kwargs)
        finally:
            torch.backends.mha.set_fastpath_enabled(fastpath)
    return buffer.getvalue()


@contextlib.contextmanager
def torch_threads(threads: Optional[int]):
    """torch's intra-op threads set to ``threads`` for the ``with`` block, then put back (the
    pass's threads are the encoder's, not a process-wide change); None leaves them as they
    are."""
    before = torch.get_num_threads()
    if threads is None or int(threads) == before:
        yield
        return
    torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


class OnnxModel:
    """A graph in an ONNX Runtime CPU session, called like the module it was exported from:
    ``model(x)`` with a normalised float32 ``(B, 3, h, w)`` tensor returns a tensor (or a tuple
    of them for several outputs).

    Parameters
    ----------
    data : bytes
        The ONNX graph.
    threads : int, optional
        Intra-op threads (default ``torch.get_num_threads()``); inter-op 1. Idle threads wait
        passively (no spinning), as s2r's OpenMP policy asks (:mod:`s2r.settings`).
    """

    def __init__(self, data: bytes, *, threads: Optional[int] = None):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = int(threads or torch.get_num_threads())
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.threads = options.intra_op_num_threads
        self.session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        self.n_outputs = len(self.session.get_outputs())

    def __call__(self, x):
        arr = np.ascontiguousarray(x.detach().to("cpu", torch.float32).numpy())
        outs = [torch.from_numpy(o) for o in self.session.run(None, {"x": arr})]
        return outs[0] if self.n_outputs == 1 else tuple(outs)

    def __repr__(self) -> str:
        return f"OnnxModel(outputs={self.n_outputs}, threads={self.threads})"


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _mismatch(want, got) -> Optional[str]:
    """Why ``got`` (the graph's outputs) does not stand for ``want`` (torch's), or None."""
    want, got = _as_tuple(want), _as_tuple(got)
    if len(want) != len(got):
        return f"the graph has {len(got)} outputs, torch {len(want)}"
    for w, g in zip(want, got):
        w = w.detach().float().flatten(1) if w.ndim > 1 else w.detach().float()
        g = g.float().reshape(w.shape) if g.numel() == w.numel() else g
        if g.shape != w.shape:
            return f"output shape {tuple(g.shape)} where torch gives {tuple(w.shape)}"
        # NaN for NaN and inf for inf is the same output (a broken model is refused later,
        # by the check every embedding passes, in either runtime)
        if not (torch.equal(w.isnan(), g.isnan())
                and torch.equal(torch.where(w.isinf(), w, 0.0), torch.where(g.isinf(), g, 0.0))):
            return "its output is NaN or inf where torch's is not (or the other way round)"
        finite = w.isfinite()
        if not bool(finite.any()):
            continue
        w, g = w[finite], g[finite]
        scale = float(w.abs().max()) or 1.0
        diff = float((w - g).abs().max())
        if not diff <= CHECK_RTOL * scale:
            return f"its output differs from torch's by {diff / scale:.1e} of the largest value"
    return None


def _read_cached(graph_dir: Path, name: str, key: dict) -> tuple[Optional[bytes], Optional[str]]:
    """``(bytes, None)`` of the graph s2r wrote for ``key``; ``(None, why refused)`` for a file
    that is not (``(None, None)``: nothing there)."""
    record_path = graph_dir / f"{name}.json"
    stray = sorted(graph_dir.glob(f"{name}*.onnx"))
    if not record_path.exists():
        return None, (f"{stray[0].name} has no record of s2r writing it" if stray else None)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if isinstance(record, dict) and "fallback" in record and "file" not in record:
            return None, None        # a pass fell back to torch here: nothing to load
        file = graph_dir / str(record["file"])
        if record.get("key") != key or file.parent != graph_dir or not file.name.startswith(name):
            return None, f"{record_path.name} is not the record of this graph"
        data = file.read_bytes()
    except (OSError, ValueError, KeyError, TypeError) as error:
        return None, f"{record_path.name}: {_first_line(error)}"
    if len(data) != record.get("bytes") or _digest(data) != record.get("sha256"):
        return None, f"{file.name} is not the file s2r wrote (its sha256 differs)"
    return data, None


def _write_cached(graph_dir: Path, name: str, key: dict, data: bytes) -> None:
    digest = _digest(data)
    file = graph_dir / f"{name}-{digest[:16]}.onnx"
    with atomic_path(file) as tmp:
        tmp.write_bytes(data)
    record = {"key": key, "file": file.name, "bytes": len(data), "sha256": digest}
    with atomic_path(graph_dir / f"{name}.json") as tmp:
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    for old in graph_dir.glob(f"{name}-*.onnx"):   # earlier (refused) graphs of this key
        if old.name != file.name and old.is_file() and not old.is_symlink():
            old.unlink(missing_ok=True)


def _write_fallback(graph_dir: Path, name: str, key: dict, why: str) -> None:
    """Record that the pass of ``key`` runs torch and why (:func:`recorded_fallback`)."""
    with atomic_path(graph_dir / f"{name}.json") as tmp:
        tmp.write_text(json.dumps({"key": key, "fallback": why}, indent=1, sort_keys=True),
                       encoding="utf-8")


def _printable(text: str, most: int = 300) -> str:
    return "".join(c if c.isprintable() else " " for c in text[:most]).strip()


def _fallback_of(path: Path) -> Optional[tuple]:
    """``(key, why)`` of the fallback record at ``path``; None for anything else (another
    record, a file over :data:`MAX_RECORD_BYTES`, not JSON, not that shape, unreadable)."""
    from s2r.inputs import read_bounded

    try:
        record = json.loads(read_bounded(path, "graph record", max_bytes=MAX_RECORD_BYTES,
                                         error=ValueError).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not (isinstance(record, dict) and isinstance(record.get("key"), dict)
            and isinstance(record.get("fallback"), str) and "file" not in record):
        return None
    return record["key"], _printable(record["fallback"])


@functools.lru_cache(maxsize=8)
def _fallbacks(folder: Path, state: tuple) -> tuple:
    """Every fallback record among ``state``'s files of ``folder`` as ``(key, why)``, in name
    order, parsed once per ``state`` (each record's name, inode, size and mtime: a record
    written or replaced is renamed in, a new inode), so listing many encoders parses the
    folder's records once."""
    found = (_fallback_of(folder / name) for name, *_ in state)
    return tuple(f for f in found if f is not None)


def _record_state(folder: Path) -> tuple:
    """What identifies the ``.json`` records of ``folder`` now (at most
    :data:`MAX_RECORDS_SCANNED` entries looked at), in name order."""
    try:
        entries = [e for e in itertools.islice(os.scandir(folder), MAX_RECORDS_SCANNED)
                   if e.name.endswith(".json")]
        stats = [(e.name, e.stat(follow_symlinks=False)) for e in entries]
    except OSError:
        return ()
    return tuple(sorted((name, st.st_ino, st.st_size, st.st_mtime_ns) for name, st in stats))


def recorded_fallback(graph_dir, spec, weights_fingerprint: str) -> Optional[str]:
    """Why the embedding pass of ``spec`` (with these weights, this torch and onnxruntime)
    fell back to torch when it was last run with ONNX Runtime, from the graph cache's
    fallback records; None when none says so.

    Nothing is exported or built. A record is data: read bounded, parsed as JSON only,
    and ignored unless it has the shape s2r writes and its key matches (every field of
    :func:`graph_key` but the input size). At most :data:`MAX_RECORDS_SCANNED` records are
    looked at.
    """
    folder = Path(graph_dir)
    arch, want = _architecture(spec), None
    for key, why in _fallbacks(folder, _record_state(folder)):
        if key.get("architecture") != arch:
            continue
        if want is None:           # only now: the versions import onnxruntime
            want = graph_key(spec, weights_fingerprint, (1, 3, 1, 1))
        if all(key.get(k) == v for k, v in want.items() if k not in ("input", "outputs")):
            return why
    return None


def onnx_model(module, example: torch.Tensor, *, name: str, key: dict,
               graph_dir=None, threads: Optional[int] = None) -> Optional[OnnxModel]:
    """``module`` as an :class:`OnnxModel`, from the graph cache or exported now; ``None``
    (after one :class:`RuntimeFallbackWarning` line naming ``name`` and why) when it cannot
    run in ONNX Runtime.

    Parameters
    ----------
    module : torch.nn.Module
        Eval mode, CPU, float32; returns a tensor or a tuple of tensors.
    example : Tensor (B, 3, h, w)
        A normalised batch: traced by the exporter, and the graph's output on it is checked
        against ``module``'s (:data:`CHECK_RTOL`).
    key : dict
        :func:`graph_key`.
    graph_dir : path, optional
        The graph cache folder (None: nothing is kept on disk).
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        warnings.warn(f"{name}: runs in torch: onnxruntime is not installed "
                      "(pip install onnxruntime)", RuntimeFallbackWarning, stacklevel=3)
        return None
    example = example.detach().float().contiguous()
    with torch.inference_mode():
        want = module(example)
    n_out = len(_as_tuple(want))
    folder = None if graph_dir is None else Path(graph_dir)
    stem = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    data = None
    if folder is not None:
        data, refused = _read_cached(folder, stem, key)
        if refused:
            warnings.warn(f"{name}: graph cache: refused {refused}; exporting it again",
                          RuntimeFallbackWarning, stacklevel=3)
    fresh = data is None
    try:
        if fresh:
            with torch.no_grad():
                data = export_bytes(module, example, n_out)
        model = OnnxModel(data, threads=threads)
        with torch.inference_mode():
            why = _mismatch(want, model(example))
    except Exception as error:  # noqa: BLE001 - any exporter/runtime failure means torch runs
        why = f"{'export' if fresh else 'loading the cached graph'} failed ({_first_line(error)})"
    if why is not None:
        warnings.warn(f"{name}: runs in torch, not ONNX Runtime: {why}",
                      RuntimeFallbackWarning, stacklevel=3)
        if folder is not None:
            try:
                _write_fallback(folder, stem, key, why)
            except OSError:
                pass                 # the record only informs; the warning said it all
        return None
    if fresh and folder is not None:
        try:
            _write_cached(folder, stem, key, data)
        except OSError as error:
            warnings.warn(f"{name}: graph cache: not written ({_first_line(error)}); the "
                          "graph runs from memory", RuntimeFallbackWarning, stacklevel=3)
    return model
