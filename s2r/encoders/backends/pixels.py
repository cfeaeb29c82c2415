"""The ``pixels`` backend: the no-learning baseline. Frames are resized by the common
preprocessing (to the entry's ``input_size``, 32x32) and flattened channel-first."""

from __future__ import annotations

from s2r.encoders.backends.base import WeightlessBackend


class PixelsBackend(WeightlessBackend):
    name = "pixels"
    final_tap = "pixels"

    def build(self, spec, *, pretrained: bool, settings=None):
        """Raw pixels: the preprocessed (B, 3, 32, 32) batch flattened channel-first."""
        import torch.nn as nn

        return nn.Flatten(1), None


BACKEND = PixelsBackend()
