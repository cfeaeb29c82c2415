"""``train-encoder``: a small CNN trained on a dataset's sim frames, registered as a user
encoder.

:func:`train_encoder` reads the *sim* frames of a :class:`~s2r.frameset.FrameSet` (never the
real ones), trains :class:`~s2r.encoders.simcnn.SimCNN` to predict their state and/or actions
(:func:`~s2r.encoders.simcnn.train_simcnn`, augmentation at ``augment``), writes the weights
to the weights folder (``S2R_WEIGHTS_DIR`` or ``./weights``) as ``NAME.safetensors`` and adds
a ``simcnn`` entry to the encoder config file in effect (``$S2R_ENCODERS``, else
``./s2r_encoders.toml`` / ``.json``, created when there is none): from then on ``NAME`` is an
encoder id like any other, fingerprinted by its weights file.

Safe to run twice. Everything that can be checked is checked before the dataset is read or
anything trained (:func:`check_destination`: the name, the weights folder, the config file).
A run then holds ``NAME``'s lock (:func:`reserve`: an exclusive ``flock`` on
``.NAME.safetensors.lock`` in the weights folder; the system releases it when the process
dies, so a killed run leaves no stale lock), so a second run with the same ``--out`` is
refused at once. The weights are published without replacing anything
(:func:`~s2r.encoders.simcnn.save_simcnn` ``exclusive``), and the config is updated under its
own short lock (``.CONFIG.lock`` next to it), re-read, so runs with other names never lose
each other's entries. A run that fails deletes only the weights file it wrote itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

from s2r.errors import DataError, EncoderError
from s2r.inputs import quoted
from s2r.progress import ProgressCallback, report
from s2r.settings import current

__all__ = ["train_encoder", "training_targets", "register_simcnn_entry", "check_name",
           "check_options", "check_destination", "reserve", "Destination", "NAME_MAX_LENGTH",
           "MAX_EPOCHS", "MAX_SEED"]

#: The longest ``--out`` name: it names ``NAME.safetensors`` and appears in every table.
NAME_MAX_LENGTH = 64
#: The most ``--epochs`` (each epoch's loss is kept in the weights file's metadata).
MAX_EPOCHS = 10_000
#: The largest ``--seed`` (torch and numpy seeds).
MAX_SEED = 2**32 - 1
#: How long a run waits for another run's config update (they take milliseconds).
CONFIG_LOCK_WAIT = 60.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def training_targets(frameset) -> tuple[np.ndarray, np.ndarray, str]:
    """``(sim indices, targets (N, K), what)``: the sim frames' state and actions side by
    side (whichever the dataset has); DataError when it has neither."""
    sim = frameset.indices("sim")
    if sim.size < 2:
        raise DataError(f"{frameset.name}: train-encoder needs at least 2 sim frames, found "
                        f"{sim.size}")
    parts, what = [], []
    if frameset.state is not None and np.asarray(frameset.state).shape[-1] > 0:
        parts.append(np.asarray(frameset.state, dtype=np.float64)[sim])
        what.append("state")
    actions = np.asarray(frameset.actions, dtype=np.float64)
    if actions.ndim == 2 and actions.shape[1] > 0:
        parts.append(actions[sim])
        what.append("actions")
    if not parts:
        raise DataError(f"{frameset.name}: train-encoder needs actions or robot state to "
                        "predict, and this dataset's sim frames have neither")
    targets = np.concatenate(parts, axis=1)
    if not np.all(np.isfinite(targets)):
        raise DataError(f"{frameset.name}: the sim frames' {' and '.join(what)} hold "
                        "non-finite values")
    return sim, targets, " and ".join(what)


def _builtin_clash(name: str) -> Optional[str]:
    """Why ``name`` is a built-in's: its id in any case, its weights file's name in any case,
    or any version of a built-in control's file (``simcnn-dr0.v7``)."""
    from s2r.encoders import BUILTIN_SPECS
    from s2r.encoders.locate import WEIGHT_SUFFIXES
    from s2r.encoders.simcnn_specs import CONTROLS

    folded = name.casefold()
    for spec in BUILTIN_SPECS.values():
        if spec.id.casefold() == folded:
            return f"is the built-in encoder id {spec.id!r}" + (
                "" if spec.id == name else " in other letter case")
        file = spec.weights_file or ""
        stem = next((file[: -len(s)] for s in WEIGHT_SUFFIXES if file.endswith(s)), file)
        if stem and stem.casefold() == folded:
            return f"names the weights file of the built-in encoder {spec.id!r} ({file})"
    for cid in CONTROLS:
        if re.fullmatch(re.escape(cid.casefold()) + r"\.v\d+", folded):
            return (f"names a version of the weights file of the built-in control {cid!r} "
                    f"({cid}.vN.safetensors)")
    return None


def check_name(name) -> str:
    """``name`` if it may be a new encoder id and the name of ``NAME.safetensors`` in the
    weights folder, else EncoderError (one line, ``--out: ...``).

    Rules: at most :data:`NAME_MAX_LENGTH` characters, ASCII letters, digits and
    ``. _ + -`` only, starting with a letter or a digit (so no path separator, ``.``/``..``,
    hidden file, comma, wildcard, whitespace or control character); not a built-in id in any
    letter case, nor the name of a built-in's weights file (any version of a control's:
    ``simcnn-dr0.v2``).
    """
    from s2r.encoders.fields import id_problem

    text = str(name)
    problem = id_problem(text, max_length=NAME_MAX_LENGTH)
    if problem is None and any(c in text for c in "/\\"):
        problem = "is a file name in the weights folder: no path separators ('/', '\\\\')"
    if problem is None and text.startswith("."):
        problem = "may not start with '.' ('.', '..' and hidden files)"
    if problem is None and not _NAME.fullmatch(text):
        problem = ("may hold only ASCII letters, digits and . _ + - (starting with a letter "
                   "or a digit): it names the file NAME.safetensors")
    if problem is None:
        problem = _builtin_clash(text)
        if problem is not None:
            problem += "; built-in encoders and their files are s2r's: choose another name"
    if problem is not None:
        raise EncoderError(f"--out: {quoted(text)} {problem}")
    return text


def check_options(*, augment: float, epochs: int, max_frames: int, seed: int) -> None:
    """Raise EncoderError (one line naming the option) unless ``augment`` is in [0, 1],
    ``epochs`` in [1, :data:`MAX_EPOCHS`], ``max_frames`` >= 1 and ``seed`` in
    [0, :data:`MAX_SEED`]."""
    from s2r.encoders.simcnn import augmentation

    augmentation(augment)
    for label, value, high in (("--epochs", epochs, MAX_EPOCHS),
                               ("--max-frames", max_frames, None), ("--seed", seed, MAX_SEED)):
        low = 0 if label == "--seed" else 1
        if int(value) < low or (high is not None and int(value) > high):
            span = f"in [{low}, {high:,}]" if high is not None else f">= {low}"
            raise EncoderError(f"{label} must be an integer {span}, got {value}")


@dataclass(frozen=True)
class Destination:
    """Where ``train-encoder`` writes: the encoder id ``name``, its ``weights`` file (not
    there yet) and the ``config`` file that gets its entry (its real path)."""

    name: str
    weights: Path
    config: Path

    @property
    def lock(self) -> Path:
        return self.weights.with_name(f".{self.weights.name}.lock")


def _config_ids(config: Path) -> list:
    """The ids of ``config``'s entries, the whole file checked (no model built)."""
    from s2r.encoders.config import check_encoder_config

    if not config.exists():
        return []
    return [checked[0] for checked in check_encoder_config(config)]


def check_destination(name, config: Optional[Path] = None, *, settings=None) -> Destination:
    """Check everything ``train-encoder --out NAME`` will write, before anything is read or
    trained: the name (:func:`check_name`), the weights folder
    (:func:`~s2r.encoders.locate.writable_weights_dir`: a folder, or missing under one),
    ``NAME.safetensors`` not there yet (not even as a link), and the config file
    (:func:`~s2r.encoders.config.config_target`: a regular file that parses and does not
    hold ``NAME`` yet, or missing under a folder). Nothing is created. ``settings``: the
    weights folder and the config file in effect (default :func:`s2r.settings.current`)."""
    from s2r.encoders.config import config_target
    from s2r.encoders.locate import writable_weights_dir

    settings = settings if settings is not None else current()
    name = check_name(name)
    weights = writable_weights_dir(settings) / f"{name}.safetensors"
    try:
        there = os.path.lexists(weights)
    except OSError as exc:  # pragma: no cover - lexists returns False on errors
        raise EncoderError(f"--out: {weights} cannot be used ({exc.strerror})") from None
    if there:
        raise EncoderError(f"--out: {weights} already exists; choose another name or remove "
                           "the file")
    target = config_target(config, settings)
    taken = [i for i in _config_ids(target) if i.casefold() == name.casefold()]
    if taken:
        raise EncoderError(f"--out: encoder {taken[0]!r} is already in {target}; choose "
                           "another name or remove its entry")
    return Destination(name, weights, target)


@contextlib.contextmanager
def _file_lock(path: Path, *, wait: float, busy: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created, and deleted again on release).

    The holder deletes the file before unlocking, so a process that opened the old file
    finds, once it has the lock, that ``path`` is another file (or none) and opens it again.
    A dead holder's lock is released by the system. EncoderError ``busy`` when the lock is
    still held after ``wait`` seconds (0: refuse at once).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: filelock's lock, its file kept
        import filelock

        lock = filelock.FileLock(str(path))
        try:
            lock.acquire(timeout=wait)
        except filelock.Timeout:
            raise EncoderError(busy) from None
        try:
            yield
        finally:
            lock.release()
        return
    deadline = time.monotonic() + wait
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    while True:
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise EncoderError(f"cannot make the lock file {path} ({exc.strerror or exc})") \
                from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                raise EncoderError(busy) from None
            time.sleep(0.05)
            continue
        try:
            mine = os.stat(path, follow_symlinks=False)
            held = os.fstat(fd)
            same = (mine.st_ino, mine.st_dev) == (held.st_ino, held.st_dev)
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)


def _new_folders(folder: Path) -> list:
    """Make ``folder`` and its missing parents; the ones made, deepest first."""
    made, probe = [], folder
    while not probe.exists() and probe.parent != probe:
        made.append(probe)
        probe = probe.parent
    folder.mkdir(parents=True, exist_ok=True)
    return made


@contextlib.contextmanager
def reserve(name, config: Optional[Path] = None, *, settings=None) -> Iterator[Destination]:
    """Check :func:`check_destination` and hold ``NAME``'s lock while the block runs (read
    the dataset and train in it): a second run with the same name is refused at once, one
    line. The checks run again under the lock (a run that finished meanwhile took the name).
    On failure, the weights folders this made are removed again when empty."""
    settings = settings if settings is not None else current()
    dest = check_destination(name, config, settings=settings)
    made = _new_folders(dest.weights.parent)
    try:
        busy = (f"--out {dest.name}: another train-encoder run is writing {dest.weights} now "
                f"(it holds {dest.lock}); wait for it to finish or choose another name")
        with _file_lock(dest.lock, wait=0.0, busy=busy):
            yield check_destination(name, config, settings=settings)
    except BaseException:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def register_simcnn_entry(name: str, weights: Path, *, notes: str,
                          config: Optional[Path] = None) -> Path:
    """Add ``[[encoders]] id = name, simcnn = weights`` to the encoder config file
    (``config``, else :func:`s2r.encoders.config.config_target`), under the config's lock,
    re-read, written atomically (a replaced file keeps its mode); EncoderError when the id
    is taken there by then."""
    from s2r.atomic import atomic_path
    from s2r.encoders.config import CONFIG_MAX_BYTES, config_target
    from s2r.inputs import read_bounded

    path = config_target(config)
    lock = path.with_name(f".{path.name}.lock")
    busy = (f"encoder config {path}: another process holds {lock} for over "
            f"{CONFIG_LOCK_WAIT:g} s; {name!r} was not registered")
    entry = {"id": name, "simcnn": str(Path(weights).absolute()), "notes": notes}
    path.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(lock, wait=CONFIG_LOCK_WAIT, busy=busy):
        if name.casefold() in {i.casefold() for i in _config_ids(path)}:
            raise EncoderError(f"--out: encoder {name!r} is already in {path}; choose "
                               "another name or remove its entry")
        text = (read_bounded(path, "encoder config", max_bytes=CONFIG_MAX_BYTES,
                             error=EncoderError).decode("utf-8") if path.exists() else "")
        if path.suffix.lower() == ".json":
            data = json.loads(text) if text.strip() else {"encoders": []}
            data = {"encoders": data} if isinstance(data, list) else data
            data.setdefault("encoders", []).append(entry)
            new = json.dumps(data, indent=1) + "\n"
        else:
            lines = ["[[encoders]]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
            new = text + ("\n" if text and not text.endswith("\n") else "") + \
                ("\n" if text else "") + "\n".join(lines) + "\n"
        with atomic_path(path) as tmp:
            tmp.write_text(new, encoding="utf-8")
    return path


def train_encoder(frameset, name: str, *, augment: float = 0.5, seed: int = 0,
                  epochs: int = 10, max_frames: int = 6000, config: Optional[Path] = None,
                  progress: Optional[ProgressCallback] = None,
                  reserved: Optional[Destination] = None, settings=None) -> dict:
    """Train a ``simcnn`` encoder on ``frameset``'s sim frames and register it as ``name``.

    Parameters
    ----------
    frameset : FrameSet
        Its sim frames and their state and/or actions are used (the real frames never).
    name : str
        The new encoder id (:func:`check_name`; not in the config file yet).
    augment : float in [0, 1]
        Augmentation strength (:func:`s2r.encoders.simcnn.augmentation`).
    seed, epochs : int
        See :func:`check_options`.
    max_frames : int
        At most this many sim frames (a seeded random subset when there are more).
    config : Path, optional
        The encoder config file to add the entry to (default: the one in effect).
    reserved : Destination, optional
        Given by a caller that holds :func:`reserve` already (the CLI, which reserves before
        it reads the dataset); else this reserves ``name`` itself.
    settings : s2r.settings.Settings, optional
        The weights folder and the config file in effect (default
        :func:`s2r.settings.current`; an entry point).

    Returns
    -------
    dict
        ``id``, ``weights`` (path), ``config`` (path), ``frames``, ``targets`` (what was
        predicted), ``loss`` (per epoch).
    """
    check_options(augment=augment, epochs=epochs, max_frames=max_frames, seed=seed)
    if reserved is None:
        with reserve(name, config, settings=settings) as dest:
            return _train(frameset, dest, augment=augment, seed=seed, epochs=epochs,
                          max_frames=max_frames, progress=progress)
    return _train(frameset, reserved, augment=augment, seed=seed, epochs=epochs,
                  max_frames=max_frames, progress=progress)


def _train(frameset, dest: Destination, *, augment, seed, epochs, max_frames,
           progress) -> dict:
    from s2r.encoders.simcnn import save_simcnn, train_simcnn

    sim, targets, what = training_targets(frameset)
    if sim.size > int(max_frames):
        keep = np.sort(np.random.default_rng(seed).choice(sim.size, int(max_frames),
                                                          replace=False))
        sim, targets = sim[keep], targets[keep]
    report(progress, 0, 1, f"reading {sim.size} sim frames")
    frames = frameset.read_images(sim)
    state_dict, info = train_simcnn(frames, targets, augment=augment, seed=seed,
                                    epochs=epochs, progress=progress)
    info.update(dataset=frameset.name, targets_names=what)
    try:
        save_simcnn(dest.weights, state_dict, info, exclusive=True)
    except FileExistsError:
        raise EncoderError(f"--out {dest.name}: {dest.weights} appeared while this run "
                           "trained (another program wrote it); it was left as it is and "
                           "nothing was registered") from None
    written = os.stat(dest.weights)
    notes = (f"Small CNN trained by train-encoder on the sim frames of {frameset.name} to "
             f"predict {what} (augmentation {augment:g}, seed {seed}): a control, not a "
             f"pretrained encoder.")
    try:
        path = register_simcnn_entry(dest.name, dest.weights, notes=notes, config=dest.config)
    except BaseException:
        _remove_if_same(dest.weights, written)
        raise
    return {"id": dest.name, "weights": str(dest.weights), "config": str(path),
            "frames": int(sim.size), "targets": what, "loss": info["loss"]}


def _remove_if_same(path: Path, written: os.stat_result) -> None:
    """Delete ``path`` only if it is still the file this run wrote (same inode, size and
    times: an inode number alone may be reused by a file written after ours was deleted)."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    fields = ("st_ino", "st_dev", "st_size", "st_mtime_ns", "st_ctime_ns")
    if all(getattr(now, f) == getattr(written, f) for f in fields):
        path.unlink()
