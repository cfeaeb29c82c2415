"""What backends share: building a model with weights from a file, seeded random init, and
the two kinds of weights (a file, or none at all)."""

from __future__ import annotations

from pathlib import Path

from s2r.encoders.backend import Backend
from s2r.encoders.checkpoints import load_state_dict_strict
from s2r.encoders.locate import EncoderStatus, file_status, resolve_file
from s2r.encoders.safe_load import read_checkpoint
from s2r.encoders.spec import file_stem


def seeded(seed: int, fn):
    """``fn()`` under ``torch.manual_seed(seed)`` without consuming the global RNG stream."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return fn()


def build_with_weights(make, prepare, path, source: str):
    """Build ``make()`` and load the file at ``path`` into it strictly.

    Fast path: build on the meta device (no random init of weights that are about to be
    replaced) and load with ``assign=True``; if anything is left on meta (non-persistent
    buffers computed in ``__init__``) or the fast path fails, build on CPU and load normally,
    so errors come from the ordinary path.

    Parameters
    ----------
    make : callable
        ``make()`` -> the untrained model.
    prepare : callable
        ``prepare(raw, model, source)`` -> its state_dict from the file's contents ``raw``.
    """
    import torch

    raw = read_checkpoint(path)
    try:
        with torch.device("meta"):
            model = make()
        load_state_dict_strict(model, prepare(raw, model, source), source=source, assign=True)
        tensors = list(model.parameters()) + list(model.buffers())
        if not any(t.is_meta for t in tensors):
            return model
    except Exception:
        pass
    model = make()
    load_state_dict_strict(model, prepare(raw, model, source), source=source)
    return model


class FileBackend(Backend):
    """A backend whose weights are one file: a released checkpoint (``spec.checkpoint``) or
    a hub file, found by :mod:`s2r.encoders.locate`.

    Subclasses give :meth:`make` (the untrained architecture) and
    :meth:`~s2r.encoders.backend.Backend.adapt_state_dict`; ``download`` says whether a
    missing file is fetched from ``spec.hub_repo`` when online.
    """

    download: bool = False

    def weights_file(self, spec):
        if spec.checkpoint is not None:
            return spec.checkpoint.file
        suffix = Path(spec.hub_files[0]).suffix if spec.hub_files else ".safetensors"
        return file_stem(spec.id) + suffix

    def status(self, spec, settings=None) -> EncoderStatus:
        return file_status(spec, settings)

    def resolve_weights(self, spec, *, allow_download: bool = True, settings=None):
        return resolve_file(spec, settings, download=self.download and allow_download)

    def make(self, spec):
        """The untrained embedding model of ``spec`` (on the current default device)."""
        raise NotImplementedError

    def build(self, spec, *, pretrained: bool, settings=None):
        make = lambda: self.make(spec)
        if not pretrained:
            return seeded(spec.seed, make), None
        path = self.resolve_weights(spec, settings=settings)
        prepare = lambda raw, model, source: self.adapt_state_dict(
            raw, model, spec, source)
        return build_with_weights(make, prepare, path, f"{spec.id} weights {path}"), path


class WeightlessBackend(Backend):
    """A backend without weights (``pixels``, ``state``): ready as it is, no ``@random``
    control, fingerprint ``"<name>:v1"``."""

    weightless = True
    status_message = "no weights needed"

    def status(self, spec, settings=None) -> EncoderStatus:
        return EncoderStatus("ready", self.status_message)
