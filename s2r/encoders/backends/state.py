"""The ``state`` backend: the robot state as the embedding, a reference and not an image
encoder. No weights and no model: :func:`s2r.encoders.build_encoder` refuses it, and
``s2r.embed.embed_frameset`` returns the FrameSet's state."""

from __future__ import annotations

from s2r.encoders.backends.base import WeightlessBackend


class StateBackend(WeightlessBackend):
    name = "state"
    final_tap = "state"
    image_model = False
    status_message = ("no weights: the dataset's robot state is the embedding (datasets with "
                      "state only)")


BACKEND = StateBackend()
