"""Registry entries of the ``simcnn`` controls (data only; the backend is
:mod:`s2r.encoders.backends.simcnn`, the network :mod:`s2r.encoders.simcnn`).

The built-in controls are declared by their worlds (:attr:`s2r.worlds.base.World.controls`,
read through :data:`s2r.worlds.WORLDS`: one entry per control, with its training recipe and
registry text); :data:`CONTROLS` (id -> appearance randomisation strength) and
:data:`CONTROL_VERSIONS` are views of them, :data:`SIMCNN_CONTROLS` their specs, which
:mod:`s2r.encoders.builtins` appends to the built-in registry. Their transfer order is known
before any rollout: more randomisation, smaller sim-to-real gap.
"""

from __future__ import annotations

from s2r.encoders.spec import (BuildSpec, CamSpec, CheckpointSpec, EncoderSpec, Preprocessing,
                               TableFacts, WeightsSpec)
from s2r.worlds import controls as _world_controls

__all__ = ["CONTROLS", "CONTROL_VERSIONS", "SIMCNN_CONTROLS", "simcnn_spec"]

#: Built-in controls: id -> appearance randomisation strength in [0, 1] of their training.
CONTROLS = {cid: c.strength for cid, c in _world_controls().items()}
#: Each control's training-recipe version, part of its weights file name: bumped (by its world)
#: whenever how that control is trained changes, so a file trained the old way is never
#: reused and a control whose recipe did not change is not retrained. The file's metadata
#: stores the whole recipe as well (``control_recipe`` in the backend), checked on every load,
#: so a file at this name that s2r did not train for the control is never used.
CONTROL_VERSIONS = {cid: c.version for cid, c in _world_controls().items()}
_DIM, _INPUT = 128, (48, 64)
#: Parameters of SimCNN's convolutions and batch norms (any input size: the spatial soft-argmax
#: makes the Linear layer's input 64 wide); the Linear layer adds 65 per embedding dimension.
_CONV_PARAMS = 47_424


def simcnn_spec(*, id: str, file: str, dim: int = _DIM, input_size: tuple = _INPUT,
                source: str = "builtin", name: str = "", notes: str = "",
                training_type: str = "Supervised (sim frames)",
                pretraining_data: str = "Sim frames of the dataset", **fields) -> EncoderSpec:
    """The spec of a ``simcnn`` encoder whose weights are ``file`` (a name in the weights
    folder, or an absolute path)."""
    return EncoderSpec(
        id=id,
        facts=TableFacts(name=name or id, architecture="CNN", training_type=training_type,
                         pretraining_data=pretraining_data, pretraining_group="none",
                         params_m=(_CONV_PARAMS + 65 * int(dim)) / 1e6, notes=notes),
        build=BuildSpec(backend="simcnn", identifier="simcnn", dim=int(dim)),
        weights=WeightsSpec(checkpoint=CheckpointSpec(file=file, url="", arch="simcnn",
                                                      how="trained on first use")),
        preprocessing=Preprocessing(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5),
                                    input_size=tuple(int(v) for v in input_size)),
        cam=CamSpec(family="cnn", layer="11"), source=source, **fields)


SIMCNN_CONTROLS = tuple(
    simcnn_spec(id=c.id, file=f"{c.id}.v{c.version}.safetensors", name=c.name,
                training_type="Supervised (sim frames, control)",
                pretraining_data=c.pretraining_data, notes=c.notes)
    for c in _world_controls().values())
