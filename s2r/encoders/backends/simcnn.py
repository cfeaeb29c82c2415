"""The ``simcnn`` backend: small CNNs trained on sim frames only (:mod:`s2r.encoders.simcnn`).

Two kinds of entries:

* **user encoders** written by ``python -m s2r train-encoder``: a config entry
  ``simcnn = "PATH.safetensors"`` (the file in the weights folder; relative paths are
  relative to the config file), fingerprinted like any weights file;
* the worlds' built-in **controls** (the demo's ``simcnn-dr0``, ``simcnn-dr0.5``,
  ``simcnn-dr1``): declared by their world (:attr:`s2r.worlds.base.World.controls`, reached
  through :data:`s2r.worlds.WORLDS`, never by importing a world), trained once, on first use,
  on the world's expert episodes rendered with appearance randomisation of that strength
  (:meth:`s2r.worlds.base.SimTask.randomised_frames`), then saved in the weights folder
  (``S2R_WEIGHTS_DIR``) and loaded from there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional

from s2r.encoders.backends.base import FileBackend
from s2r.encoders.fields import is_name
from s2r.encoders.locate import (EncoderStatus, expected_path, file_kind, file_status,
                                 writable_weights_dir)
from s2r.errors import EncoderError
from s2r.inputs import quoted

def _control(spec):
    """The world's :class:`~s2r.worlds.base.Control` of the built-in control ``spec``."""
    from s2r.worlds import control

    return control(spec.id)[1]


def control_recipe(spec) -> dict:
    """What identifies how the built-in control ``spec`` is trained (stored as ``recipe`` in
    its file's metadata by :func:`train_control`, checked on every load): id, version,
    randomisation, episodes, steps, epochs, seed, augmentation, targets, width, input (the
    world declares the control: :attr:`s2r.worlds.base.World.controls`)."""
    c = _control(spec)
    return {"control": c.id, "version": c.version, "randomisation": c.strength,
            "episodes": c.episodes, "steps": c.steps, "epochs": c.epochs, "seed": c.seed,
            "augment": 0.0, "state_columns": list(c.state_columns), "dim": spec.dim,
            "input_size": list(spec.input_size)}


def recipe_mismatch(spec, info: dict):
    """``None`` when ``info`` (a simcnn file's metadata) identifies the built-in control
    ``spec`` as trained now, else ``(field, what the file says, what the control has)``.

    Files trained before the recipe was stored (under this version's file name, so by this
    recipe; the demo's controls only, :attr:`~s2r.worlds.base.Control.recognise_unrecorded`)
    are recognised by what they did record: randomisation, episodes, epochs, seed,
    augmentation, targets, width, input size and the dataset text all equal the recipe's
    (deliberately no version bump, which would retrain every user's 12-25 minute controls
    for metadata alone).
    """
    want, c = control_recipe(spec), _control(spec)
    recipe = info.get("recipe")
    if recipe is None and c.recognise_unrecorded:
        got = info
        want = {**{k: want[k] for k in ("randomisation", "episodes", "epochs", "seed",
                                        "augment", "dim", "input_size")},
                "targets": c.state_columns[1] - c.state_columns[0],
                "targets_names": c.targets_names, "dataset": c.dataset}
    else:
        got = recipe if isinstance(recipe, dict) else {}
    for key, value in want.items():
        if got.get(key) != value or type(got.get(key)) is bool:
            return key, got.get(key), value
    return None


def _plain(value) -> str:
    """A metadata value for a note: as it is when short and printable, else :func:`quoted`."""
    text = str(value)
    return text if len(text) <= 100 and text.isprintable() else quoted(text)


def _minutes(spec) -> int:
    return _control(spec).minutes


def control_file(spec, settings=None) -> Optional[Path]:
    """The weights file of the built-in control ``spec`` when it is one s2r trained for that
    control (:func:`recipe_mismatch`); ``None`` when nothing is at its path (it is trained on
    first use).

    Raises
    ------
    EncoderError
        Anything else at its path (a link, a FIFO, a device, a folder, another simcnn file,
        a file of other metadata or shapes): one line naming the file and saying how to
        retrain (delete it). Such a file is never used, and never silently trained over.
    """
    from s2r.encoders.simcnn import SimCNNFileError, read_simcnn_meta, shown

    path = expected_path(spec, settings)
    retrain = (f"delete it and s2r trains {spec.id} again on first use (about "
               f"{_minutes(spec)} CPU-minutes)")
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there (the folder's fault, if
        return None                                  # any, is said where it is written)
    except OSError as exc:
        raise EncoderError(f"{spec.id}: cannot look at its weights file {path} "
                           f"({exc.strerror or exc})") from None
    if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
        kind = "a link" if stat.S_ISLNK(mode) else file_kind(mode)
        raise EncoderError(f"{path} is {kind}, not a file s2r trained for {spec.id}; {retrain}")
    try:
        info = read_simcnn_meta(path)
    except SimCNNFileError as exc:
        raise EncoderError(f"{path} is not a file s2r trained for {spec.id} ({exc.reason}); "
                           f"{retrain}") from None
    wrong = recipe_mismatch(spec, info)
    if wrong is not None:
        field, got, want = wrong
        version = control_recipe(spec)["version"]
        records = f"no {field}" if got is None else f"{field} {shown(got)}"
        raise EncoderError(f"{path} is not the {spec.id} control s2r trains: it records "
                           f"{records} where v{version} has {want!r}; {retrain}")
    return path


def train_control(spec, path: Path, progress=None, settings=None) -> Path:
    """Train the built-in control ``spec`` on its world's randomised frames and save it at
    ``path`` (atomically; its :func:`control_recipe` in the metadata). When another process
    saved it meanwhile, that file is used if it is the control (:func:`control_file`)."""
    from s2r.encoders.simcnn import save_simcnn, train_simcnn
    from s2r.worlds import control

    writable_weights_dir(settings)  # a weights folder that is a file fails before training
    world, c = control(spec.id)
    # the world's expert episodes at the control's frame size (resized like every frame the
    # encoder embeds), labelled with the task state: what the camera must supply (the
    # robot's own state is proprioception)
    frames, targets = world.control_task(dict(c.task)).randomised_frames(
        c.episodes, c.steps, strength=c.strength, seed=c.seed, height=c.height, width=c.width)
    state_dict, info = train_simcnn(frames, targets, augment=0.0, seed=c.seed,
                                    epochs=c.epochs, dim=spec.dim,
                                    input_size=spec.input_size, progress=progress)
    info.update(dataset=c.dataset, targets_names=c.targets_names,
                randomisation=c.strength, episodes=c.episodes, recipe=control_recipe(spec))
    try:
        save_simcnn(path, state_dict, info, exclusive=True)
    except FileExistsError:
        found = control_file(spec, settings)
        if found is None:
            raise EncoderError(f"{spec.id}: its weights file {path} came and went while it "
                               "was trained; run the command again") from None
        return found
    return path


def _relu_type():
    from torch import nn

    return nn.ReLU


def untrained_controls(encoder_ids, *, settings=None) -> list:
    """The built-in controls among ``encoder_ids`` (any world's) whose weights file is not
    here yet: building one would train it (minutes of CPU)."""
    from s2r.encoders.registry import get_spec
    from s2r.encoders.simcnn_specs import CONTROLS

    return [e for e in encoder_ids if e in CONTROLS
            and control_file(get_spec(e, settings=settings), settings) is None]


def train_missing_controls(encoder_ids, *, settings=None, progress=None) -> list:
    """Train every built-in control among ``encoder_ids`` whose weights file is not here yet
    (what building it would do on first use), reporting the training through ``progress``
    (``progress(epoch, epochs, message)``, e.g. ``validate``'s bar): a control that takes
    15-30 CPU-minutes to train never trains behind a frozen bar. Returns the ids trained."""
    from s2r.encoders.registry import get_spec
    from s2r.progress import report

    trained = []
    for encoder_id in untrained_controls(encoder_ids, settings=settings):
        spec = get_spec(encoder_id, settings=settings)
        report(progress, 0, 1, f"{spec.id}: rendering its training frames (first use; about "
                               f"{_minutes(spec)} CPU-minutes in all)")

        def step(done, total, message="", _id=spec.id):
            report(progress, done, total, f"{_id} (first use): {message}")

        train_control(spec, expected_path(spec, settings), progress=step, settings=settings)
        trained.append(spec.id)
    return trained


class SimCNNBackend(FileBackend):
    name = "simcnn"
    config_key = "simcnn"
    field_rules = {"simcnn": (is_name, 'a .safetensors file written by train-encoder, e.g. '
                                       '"weights/my-cnn.safetensors"')}

    def check_spec(self, spec) -> None:
        if spec.checkpoint is None:
            raise EncoderError(f"encoder {spec.id!r}: backend 'simcnn' needs a weights file")

    def random_library(self, spec) -> str:
        return "torch"

    def status(self, spec, settings=None) -> EncoderStatus:
        from s2r.encoders.simcnn_specs import CONTROLS

        if spec.id not in CONTROLS:
            return file_status(spec, settings)
        path = expected_path(spec, settings)
        try:
            found = control_file(spec, settings)
        except EncoderError as exc:
            return EncoderStatus("weights-missing", str(exc), str(path))
        if found is not None:
            return EncoderStatus("ready", f"weights file {found}", str(found))
        return EncoderStatus("ready", f"trained on first use (about {_minutes(spec)} minutes on "
                                      f"one core), then kept at {path}", str(path))

    def resolve_weights(self, spec, *, allow_download: bool = True, settings=None):
        from s2r.encoders.simcnn import read_simcnn_meta
        from s2r.encoders.simcnn_specs import CONTROLS

        if spec.id in CONTROLS:
            found = control_file(spec, settings)
            if found is not None:
                return found
            if not allow_download:
                raise EncoderError(f"{spec.id}: not trained yet (trained on first use)")
            return train_control(spec, expected_path(spec, settings), settings=settings)
        path = super().resolve_weights(spec, allow_download=allow_download, settings=settings)
        info = read_simcnn_meta(path)       # checked again: the file may have changed
        if info["dim"] != spec.dim:
            raise EncoderError(f"encoder {spec.id!r}: {path} is {info['dim']} wide now, was "
                               f"{spec.dim} when the config was read; run the command again")
        return path

    def make(self, spec):
        from s2r.encoders.simcnn import SimCNN

        return SimCNN(dim=spec.dim, input_size=spec.input_size).features

    def adapt_state_dict(self, raw, model, spec, source: str) -> dict:
        return raw

    def tap_sites(self, spec, model) -> tuple:
        """The four convolution blocks (their ReLUs), each pooled as the head pools the last:
        one soft-argmax keypoint per channel on the block's own grid."""
        from s2r.encoders.taps import TapSite

        relus = [name for name, m in model.named_children() if isinstance(m, _relu_type())]
        return tuple(TapSite(f"conv{i + 1}", name, "keypoints")
                     for i, name in enumerate(relus[:-1]))

    def spec_from_entry(self, value, fields: dict, *, id: str, base_dir):
        from s2r.encoders.simcnn import read_simcnn_meta
        from s2r.encoders.simcnn_specs import simcnn_spec

        path = Path(value).expanduser()
        path = path if path.is_absolute() else Path(base_dir) / path
        # the header only, bounded and checked (width, input size, tensors) before anything
        # is allocated
        meta = read_simcnn_meta(path, what=f"encoder {id!r}: simcnn file")
        dim, size = meta["dim"], tuple(meta["input_size"])
        for key, value in (("dim", dim), ("input_size", size)):
            given = fields.pop(key, None)
            if given is not None and (tuple(given) if key == "input_size" else given) != value:
                raise EncoderError(f"encoder {id!r}: field {key!r} is {given!r} but {path} "
                                   f"holds {value!r}")
        notes = fields.pop("notes", None) or (
            f"Small CNN trained by train-encoder on {_plain(meta.get('dataset'))} "
            f"(augmentation {_plain(meta.get('augment'))}, seed {_plain(meta.get('seed'))}): "
            "a control, not a pretrained encoder.")
        return simcnn_spec(id=id, file=str(path.absolute()), dim=dim, input_size=size,
                           source=fields.pop("source", "user"), notes=notes, **fields)


BACKEND = SimCNNBackend()
