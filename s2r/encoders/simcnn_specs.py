"""Registry entries of the ``simcnn`` controls (data only; the backend is
:mod:`s2r.encoders.backends.simcnn`, the network :mod:`s2r.encoders.simcnn`).

The demo's built-in controls are listed once, in :data:`CONTROLS` (id -> appearance
randomisation strength); :data:`SIMCNN_CONTROLS` are their specs, which
:mod:`s2r.encoders.builtins` appends to the built-in registry. Their transfer order is known
before any rollout: more randomisation, smaller sim-to-real gap.
"""

from __future__ import annotations

from s2r.encoders.spec import (BuildSpec, CamSpec, CheckpointSpec, EncoderSpec, Preprocessing,
                               TableFacts, WeightsSpec)

__all__ = ["CONTROLS", "CONTROL_VERSIONS", "SIMCNN_CONTROLS", "simcnn_spec"]

#: Built-in controls: id -> appearance randomisation strength in [0, 1] of their training.
CONTROLS = {"simcnn-dr0": 0.0, "simcnn-dr0.5": 0.5, "simcnn-dr1": 1.0}
#: Each control's training-recipe version, part of its weights file name: bumped whenever how
#: that control is trained changes (:mod:`s2r.encoders.backends.simcnn`), so a file trained the
#: old way is never reused and a control whose recipe did not change is not retrained.
#: 2: 750 training episodes instead of 250; 3 (the randomised controls): 1,500. The file's
#: metadata stores the whole recipe as well (``control_recipe`` in the backend), checked on
#: every load, so a file at this name that s2r did not train for the control is never used.
CONTROL_VERSIONS = {"simcnn-dr0": 2, "simcnn-dr0.5": 3, "simcnn-dr1": 3}
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
    simcnn_spec(id=cid, file=f"{cid}.v{CONTROL_VERSIONS[cid]}.safetensors",
                name=f"Sim CNN, randomisation {s:g}",
                training_type="Supervised (sim frames, control)",
                pretraining_data=f"Demo sim frames, appearance randomisation {s:g}",
                notes=f"A control, not a pretrained encoder: a small CNN trained on the demo's "
                      f"expert episodes to predict the state, rendered with the demo "
                      f"renderer's appearance parameters randomised at strength {s:g} (real "
                      f"looks at gaps drawn from [0, {s:g}] with other seeds than "
                      f"validation's). More randomisation: smaller gap, by construction. "
                      f"Trained once on first use, then kept in the weights folder.")
    for cid, s in CONTROLS.items())
