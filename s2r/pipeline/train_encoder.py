"""``train-encoder``: a small CNN trained on a dataset's sim frames, registered as a user
encoder.

:func:`train_encoder` reads the *sim* frames of a :class:`~s2r.frameset.FrameSet` (never the
real ones), trains :class:`~s2r.encoders.simcnn.SimCNN` to predict their state and/or actions
(:func:`~s2r.encoders.simcnn.train_simcnn`, augmentation at ``augment``), writes the weights
to the weights folder (``S2R_WEIGHTS_DIR`` or ``./weights``) as ``NAME.safetensors`` and adds
a ``simcnn`` entry to the encoder config file in effect (``$S2R_ENCODERS``, else
``./s2r_encoders.toml`` / ``.json``, created when there is none): from then on ``NAME`` is an
encoder id like any other, fingerprinted by its weights file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

from s2r.errors import DataError, EncoderError
from s2r.progress import ProgressCallback, report

__all__ = ["train_encoder", "training_targets", "register_simcnn_entry"]


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


def _check_name(name: str) -> str:
    from s2r.encoders import BUILTIN_SPECS

    name = str(name).strip()
    if not name or any(c in name for c in ':/\\"') or name.endswith("@random"):
        raise EncoderError(f"--out: expected an encoder id without ':', '/', '\\\\' or quotes "
                           f"(and not ending in @random), got {name!r}")
    if name in BUILTIN_SPECS:
        raise EncoderError(f"--out: {name!r} is a built-in encoder id; choose another name")
    return name


def register_simcnn_entry(name: str, weights: Path, *, notes: str,
                          config: Optional[Path] = None) -> Path:
    """Add ``[[encoders]] id = name, simcnn = weights`` to the encoder config file in effect
    (``config``, else :func:`s2r.encoders.config.config_path`, else ``./s2r_encoders.toml``),
    written atomically; EncoderError when the id is taken there."""
    from s2r.encoders.config import config_path, load_encoder_config

    path = Path(config) if config is not None else (config_path() or Path("s2r_encoders.toml"))
    entry = {"id": name, "simcnn": str(Path(weights).absolute()), "notes": notes}
    if path.is_file():
        taken = [spec.id for spec in load_encoder_config(path)]
        if name in taken:
            raise EncoderError(f"--out: encoder {name!r} is already in {path}; choose another "
                               "name or remove its entry")
        text = path.read_text(encoding="utf-8")
    else:
        text = ""
    if path.suffix.lower() == ".json":
        data = json.loads(text) if text.strip() else {"encoders": []}
        data = {"encoders": data} if isinstance(data, list) else data
        data.setdefault("encoders", []).append(entry)
        new = json.dumps(data, indent=1) + "\n"
    else:
        lines = ["[[encoders]]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
        new = text + ("\n" if text and not text.endswith("\n") else "") + \
            ("\n" if text else "") + "\n".join(lines) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)
    return path


def train_encoder(frameset, name: str, *, augment: float = 0.5, seed: int = 0,
                  epochs: int = 10, max_frames: int = 6000, config: Optional[Path] = None,
                  progress: Optional[ProgressCallback] = None) -> dict:
    """Train a ``simcnn`` encoder on ``frameset``'s sim frames and register it as ``name``.

    Parameters
    ----------
    frameset : FrameSet
        Its sim frames and their state and/or actions are used (the real frames never).
    name : str
        The new encoder id (not a built-in one, not in the config file yet).
    augment : float in [0, 1]
        Augmentation strength (:func:`s2r.encoders.simcnn.augmentation`).
    seed, epochs : int
    max_frames : int
        At most this many sim frames (a seeded random subset when there are more).
    config : Path, optional
        The encoder config file to add the entry to (default: the one in effect).

    Returns
    -------
    dict
        ``id``, ``weights`` (path), ``config`` (path), ``frames``, ``targets`` (what was
        predicted), ``loss`` (per epoch).
    """
    from s2r.encoders.locate import weights_dir
    from s2r.encoders.simcnn import augmentation, save_simcnn, train_simcnn

    name = _check_name(name)
    augmentation(augment)                  # a bad strength fails before any work
    for label, value in (("--epochs", epochs), ("--max-frames", max_frames)):
        if int(value) < 1:
            raise EncoderError(f"{label} must be a positive integer, got {value}")
    weights = weights_dir() / f"{name}.safetensors"
    if weights.exists():
        raise EncoderError(f"--out: {weights} already exists; choose another name or remove "
                           "the file")
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
    save_simcnn(weights, state_dict, info)
    notes = (f"Small CNN trained by train-encoder on the sim frames of {frameset.name} to "
             f"predict {what} (augmentation {augment:g}, seed {seed}): a control, not a "
             f"pretrained encoder.")
    try:
        path = register_simcnn_entry(name, weights, notes=notes, config=config)
    except BaseException:
        weights.unlink(missing_ok=True)
        raise
    return {"id": name, "weights": str(weights), "config": str(path), "frames": int(sim.size),
            "targets": what, "loss": info["loss"]}
