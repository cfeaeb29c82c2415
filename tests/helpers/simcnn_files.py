"""Hand-made ``simcnn`` weight files for tests: the right tensors and metadata without
training (a built-in control takes 12-25 CPU-minutes to train), and raw safetensors files
with any header at all (hostile ones)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Optional

#: What ``train_control`` recorded in a control's file before the recipe was stored (the
#: demo's files trained then must still be recognised): id -> metadata.
LEGACY_CONTROL_INFO = {
    cid: {"loss": [1.0, 0.5], "frames": 12_000, "targets": 12, "augment": 0.0, "seed": 0,
          "epochs": 20, "dim": 128, "input_size": [48, 64],
          "dataset": f"demo expert episodes, appearance randomisation {s:g}",
          "targets_names": "demo task state (leg and tabletop pose, 12)",
          "randomisation": s, "episodes": episodes}
    for cid, s, episodes in (("simcnn-dr0", 0.0, 750), ("simcnn-dr0.5", 0.5, 1500),
                             ("simcnn-dr1", 1.0, 1500))}
CONTROL_FILES = {"simcnn-dr0": "simcnn-dr0.v2.safetensors",
                 "simcnn-dr0.5": "simcnn-dr0.5.v3.safetensors",
                 "simcnn-dr1": "simcnn-dr1.v3.safetensors"}


def simcnn_state(dim: int = 128, seed: int = 0) -> dict:
    """A seeded SimCNN encoder's tensors, as ``train_simcnn`` returns them (float32)."""
    import torch

    from s2r.encoders.simcnn import SimCNN

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        features = SimCNN(dim=dim).features
    return {k: v.detach().float().contiguous() for k, v in features.state_dict().items()}


def user_info(dim: int = 128, input_size=(48, 64), **extra) -> dict:
    """Metadata of a file ``train-encoder`` wrote."""
    return {"loss": [1.0, 0.4], "frames": 48, "targets": 4, "augment": 0.3, "seed": 1,
            "epochs": 2, "dim": dim, "input_size": list(input_size), "dataset": "squares",
            "targets_names": "state and actions", **extra}


def write_simcnn(path, info: dict, *, dim: Optional[int] = None, seed: int = 0) -> Path:
    """A simcnn file at ``path`` with ``info`` as metadata and a SimCNN's tensors of width
    ``dim`` (default: ``info["dim"]``)."""
    from safetensors.torch import save

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    width = dim if dim is not None else info["dim"]
    path.write_bytes(save(simcnn_state(width, seed), metadata={"s2r_simcnn": json.dumps(info)}))
    return path


def write_raw(path, header, data: bytes = b"", *, length: Optional[int] = None) -> Path:
    """A safetensors-shaped file: an 8-byte little-endian length (``length``, default the
    header's), the ``header`` (a dict, dumped as JSON, or bytes as they are), ``data``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


def with_metadata(info_text: str, dim: int = 128) -> tuple:
    """(header, data) of a SimCNN file of width ``dim`` whose ``s2r_simcnn`` metadata is the
    raw string ``info_text`` (e.g. not JSON)."""
    import numpy as np

    header, data, offset = {"__metadata__": {"s2r_simcnn": info_text}}, b"", 0
    for key, tensor in simcnn_state(dim).items():
        raw = np.ascontiguousarray(tensor.numpy()).tobytes()
        header[key] = {"dtype": "F32", "shape": list(tensor.shape),
                       "data_offsets": [offset, offset + len(raw)]}
        data, offset = data + raw, offset + len(raw)
    return header, data


def training_frames(monkeypatch, spec, settings) -> dict:
    """The frames and targets ``train_control(spec)`` would train a control on, caught at
    ``train_simcnn`` (which never runs): ``{"frames": ..., "targets": ...}``."""
    import pytest

    from s2r.encoders import simcnn
    from s2r.encoders.backends import simcnn as backend

    seen = {}

    def fake_train(frames, targets, **kw):
        seen.update(frames=frames, targets=targets)
        raise RuntimeError("stop here")

    monkeypatch.setattr(simcnn, "train_simcnn", fake_train)
    with pytest.raises(RuntimeError, match="stop here"):
        backend.train_control(spec, None, settings=settings)
    return seen
