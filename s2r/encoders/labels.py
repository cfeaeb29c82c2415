"""What each encoder is, in a word and in a phrase: the labels a validation's tables and a
study's encoder set carry (data only: the registry entry says it, nothing is built).

================ ================================================ ============================
kind             what                                             label
================ ================================================ ============================
``reference``    no image model (``state``): shown, not ranked    ``reference``
``control``      a ``simcnn`` control trained on the world's sim   ``control (randomisation
                 frames: its transfer order known by construction  0.5)``
``random init``  ``ID@random``: the architecture, random weights   ``random init of ID``
``layer tap``    ``ID@LAYER``: one layer of a pretrained encoder   ``layer tap of ID
                                                                   (LAYER)``
``image encoder`` any other encoder with pretrained weights        ``image encoder``
================ ================================================ ============================
"""

from __future__ import annotations

from s2r.encoders.registry import get_spec

__all__ = ["KINDS", "encoder_kind", "encoder_label"]

#: Every kind :func:`encoder_kind` returns, in the module docstring's order.
KINDS = ("reference", "control", "random init", "layer tap", "image encoder")


def encoder_kind(encoder_id, settings=None) -> str:
    """The kind of ``encoder_id`` (one of :data:`KINDS`; see the module docstring).

    ``settings`` (handed down): where a user's encoder config is. A random-init copy of a
    control or of a layer encoder is ``random init`` (its weights say what it is)."""
    spec = get_spec(encoder_id, settings=settings)
    if not spec.has_image_model:
        return "reference"
    if spec.random_init:
        return "random init"
    if spec.backend == "simcnn":
        return "control"
    if spec.layer is not None:
        return "layer tap"
    return "image encoder"


def encoder_label(encoder_id, settings=None) -> str:
    """A phrase naming what ``encoder_id`` is (the module docstring's last column)."""
    from s2r.worlds import controls

    spec = get_spec(encoder_id, settings=settings)
    kind = encoder_kind(spec, settings)
    if kind == "random init":
        return f"random init of {spec.base_id}"
    if kind == "layer tap":
        return f"layer tap of {spec.base_id} ({spec.layer})"
    if kind == "control" and spec.id in controls():
        return f"control (randomisation {controls()[spec.id].strength:g})"
    return kind
