"""The closed loop's cache keys: a rollout outcome, a task's demonstration embeddings, the
shared control.

Every key holds :data:`ROLLOUT_VERSION`, :data:`CODE_ID` (the closed loop's policy and rollout
code), the task's identity (:meth:`~s2r.worlds.base.SimTask.identity`: what draws its frames
and the world's code), and the encoder's weights fingerprint, its runtime when not torch and
the parameters where they matter, so a change to any of them is never served stale and two
worlds' tasks never share an entry.
"""

from __future__ import annotations

from typing import Optional

from s2r.closedloop.params import RolloutParams
from s2r.embed.resolve import spec_of, weights_fingerprint
from s2r.worlds import SimTask

__all__ = ["CODE_ID", "ROLLOUT_VERSION", "code_digest", "control_key", "demo_key",
           "embedding_runtime", "layer_tap", "rollout_key"]

#: Bump when what a rollout record holds or how it is computed changes.
ROLLOUT_VERSION = 3
#: The closed loop's code in every key: the :func:`code_digest` its behaviour was last checked
#: at. ``tests/closedloop/test_keys.py`` records the current digest; when the code changes, set
#: a new value here only if what it computes changed (cached rollouts are then misses).
CODE_ID = "594f1c5ef817ade7"


def code_digest() -> str:
    """Digest of the closed loop's policy and rollout source (``policy/*.py`` and
    ``rollout.py``), 16 hex digits: what :data:`CODE_ID` was checked against."""
    from pathlib import Path

    from s2r.identity import digest

    here = Path(__file__).resolve().parent
    files = sorted([*(here / "policy").glob("*.py"), here / "rollout.py"])
    return digest(*(f.read_bytes() for f in files)).hex()[:16]


def loop_key(task: SimTask, sim: bool = False) -> dict:
    """What every key holds of the code: the version, the closed loop's code and the task's
    identity; ``sim``: the work draws only the sim look (demonstrations, controls, sim-look
    rollouts), keyed by :meth:`~s2r.worlds.base.SimTask.sim_identity` so tasks that differ
    only in their real look share it."""
    task_id = task.sim_identity() if sim else task.identity()
    return {"rollout_version": ROLLOUT_VERSION, "code": CODE_ID, "task": task_id}


def layer_tap(spec, layer: Optional[str], settings=None):
    """The tap of the encoder ``spec`` named ``layer`` (:mod:`s2r.encoders.taps`), or None."""
    if layer is None:
        return None
    from s2r.encoders.taps import layer_plan, select_layers

    return select_layers(layer_plan(spec, settings), [layer], encoder=spec.id)[0]


def embedding_runtime(spec, settings=None, device=None) -> str:
    """The runtime the closed loop embeds ``spec``'s frames in on ``device``
    (:func:`s2r.embed.resolve.runtime_of`: ``"onnx"`` on the CPU unless the settings ask for
    torch); what :class:`~s2r.closedloop.agent.Embedder` builds with and what the keys
    name."""
    from s2r.embed.resolve import runtime_of

    return runtime_of(None, device, "auto", None, settings, spec)


def encoder_key(encoder_id: str, settings=None, layer: Optional[str] = None,
                device=None) -> dict:
    """The encoder's part of a key; a layer other than the final one adds ``layer`` and the
    taps' version (the final layer's keys are the encoder's own); a runtime other than torch
    adds ``runtime`` (:func:`s2r.encoders.runtime.runtime_tag`: its embeddings differ from
    torch's in the last bits, which a closed loop can amplify into another outcome)."""
    from s2r.encoders.runtime import runtime_tag

    spec, _ = spec_of(encoder_id, settings)
    out = {"encoder": spec.id, "weights": weights_fingerprint(spec, settings=settings)}
    tap = layer_tap(spec, layer, settings)
    if tap is not None and not tap.final:
        from s2r.encoders.taps import TAPS_VERSION

        out.update(layer=tap.name, taps_version=TAPS_VERSION)
    tag = runtime_tag(embedding_runtime(spec, settings, device))
    if tag is not None:
        out["runtime"] = tag
    return out


def rollout_key(task: SimTask, encoder_id: str, params: RolloutParams, look: str, gap: float,
                settings=None, layer: Optional[str] = None, device=None) -> dict:
    """Key of one (encoder, look, gap) outcome record in ``task`` (the sim look ignores
    ``gap``); ``params`` as :meth:`RolloutParams.for_task` gives them; ``device``: where the
    encoder runs (default :func:`s2r.encoders.pick_device`), which decides its runtime."""
    return {"kind": "rollouts", **loop_key(task, sim=look == "sim"),
            **encoder_key(encoder_id, settings, layer, device),
            "params": params.to_dict(), "look": look,
            "gap": None if look == "sim" else float(gap)}


def demo_key(task: SimTask, encoder_id: str, params: RolloutParams, settings=None,
             layer: Optional[str] = None, device=None) -> dict:
    """Key of the encoder's embeddings of the task's expert demonstrations."""
    p = params.to_dict()
    return {"kind": "demo-embeddings", **loop_key(task, sim=True),
            **encoder_key(encoder_id, settings, layer, device),
            "demos": {k: p[k] for k in ("demos", "demo_steps", "seed", "height", "width")}}


def control_key(task: SimTask, params: RolloutParams) -> dict:
    """Key of the two-stage policies' shared control (no encoder: fitted on exact states)."""
    return {"kind": "state-control", **loop_key(task, sim=True),
            "control_demos": params.control_demos, "demo_steps": params.demo_steps,
            "seed": params.seed, "members": params.control_members}
