"""The built-in controls a command would train on first use, found and checked before any work.

A world's ``simcnn`` control (:attr:`s2r.worlds.base.World.controls`) is trained the first
time it is built when its weights file is not in the weights folder
(:func:`s2r.encoders.backends.simcnn.train_control`): minutes of CPU. Every entry point that
may build one (the commands ``score``, ``embed``, ``project``, ``figure``, ``saliency``,
``validate``; the dashboard) asks :func:`first_use_controls` first, which

* finds the controls among the encoders asked for whose weights are not here yet;
* refuses, before anything runs, a control of another world than the dataset's
  (:func:`s2r.worlds.check_control_world`) and a weights folder nothing can be saved in
  (:func:`s2r.encoders.locate.writable_weights_dir`), each as one line;
* returns one :class:`FirstUse` per control to train, whose :attr:`FirstUse.note` is what the
  command says before it starts (how long the training was measured to take, where the file
  goes);

then trains them with their progress shown (:func:`train_first_use`), so no bar sits still
for minutes on a control nobody announced.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

__all__ = ["FirstUse", "dataset_world", "first_use_controls", "train_first_use"]


@dataclass(frozen=True)
class FirstUse:
    """One built-in control to train before it is used.

    Attributes
    ----------
    id : str
        The control's encoder id (``"mw-simcnn-dr0"``).
    minutes : int
        How long its training takes on a 2-core machine, measured or estimated
        (:attr:`s2r.worlds.base.Control.minutes`).
    path : Path
        Where its weights file is saved.
    estimated : bool
        ``minutes`` is an estimate, not a measurement
        (:attr:`s2r.worlds.base.Control.minutes_estimated`).
    """

    id: str
    minutes: int
    path: Path
    estimated: bool = False

    @property
    def note(self) -> str:
        """The line a command prints before training it."""
        how = "estimated" if self.estimated else "measured"
        return (f"training control {self.id} on first use ({how} ~{self.minutes} min on "
                f"2 cores; saved to {self.path})")


def dataset_world(spec) -> tuple[Optional[str], str]:
    """``(world name or None, what a message calls the dataset)`` of a dataset spec, read
    without loading anything (:func:`s2r.datasets.parse_spec`; a bad spec raises its own
    one-line :class:`~s2r.errors.DataError`)."""
    from s2r.datasets import parse_spec
    from s2r.inputs import quoted
    from s2r.worlds import WORLDS

    kind = parse_spec(spec)["kind"]
    if kind in WORLDS:
        return kind, f"this {WORLDS[kind].title} dataset"
    first = spec if isinstance(spec, (str, Path)) else list(spec)[0]
    return None, f"the dataset {quoted(str(first))}"


def first_use_controls(encoder_ids: Sequence[str], *, settings, dataset=None) -> list[FirstUse]:
    """The built-in controls among ``encoder_ids`` that building would train (their weights
    file is not here yet), checked before any work.

    Parameters
    ----------
    encoder_ids : sequence of str
    settings : s2r.settings.Settings
        The weights folder in effect (``S2R_WEIGHTS_DIR``).
    dataset : dataset spec, optional
        What the controls will embed: each must be a control of its world.

    Returns
    -------
    list of FirstUse
        In the order asked for, each id once; empty when nothing would be trained.

    Raises
    ------
    EncoderError
        A file at a control's path that is not the control (:func:`~s2r.encoders.backends.
        simcnn.control_file`), a control of another world than the dataset's, or a weights
        folder that cannot be written (one line naming it and ``S2R_WEIGHTS_DIR``).
    DataError
        A bad dataset spec.
    """
    from s2r.encoders.backends.simcnn import untrained_controls
    from s2r.encoders.locate import expected_path, writable_weights_dir
    from s2r.encoders.registry import get_spec
    from s2r.worlds import check_control_world, control

    ids = untrained_controls(list(dict.fromkeys(encoder_ids)), settings=settings)
    if not ids:
        return []
    if dataset is not None:
        world, name = dataset_world(dataset)
        for encoder_id in ids:
            check_control_world(encoder_id, world, name)
    writable_weights_dir(settings)
    return [FirstUse(e, control(e)[1].minutes, expected_path(get_spec(e, settings=settings),
                                                             settings),
                     estimated=control(e)[1].minutes_estimated)
            for e in ids]


def train_first_use(items: Sequence[FirstUse], *, settings,
                    progress_for: Optional[Callable] = None) -> list[str]:
    """Train each control of ``items`` not trained meanwhile, its progress reported to
    ``progress_for(item)`` (a context manager yielding a ``progress(done, total, message)``
    callback, e.g. :func:`s2r.progress.tqdm_progress` of a label; None: nothing shown).
    Returns the ids trained."""
    import contextlib

    from s2r.encoders.backends.simcnn import train_missing_controls

    trained = []
    for item in items:
        bar = progress_for(item) if progress_for is not None else contextlib.nullcontext()
        with bar as progress:
            trained += train_missing_controls([item.id], settings=settings, progress=progress)
    return trained
