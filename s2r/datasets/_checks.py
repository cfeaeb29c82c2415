"""Validation helpers shared by the dataset loaders.

Every helper raises :class:`s2r.errors.DataError` with a message that names ``where`` (a file,
optionally with a key: ``"sim.zarr[action/pos]"``), what was expected and what arrived, so a
loader can check an array in one line and the user reads one clear sentence.
"""

from __future__ import annotations

import difflib
import warnings
from pathlib import Path
from typing import Iterable, Mapping, Optional

import numpy as np

from s2r.errors import DataError

_MAX_LISTED = 12


#: The largest episode, step or frame index s2r takes from a dataset (a 1e19 step would
#: overflow int64 and send loops over steps far past any real episode).
MAX_INDEX = 2**31 - 1


#: The columns of s2r's own tables; no action may be named like one of them.
RESERVED_COLUMNS = ("domain", "file", "episode", "step")


def check_action_names(names: list, where: str, reserved_prefix: str = "state.") -> None:
    """Refuse repeated action names and names that collide with s2r's own columns
    (:data:`RESERVED_COLUMNS`, ``state.*``): they would collide in every table s2r writes.

    Raises
    ------
    DataError
        Naming ``where`` (the file and field) and the first offending name.
    """
    clash = [n for n in names if n in RESERVED_COLUMNS or n.startswith(reserved_prefix)]
    repeated = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    if clash or repeated:
        why = (f"{clash[0]!r} is a reserved column ({', '.join(RESERVED_COLUMNS)}, "
               f"{reserved_prefix}*)" if clash else f"{repeated[0]!r} is listed twice")
        raise DataError(f"{where}: {why}; each action needs its own column")


class DataWarning(UserWarning):
    """A dataset loads but something in it looks wrong (e.g. an action key that holds
    rewards); the CLI prints each as one ``warning: ...`` line."""


def place(domain: str, path, inner: str = "") -> str:
    """How messages name a domain's file (and a key inside it): ``"real (data/real/success.zarr)"``,
    ``"sim (sim.zarr[action/pos])"``. Upstream datasets often give every domain's file the same
    name (``success.zarr``), so the domain always comes first and the path is the one given."""
    return f"{domain} ({path}{inner})"


def existing_path(path, what: str = "dataset path") -> Path:
    """Return ``path`` as a :class:`~pathlib.Path`, or raise if nothing is there.

    Parameters
    ----------
    path : str or os.PathLike
        Where the data should be.
    what : str
        How to call it in the message (``"sim zarr store"``, ``"dataset folder"``).
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise DataError(f"{what} {str(p)!r} does not exist")
    if not (p.is_file() or p.is_dir()):  # a FIFO or a device: reading it blocks or never ends
        raise DataError(f"{what} {str(p)!r} is not a regular file or folder (a FIFO or a "
                        "device?)")
    return p


def missing_key(key: str, available: Iterable[str], where: str, what: str = "key") -> DataError:
    """A :class:`DataError` for a key that is not there, listing the ones that are.

    Close matches come first (``did you mean ...``), then up to 12 available keys.
    """
    avail = sorted(str(a) for a in available)
    close = difflib.get_close_matches(str(key), avail, n=3, cutoff=0.5)
    shown = ", ".join(avail[:_MAX_LISTED]) + (" ..." if len(avail) > _MAX_LISTED else "")
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return DataError(f"{where}: no {what} {key!r}{hint} (available: {shown or 'none'})")


def check_frames_array(shape: tuple, dtype, where: str) -> None:
    """Require an image array of shape ``(N, H, W, 3)`` and dtype ``uint8`` (metadata only)."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != 4 or shape[3] != 3 or np.dtype(dtype) != np.uint8:
        raise DataError(
            f"{where}: images must be uint8 of shape (N, H, W, 3), got {np.dtype(dtype)} "
            f"of shape {shape}")


def as_2d_float(values, where: str, label: str = "actions") -> np.ndarray:
    """``values`` as ``float32 (N, A)``; a 1-D ``(N,)`` array becomes ``(N, 1)``."""
    arr = np.asarray(values)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(f"{where}: {label} must be 2-D (N, {label[0].upper()}), got shape "
                        f"{arr.shape}")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"{where}: {label} must be numeric, got dtype {arr.dtype}")
    return arr.astype(np.float32)


def check_finite(values: np.ndarray, where: str, label: str = "actions",
                 episode: Optional[np.ndarray] = None, frame_names: Optional[list] = None) -> None:
    """Raise when ``values (N, A)`` holds NaN or inf, naming the first bad frame and episode.

    Parameters
    ----------
    values : ndarray of shape (N, A)
    where : str
        File (and key) the values came from.
    episode : ndarray of shape (N,), optional
        Episode id per row, quoted in the message.
    frame_names : list of str, optional
        A name per row (e.g. the frame file), quoted in the message.
    """
    bad_rows = np.flatnonzero(~np.isfinite(values).all(axis=1))
    if bad_rows.size == 0:
        return
    i = int(bad_rows[0])
    col = int(np.flatnonzero(~np.isfinite(values[i]))[0])
    place = f"frame {i}"
    if frame_names is not None:
        place += f" ({frame_names[i]})"
    if episode is not None:
        place += f", episode {int(episode[i])}"
    raise DataError(
        f"{where}: {label} contain NaN or inf in {bad_rows.size} frame(s); first at {place}, "
        f"column {col} = {values[i, col]}; expected finite numbers")


def check_lengths(lengths: Mapping[str, int], where: str) -> int:
    """Require every array named in ``lengths`` to have the same number of frames; return it."""
    values = {int(v) for v in lengths.values()}
    if len(values) != 1:
        desc = ", ".join(f"{k} has {int(v)}" for k, v in lengths.items())
        raise DataError(f"{where}: lengths disagree ({desc}); every array needs one row per frame")
    return values.pop()


def check_nonempty(n: int, domain: str, where: str) -> None:
    """Require at least one frame in a domain."""
    if n == 0:
        raise DataError(
            f"{where}: the {domain} domain has no frames; s2r compares sim and real frames, "
            "so both are needed")


def episodes_from_ends(ends, n: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Episode id and step per frame from cumulative exclusive episode ends.

    Parameters
    ----------
    ends : array-like of shape (E,), integer
        ``ends[e]`` is one past the last frame of episode ``e`` (FurnitureBench
        ``episode_ends``); strictly increasing, first > 0, last == ``n``.
    n : int
        Number of frames.
    where : str
        File and key, for the message.

    Returns
    -------
    episode : ndarray of shape (n,), int64
        ``0 .. E-1``.
    step : ndarray of shape (n,), int64
        Index of each frame inside its episode.
    """
    ends = np.asarray(ends)
    if ends.ndim != 1 or ends.size == 0 or not np.issubdtype(ends.dtype, np.integer):
        raise DataError(
            f"{where}: episode_ends must be a non-empty 1-D integer array, got "
            f"{ends.dtype} of shape {ends.shape}")
    ends = ends.astype(np.int64)
    starts = np.concatenate([[0], ends[:-1]])
    bad = np.flatnonzero(ends <= starts)
    if bad.size:
        e = int(bad[0])
        raise DataError(
            f"{where}: episode_ends must be strictly increasing and positive; entry {e} is "
            f"{int(ends[e])} after {int(starts[e])}")
    if int(ends[-1]) != n:
        raise DataError(
            f"{where}: episode_ends must end at the number of frames {n}, but the last entry "
            f"is {int(ends[-1])}")
    lengths = ends - starts
    episode = np.repeat(np.arange(ends.size, dtype=np.int64), lengths)
    step = np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)
    return episode, step


def steps_within_episodes(episode: np.ndarray) -> np.ndarray:
    """Step index of each row inside its episode, in row order (rows of an episode may interleave).

    Parameters
    ----------
    episode : ndarray of shape (N,)

    Returns
    -------
    ndarray of shape (N,), int64
    """
    episode = np.asarray(episode)
    order = np.argsort(episode, kind="stable")
    sorted_ep = episode[order]
    first = np.flatnonzero(np.r_[True, sorted_ep[1:] != sorted_ep[:-1]])
    run_start = np.repeat(first, np.diff(np.r_[first, sorted_ep.size]))
    step = np.empty(episode.size, dtype=np.int64)
    step[order] = np.arange(episode.size) - run_start
    return step


def check_same_frame_size(shapes: Mapping[str, tuple], what: str = "frames") -> None:
    """Require the same ``(H, W, 3)`` in every domain; ``shapes`` maps a file to its frame shape."""
    distinct = {tuple(s) for s in shapes.values()}
    if len(distinct) > 1:
        desc = ", ".join(f"{k}: {tuple(s)}" for k, s in shapes.items())
        raise DataError(f"{what} differ in size between domains ({desc}); every domain must use "
                        "the same (H, W, 3)")


def check_same_state_width(state_key: str, states: Mapping[str, Optional[np.ndarray]]) -> None:
    """Require one pairing-state width in every domain that has a state (a join never drops
    the state silently).

    Parameters
    ----------
    state_key : str
        The state's key(s) as the user names them (``"observation.state"``,
        ``"robot0_eef_pos,robot0_eef_quat"``).
    states : mapping of str to ndarray of shape (N, S) or None
        Each domain's label (:func:`place`) and its state (None: that domain has none).

    Raises
    ------
    DataError
        Naming both widths, both places and ``--state-key``.
    """
    widths = {label: int(s.shape[1]) for label, s in states.items() if s is not None}
    if len(set(widths.values())) > 1:
        (a, wa), *rest = widths.items()
        b, wb = next((k, w) for k, w in rest if w != wa)
        raise DataError(f"state {state_key!r} is {wa}-D in {a} but {wb}-D in {b}; pairing "
                        "needs the same state in both: give --state-key (library: state_key=) "
                        "naming state of one width in both, or --state-key '' for none")


def signal_like(values: np.ndarray, episode: Optional[np.ndarray] = None) -> Optional[str]:
    """Why a 1-D label column looks like a reward, done or time signal rather than actions.

    Parameters
    ----------
    values : ndarray of shape (N, A)
    episode : ndarray of shape (N,), optional
        Episode per row: monotone is judged within each episode.

    Returns
    -------
    str or None
        ``"only 0 and 1"`` (binary), ``"never decreasing"`` / ``"never increasing"``
        (monotone within every episode, not constant), or None (looks like actions, or more
        than one column).
    """
    values = np.asarray(values)
    if values.ndim != 2 or values.shape[1] != 1 or values.shape[0] < 2:
        return None
    v = values[:, 0].astype(np.float64)
    if np.isin(v, (0.0, 1.0)).all():
        return "only 0 and 1"
    if np.ptp(v) == 0:
        return None
    d = np.diff(v)
    if episode is not None:
        d = d[np.asarray(episode)[1:] == np.asarray(episode)[:-1]]
    if d.size and (d >= 0).all():
        return "never decreasing"
    if d.size and (d <= 0).all():
        return "never increasing"
    return None


def warn_if_signal_like(action_key: str, domains: Mapping[str, tuple]) -> Optional[str]:
    """Warn (:class:`DataWarning`, once for all domains) when the action key holds a 1-D
    signal that looks like a reward or done flag: ``--action-key rewards`` loads, but scores
    against rewards say nothing about how well an encoder predicts actions.

    Parameters
    ----------
    action_key : str
    domains : mapping of str to (ndarray (N, A), ndarray (N,) or None)
        For each domain's file (:func:`place`), its actions and episode ids.

    Returns
    -------
    str or None
        The warning's text, when one was issued.
    """
    reasons = {where: signal_like(values, episode) for where, (values, episode) in domains.items()}
    if not reasons or not all(reasons.values()):
        return None
    desc = "; ".join(f"{where}: {why}" for where, why in reasons.items())
    message = (f"action key {action_key!r} is 1-D and looks like a reward or done signal, not "
               f"robot actions ({desc}); pick the actions with --action-key")
    warnings.warn(message, DataWarning, stacklevel=3)
    return message
