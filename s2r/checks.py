"""One input check for every metric entry point (the ``check_array`` of s2r.metrics).

Every public metric calls :func:`check_embeddings` first, so a bad input fails at the boundary
with a :class:`~s2r.errors.MetricError` that names the argument, what was expected and what
arrived, instead of a numpy/scikit-learn traceback deep inside a solver.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from s2r.errors import DegenerateEmbeddingsError, MetricError

DOMAINS = ("sim", "real")

#: Spread (largest per-feature ``max - min`` over the frames), relative to the largest absolute
#: value, at or below which embeddings count as constant. Embeddings are float32 (eps 1.2e-7):
#: the same numbers pushed through a forward pass in other batch sizes, threads or runtimes
#: differ by a few units of round-off, so a constant encoder's rows can differ by a few 1e-7 of
#: their size; 1e-6 (about 8 units) holds that noise, and a real variation that small would
#: not survive the float32 centring of the PCA before any map or score (it leaves errors of
#: eps x the values' size).
CONSTANT_RTOL = 1e-6

_ROWS = 4096  # rows scanned at a time: no (N, D) temporary for 50,000 x 2,048 embeddings


class Checked(NamedTuple):
    """Validated metric inputs (``None`` where the caller passed ``None``)."""

    Z: np.ndarray                  # (N, D) float32 or float64, finite
    domain: Optional[np.ndarray]   # (N,) "<U4" in {"sim", "real"}
    actions: Optional[np.ndarray]  # (N, A) float64, finite
    episode: Optional[np.ndarray]  # (N,) int64, no id shared by both domains


def check_embeddings(Z, domain=None, actions=None, episode=None, *,
                      require_both_domains: bool = True, min_frames: int = 2) -> Checked:
    """Validate and normalise the inputs shared by all metrics.

    Parameters
    ----------
    Z : array-like of shape (N, D)
        Embeddings, one row per frame. Kept as float32/float64 (no copy when already so);
        integer input is converted to float64.
    domain : array-like of shape (N,), optional
        ``"sim"`` or ``"real"`` per frame.
    actions : array-like of shape (N, A) or (N,), optional
        Action labels; a 1-D array is one action dimension.
    episode : array-like of shape (N,), optional
        Integer episode id per frame; an id may not appear in both domains.
    require_both_domains : bool
        Raise unless both domains have frames (only checked when ``domain`` is given).
    min_frames : int
        Fewest frames accepted.

    Returns
    -------
    Checked
        The normalised arrays.

    Raises
    ------
    MetricError
        On any shape, value or consistency problem.
    """
    try:
        Z = np.asarray(Z)
    except Exception as exc:  # ragged lists etc.
        raise MetricError(f"embeddings could not be read as an array: {exc}") from None
    if Z.dtype.kind not in "fiub":
        raise MetricError(f"embeddings must be numeric, got dtype {Z.dtype}")
    if Z.ndim != 2:
        raise MetricError(f"embeddings must be 2-D (N frames, D features), got shape {Z.shape}")
    if Z.dtype.kind != "f" or Z.dtype.itemsize < 4:
        Z = Z.astype(np.float64)
    n, d = Z.shape
    if n < min_frames:
        raise MetricError(f"embeddings have {n} frames; at least {min_frames} are needed")
    if d < 1:
        raise MetricError("embeddings have 0 features (shape (N, 0))")
    check_embedding_values(Z, constant=False)

    dom = None
    if domain is not None:
        dom = _per_frame("domain", domain, n)
        dom = dom.astype(str).astype("<U4") if dom.dtype.kind in "USO" else dom
        if dom.dtype.kind not in "U":
            raise MetricError(f"domain values must be 'sim' or 'real', got dtype {dom.dtype}")
        bad = sorted(set(np.unique(dom).tolist()) - set(DOMAINS))
        if bad:
            raise MetricError(f"domain values must be 'sim' or 'real', got {bad[:5]}")
        if require_both_domains:
            for name in DOMAINS:
                if not (dom == name).any():
                    raise MetricError(
                        f"no {name!r} frames: the metrics compare sim and real frames, so both "
                        f"domains are needed (got {n} frames, all "
                        f"{'real' if name == 'sim' else 'sim'})")

    act = None if actions is None else check_frame_matrix("actions", actions, n, "A")

    ep = None
    if episode is not None:
        ep = _per_frame("episode", episode, n)
        if ep.dtype.kind == "f":
            if not np.isfinite(ep).all() or not np.all(ep == np.round(ep)):
                raise MetricError("episode ids must be integers")
        elif ep.dtype.kind not in "iub":
            raise MetricError(f"episode ids must be integers, got dtype {ep.dtype}")
        ep = ep.astype(np.int64)
        if dom is not None:
            shared = np.intersect1d(ep[dom == "sim"], ep[dom == "real"])
            if shared.size:
                raise MetricError(
                    f"episode ids must be unique across domains, but {shared.size} id(s) have "
                    f"both sim and real frames (e.g. {int(shared[0])}); number real episodes "
                    "after sim ones")
    return Checked(Z, dom, act, ep)


def check_embedding_values(Z, *, encoder: Optional[str] = None, frame_ids=None,
                           constant: bool = True):
    """Refuse embeddings that no score, map or saliency of them can use; return ``Z``.

    The one check of what an encoder gave, shared by the embedding pass, every command and
    the library's t-SNE, projection and mixing number, so each refuses the same embeddings
    with the same message. Two faults:

    - NaN or inf in any frame (a broken encoder, or half precision overflow);
    - constant: every frame has the same embedding, up to :data:`CONSTANT_RTOL` of the
      largest absolute value (an all-zero embedding is constant). Distances between frames
      are then all 0: t-SNE gives NaN coordinates, the nearest neighbours of the mixing
      number are ties, saliency maps are 0. Only all frames together count: an encoder that is
      constant on one domain's frames still places them against the other domain's.

    Parameters
    ----------
    Z : array-like of shape (N, D)
        Embeddings, one row per frame (a memory map is read in blocks of rows).
    encoder : str, optional
        Id of the encoder that gave them (named in the message).
    frame_ids : array-like of shape (N,), optional
        Frame number of each row (default ``0..N-1``), for the first bad frame.
    constant : bool
        Check for constant embeddings too (needs ``N >= 2``; one batch of a pass is no
        evidence, all frames of a set are).

    Returns
    -------
    ndarray
        ``Z`` itself.

    Raises
    ------
    DegenerateEmbeddingsError
        One line naming the fault (an :class:`~s2r.errors.EncoderError` and a
        :class:`MetricError`).
    """
    arr = np.asarray(Z)
    who = "embeddings" if encoder is None else f"embeddings of encoder {encoder!r}"
    low = high = None
    for start in range(0, arr.shape[0], _ROWS):
        block = np.asarray(arr[start:start + _ROWS])
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            row = start + int(np.flatnonzero(~finite)[0])
            frame = row if frame_ids is None else int(np.asarray(frame_ids)[row])
            raise DegenerateEmbeddingsError(
                f"{who} contain NaN or inf (first at frame {frame}): the encoder's output is "
                "broken (half precision overflow or broken weights?)")
        if constant and block.size:
            lo, hi = block.min(axis=0), block.max(axis=0)
            low = lo if low is None else np.minimum(low, lo)
            high = hi if high is None else np.maximum(high, hi)
    if constant and low is not None and arr.shape[0] >= 2:
        low, high = low.astype(np.float64), high.astype(np.float64)
        spread = float((high - low).max())
        scale = float(max(np.abs(low).max(), np.abs(high).max()))
        if spread <= CONSTANT_RTOL * scale:
            raise DegenerateEmbeddingsError(
                f"{who} are constant: every frame gets the same embedding (no feature varies "
                f"by more than {CONSTANT_RTOL:g} of the largest value), so there is nothing "
                "to compare between frames or domains; are the encoder's weights all zero, or "
                "are all the frames alike?")
    return Z


def check_frame_matrix(name: str, values, n: int, columns: str = "K", *,
                       min_columns: int = 1) -> np.ndarray:
    """A finite float64 ``(n, K)`` array of per-frame values (a 1-D array is one column).

    Parameters
    ----------
    name : str
        What the values are (``"actions"``, ``"proprio"``), for the messages.
    n : int
        Frames (rows of the embeddings).
    columns : str
        The letter the shape message uses for the column count.
    min_columns : int
        Fewest columns accepted.

    Raises
    ------
    MetricError
        Not an array of numbers, wrong number of rows or too few columns, NaN or inf.
    """
    try:
        arr = np.asarray(values)
    except Exception as exc:  # ragged lists etc.
        raise MetricError(f"{name} could not be read as an array: {exc}") from None
    if arr.dtype.kind not in "fiub":
        raise MetricError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n:
        raise MetricError(f"{name} must have shape ({n}, {columns}) to match the embeddings, "
                          f"got {arr.shape}")
    if arr.shape[1] < min_columns:
        raise MetricError(f"{name} have 0 dimensions (shape (N, 0))")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        rows = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        raise MetricError(f"{name} contain NaN or inf (first bad frame {rows[0]})")
    return arr


def check_features(Z, n_features: int) -> np.ndarray:
    """Validated float64 embeddings ``(N, n_features)`` for a probe fitted on ``n_features``
    inputs (at least one frame)."""
    Z = check_embeddings(Z, min_frames=1).Z
    if Z.shape[1] != n_features:
        raise MetricError(f"embeddings have {Z.shape[1]} features but the probe was fitted "
                          f"on {n_features}")
    return np.asarray(Z, dtype=np.float64)


def _per_frame(name: str, values, n: int) -> np.ndarray:
    """``values`` as a 1-D array of length ``n`` (one value per frame)."""
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise MetricError(f"{name} must have shape ({n},) to match the embeddings, "
                          f"got {arr.shape}")
    return arr


def check_choice(name: str, value, choices, *, error: type = MetricError) -> None:
    """Raise ``error`` (:class:`MetricError` by default) unless ``value`` is one of
    ``choices``."""
    if value not in choices:
        raise error(f"{name} must be one of {list(choices)}, got {value!r}")


def check_number(name: str, value, *, low=None, high=None, integer=False,
                  low_open=False, high_open=False, error: type = MetricError) -> None:
    """Raise ``error`` (:class:`MetricError` by default; a dataset option passes
    :class:`~s2r.errors.DataError`) unless ``value`` is a number in the given range.

    The message names ``name``, what was expected (a closed range as ``in [low, high]``) and
    what arrived."""
    ok_type = isinstance(value, (int, np.integer)) if integer else \
        isinstance(value, (int, float, np.integer, np.floating))
    if isinstance(value, (bool, np.bool_)) or not ok_type or not _finite(value):
        kind = "an integer" if integer else "a finite number"
        raise error(f"{name} must be {kind}, got {value!r}")
    closed = low is not None and high is not None and not (low_open or high_open)
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if closed and (too_low or too_high):
        raise error(f"{name} must be in [{low}, {high}], got {value!r}")
    if too_low:
        raise error(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if too_high:
        raise error(f"{name} must be {'<' if high_open else '<='} {high}, got {value!r}")


def _finite(value) -> bool:
    """Whether a number is finite (a Python int of any size is)."""
    return isinstance(value, int) or bool(np.isfinite(value))
