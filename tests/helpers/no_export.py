"""An encoder whose model does not export to ONNX (``aten::cummax`` has no ONNX form at opset
17): what the fallback to torch is tested with."""

from __future__ import annotations

import contextlib

import torch
import torch.nn as nn

#: The id of :func:`running_max_spec`.
RUNNING_MAX = "running-max"


class RunningMax(nn.Module):
    def forward(self, x):
        return torch.cummax(x.mean(dim=(2, 3)), dim=1)[0]


def running_max_spec():
    """The entry of :class:`RunningMax` (8x8 input, 3 wide, no weights)."""
    from s2r.encoders import EncoderSpec
    from s2r.encoders.spec import BuildSpec, CamSpec, Preprocessing, TableFacts

    return EncoderSpec(
        id=RUNNING_MAX,
        build=BuildSpec(backend=RUNNING_MAX, identifier="max", dim=3),
        facts=TableFacts(name="Running max", architecture="Pixels", training_type="None",
                         pretraining_data="None", pretraining_group="none", params_m=0.0),
        preprocessing=Preprocessing(mean=(0, 0, 0), std=(1, 1, 1), input_size=(8, 8)),
        cam=CamSpec(family="cnn"))


@contextlib.contextmanager
def running_max(registered: bool = False):
    """Within: the ``running-max`` backend (and, ``registered``, its entry in the registry, so
    the CLI finds it by id); yields the spec."""
    from s2r.encoders import REGISTRY
    from s2r.encoders.backend import register_backend, unregister_backend
    from s2r.encoders.backends.base import WeightlessBackend

    class RunningMaxBackend(WeightlessBackend):
        name = RUNNING_MAX

        def build(self, spec, *, pretrained, settings=None):
            return RunningMax(), None

    register_backend(RunningMaxBackend())
    spec = running_max_spec()
    try:
        if registered:
            REGISTRY.register(spec)
        yield spec
    finally:
        REGISTRY._specs.pop(RUNNING_MAX, None)
        unregister_backend(RUNNING_MAX)
