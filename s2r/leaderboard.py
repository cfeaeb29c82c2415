"""Leaderboards: score records as tables, written to / read from JSON or CSV, and merged.

A *record* is the dict of :func:`s2r.pipeline.score_encoder` (nested: ``encoder``,
``dataset``, ``params``, ``n_frames``... are objects). On disk:

- ``.json``: a list of records, nested objects kept as they are;
- ``.csv``: one row per record, nested objects flattened to dotted columns
  (``encoder.id``, ``params.pca_dim``, ``n_frames.sim``...), lists (``warnings``) as JSON
  text, missing values (e.g. intervals with ``n_boot=0``) as empty cells.

Both read back to the same records, so runs on different machines, encoders or datasets can
be merged: :func:`merge_leaderboards` keeps one row per (encoder id, dataset fingerprint,
parameters, embedding precision, runtime, layer) -- the one from the file given last (a final
layer's record and a record without a layer are one row).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable, Sequence, Union

import numpy as np

from s2r.atomic import atomic_path
from s2r.errors import DataError
from s2r.metrics import catalogue

PathLike = Union[str, Path]
FORMATS = (".json", ".csv")
# Leading columns of a leaderboard table (the rest follow in record order).
_LEAD = ("encoder.id", "encoder.name", "encoder.table_number", "encoder.architecture",
         "encoder.pretraining_group", "encoder.pretraining_data", "encoder.params_m",
         "encoder.dim", "encoder.random_init", "encoder.status", "precision", "runtime", "layer",
         "layer_index", "layer_depth", "layer_is_final", "layer_best", "embedding_dim",
         "dataset.name", "dataset.fingerprint")


def flatten_record(record: dict, prefix: str = "") -> dict:
    """Nested dicts -> one level with dotted keys; lists are kept (see :func:`records_to_frame`)."""
    out = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten_record(value, f"{name}."))
        else:
            out[name] = value
    return out


def unflatten_record(row: dict) -> dict:
    """Inverse of :func:`flatten_record`."""
    out: dict = {}
    for key, value in row.items():
        node = out
        parts = str(key).split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def _score_columns() -> list:
    cols = []
    for k in catalogue.interval_keys():
        cols += [k, f"{k}_ci_low", f"{k}_ci_high"]
    return cols + catalogue.reference_keys()


def records_to_frame(records: Sequence[dict]):
    """Score records -> ``pandas.DataFrame``, one row per record, dotted column names.

    Columns: encoder metadata and dataset first, then every score with its interval, then
    ``params.*`` and the rest. Lists stay Python lists (JSON text only in CSV files).
    """
    import pandas as pd

    rows = [flatten_record(r) for r in records]
    frame = pd.DataFrame(rows)
    lead = [c for c in (*_LEAD, *_score_columns()) if c in frame.columns]
    params = sorted(c for c in frame.columns if c.startswith("params.") and c not in lead)
    rest = [c for c in frame.columns if c not in lead and c not in params]
    return frame[lead + params + rest]


def _check_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataError(f"leaderboard file {str(path)!r}: expected a .json or .csv file, "
                        f"got {suffix or 'no extension'!r}")
    return suffix


def _plain(value):
    """numpy scalars -> Python; NaN -> None; JSON text of lists/objects -> objects."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def write_records(records: Sequence[dict], path: PathLike) -> Path:
    """Write records to ``path`` (``.json`` nested, ``.csv`` flattened); returns the path."""
    path = Path(path)
    suffix = _check_format(path)
    with atomic_path(path) as tmp:  # nothing half-written, nothing written through a link
        if suffix == ".json":
            tmp.write_text(json.dumps(list(records), indent=1, allow_nan=False) + "\n")
        else:
            frame = records_to_frame(records)
            for col in frame.columns:
                if frame[col].map(lambda v: isinstance(v, (list, dict))).any():
                    frame[col] = frame[col].map(
                        lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
            frame.to_csv(tmp, index=False)
    return path


def read_records(path: PathLike) -> list[dict]:
    """Records from a leaderboard file written by :func:`write_records` (JSON or CSV)."""
    import pandas as pd

    path = Path(path)
    suffix = _check_format(path)
    if not path.is_file():
        raise DataError(f"leaderboard file {str(path)!r} does not exist")
    if suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise DataError(f"leaderboard file {str(path)!r} is not valid JSON: {exc}") from None
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataError(f"leaderboard file {str(path)!r}: expected a JSON list of score "
                            f"records, got {type(data).__name__}")
        records = data
    else:
        try:
            frame = pd.read_csv(path)
        except Exception as exc:
            raise DataError(f"leaderboard file {str(path)!r} could not be read as CSV: "
                            f"{exc}") from None
        if "encoder.id" not in frame.columns:
            raise DataError(f"leaderboard file {str(path)!r} has no 'encoder.id' column "
                            f"(columns: {', '.join(map(str, frame.columns[:5]))}); is this a "
                            "file written by 'python -m s2r score'?")
        records = [unflatten_record({k: _plain(v) for k, v in row.items()})
                   for row in frame.to_dict(orient="records")]
    if not records:
        raise DataError(f"leaderboard file {str(path)!r} holds no score records; is this a "
                        "file written by 'python -m s2r score'?")
    for i, r in enumerate(records):
        if not isinstance(r.get("encoder"), dict) or "id" not in r["encoder"]:
            raise DataError(f"leaderboard file {str(path)!r}: record {i} has no encoder id "
                            "('encoder.id'); is this a file written by 'python -m s2r score'?")
    return records


def _normalise(value):
    """Make JSON and CSV copies of the same record compare equal (16 vs 16.0)."""
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _runtime(record: dict) -> str:
    """What computed a record's embeddings: its ``runtime``, else ``"torch"`` (a record without
    one, or with an empty CSV cell)."""
    value = record.get("runtime")
    return value if isinstance(value, str) and value else "torch"


def record_identity(record: dict) -> tuple:
    """``(encoder id, dataset fingerprint, canonical params JSON, precision, runtime, layer)``
    of a record (records written before precision existed count as ``"auto"``, before runtime
    as ``"torch"``; the final layer's record, and one without a layer, as layer ``None``: they
    are the same embedding)."""
    dataset = record.get("dataset") or {}
    params = _normalise(record.get("params") or {})
    layer = None if record.get("layer_is_final", True) in (True, None) else record.get("layer")
    return (str(record["encoder"]["id"]), str(dataset.get("fingerprint")),
            json.dumps(params, sort_keys=True), str(record.get("precision") or "auto"),
            _runtime(record), None if layer is None else str(layer))


def merge_records(groups: Iterable[Sequence[dict]]) -> list[dict]:
    """Concatenate record lists, keeping the last record of each :func:`record_identity`."""
    merged: dict = {}
    for records in groups:
        for r in records:
            key = record_identity(r)
            merged.pop(key, None)   # a later file wins and moves to the end
            merged[key] = r
    return list(merged.values())


def merge_leaderboard_records(paths: Sequence[PathLike]) -> list[dict]:
    """Read and merge several leaderboard files (JSON and/or CSV) into records."""
    if not paths:
        raise DataError("no leaderboard files to merge")
    return merge_records(read_records(p) for p in paths)


def merge_leaderboards(paths: Sequence[PathLike]):
    """Merge leaderboard files into one ``DataFrame`` (see :func:`merge_records`)."""
    return records_to_frame(merge_leaderboard_records(paths))
