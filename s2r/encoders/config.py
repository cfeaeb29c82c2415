"""User encoders: inline references and the encoder config file.

Three ways to name one, all usable wherever an encoder id is accepted (``build_encoder``,
``embed_frameset``, ``--encoder`` on the command line):

- inline references (each parsed by its backend, :mod:`s2r.encoders.backends`)::

      timm:convnext_tiny.fb_in1k          timm NAME[.TAG] (default tag pinned when omitted)
      open_clip:ViT-B-32:laion2b_s34b_b79k open_clip MODEL:PRETRAINED
      ckpt:resnet50:/path/to/weights.pth   ARCH:PATH (ARCH: resnet18/34/50/101,
                                           resnet18-gn16, resnet50-fc1024 or a timm name)

- a config file, ``$S2R_ENCODERS`` or ``./s2r_encoders.toml`` (or ``.json``)::

      [[encoders]]
      id = "convnext-t"
      timm = "convnext_tiny.fb_in1k"        # or open_clip = "ViT-B-32:laion2b_s34b_b79k"
      name = "ConvNeXt-T"                   # or checkpoint = "ckpts/my_r50.pth" + arch = "resnet50"
      pretraining_data = "General (ImageNet)"
      training_type = "Supervised"

  JSON: ``{"encoders": [{...}, ...]}``. Relative checkpoint paths are relative to the file.
  Optional fields: every :class:`~s2r.encoders.spec.EncoderSpec` metadata field (name,
  architecture, training_type, pretraining_data, pretraining_group, mean, std, input_size,
  cam_layer, license, notes, ``int8`` to offer CPU int8 embedding) and, for checkpoints,
  ``mapping`` and ``key_paths``. The whole file is checked when it is read, before any model
  is built (:mod:`s2r.encoders.fields`: types, ranges, allowed values; ids unique in the file
  and never a built-in id); a ``dim`` or ``input_size`` the model contradicts is an error too.

- :func:`s2r.encoders.register_encoder` with a spec made by
  :func:`~s2r.encoders.backends.timm.spec_from_timm`,
  :func:`~s2r.encoders.backends.open_clip.spec_from_open_clip` or
  :func:`~s2r.encoders.backends.checkpoint.spec_from_checkpoint`.

``dim`` and ``params_m`` are computed by building the model on PyTorch's meta device (no
memory, no weights; :mod:`s2r.encoders.factory`); the Grad-CAM layer and family are inferred
(override with ``cam_layer``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from s2r.encoders.backend import backend_for_config_key, backend_for_ref, backends
from s2r.encoders.builtins import BUILTIN_SPECS
from s2r.encoders.fields import META_FIELDS, check_fields, id_problem, is_name, source_fields
from s2r.encoders.spec import EncoderSpec
from s2r.encoders.suggest import did_you_mean
from s2r.errors import EncoderError
from s2r.inputs import quoted

CONFIG_NAMES = ("s2r_encoders.toml", "s2r_encoders.json")


def parse_encoder_ref(text: str) -> EncoderSpec:
    """Spec of an inline reference ``timm:NAME``, ``open_clip:MODEL:TAG`` or
    ``ckpt:ARCH:PATH`` (EncoderError with the expected forms otherwise)."""
    kind, _, rest = text.partition(":")
    backend = backend_for_ref(kind.lower().replace("-", "_"))
    spec = backend.parse_ref(rest, text) if backend is not None else None
    if spec is None:
        forms = [b.ref_syntax for b in backends() if b.ref_syntax]
        raise EncoderError(f"cannot read encoder reference {text!r}: expected "
                           f"{', '.join(forms[:-1])} or {forms[-1]} (or a registry id)")
    return spec


# ---------------------------------------------------------------------------------------------
# Config files
# ---------------------------------------------------------------------------------------------

def config_path(path=None, settings=None) -> Optional[Path]:
    """The encoder config file in effect: ``path``, else ``settings.encoders_config``
    (``$S2R_ENCODERS``, when the caller handed settings down), else ``./s2r_encoders.toml`` /
    ``.json`` when present (both present is an error: s2r reads one); ``None`` when there is
    none."""
    origin = "argument"
    if path is None and settings is not None and settings.encoders_config is not None:
        path, origin = settings.encoders_config, "S2R_ENCODERS"
    if path is not None:
        path = Path(path).expanduser()
        if not path.is_file():
            what = f"is {_kind(path)}, not a file" if path.exists() else "does not exist"
            raise EncoderError(f"encoder config {path} {what} (from {origin})")
        return path
    found = [Path(name) for name in CONFIG_NAMES if Path(name).is_file()]
    if len(found) > 1:
        raise EncoderError(f"encoder configs {found[0]} and {found[1]} are both here; s2r "
                           "reads one: merge their entries into one file (or set S2R_ENCODERS "
                           "to the one to use)")
    return found[0] if found else None


def _kind(path: Path) -> str:
    from s2r.encoders.locate import file_kind

    return file_kind(path.stat().st_mode)


def config_target(path=None, settings=None) -> Path:
    """The config file ``train-encoder`` adds its entry to, checked before any training:
    ``path``, else ``settings.encoders_config`` (``$S2R_ENCODERS``; created when missing),
    else the
    ``./s2r_encoders.toml`` / ``.json`` present, else ``./s2r_encoders.toml`` (created).

    An existing file must be a regular file (a link is followed: the file it points to gets
    the entry, the link stays) of at most :data:`CONFIG_MAX_BYTES`; for a missing one, the
    nearest existing folder above it must be a folder. Returns the real path to write.

    Raises
    ------
    EncoderError
        One line naming the path: a folder, a FIFO or a device, a file where a folder should
        be, a name that is too long.
    """
    from s2r.inputs import input_file

    if path is None and settings is not None and settings.encoders_config is not None:
        path = settings.encoders_config
    if path is None:
        path = config_path() or Path(CONFIG_NAMES[0])
    path = Path(path).expanduser()
    try:
        real = Path(os.path.realpath(path))
        if os.path.lexists(path) and not os.path.lexists(real):
            raise EncoderError(f"encoder config {path} is a link to {real}, which does not "
                               "exist")
        if real.exists():
            input_file(real, "encoder config", max_bytes=CONFIG_MAX_BYTES, error=EncoderError)
            return real
        folder = real.parent
        while not folder.exists():
            folder = folder.parent
        if not folder.is_dir():
            raise EncoderError(f"encoder config {path}: {folder} is {_kind(folder)}, not a "
                               "folder")
    except OSError as exc:
        raise EncoderError(f"encoder config {path} cannot be used ({exc.strerror or exc})") \
            from None
    return real


#: The largest encoder config file s2r reads (a file of a thousand entries is ~200 KB).
CONFIG_MAX_BYTES = 4 << 20


def _read_config(path: Path) -> list:
    from s2r.inputs import read_bounded

    raw = read_bounded(path, "encoder config", max_bytes=CONFIG_MAX_BYTES, error=EncoderError)
    try:
        text = raw.decode("utf-8")
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import tomllib

            data = tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # JSON/TOML/UnicodeDecodeError: ValueErrors
        raise EncoderError(f"encoder config {path}: cannot parse "
                           f"({quoted(str(exc) or type(exc).__name__)})") from None
    if isinstance(data, dict):
        unknown = set(data) - {"encoders", "encoder"}
        if unknown:
            raise EncoderError(f"encoder config {path}: unknown top-level key(s) "
                               f"{sorted(unknown)}; expected [[encoders]] entries")
        data = data.get("encoders", data.get("encoder", []))
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        got = "a list of non-tables" if isinstance(data, list) else type(data).__name__
        raise EncoderError(f"encoder config {path}: expected a list of encoder tables "
                           f"([[encoders]] in TOML, a list under \"encoders\" in JSON), got {got}")
    return data


def check_entry(entry: dict, *, where: str) -> tuple:
    """Check one config entry without building anything.

    Returns
    -------
    (encoder_id, kind, fields, where)
        ``kind`` is the backend's ``config_key`` (``"timm"``, ``"open_clip"`` or
        ``"checkpoint"``); ``fields`` the entry
        without ``id``; ``where`` names the entry and its id for later messages.

    Raises
    ------
    EncoderError
        One line naming ``where``, the entry's id and the field: a missing or malformed id,
        not exactly one source, an unknown field, or a field of the wrong type or range
        (:func:`~s2r.encoders.fields.field_rules`).
    """
    entry = dict(entry)
    if "id" not in entry:
        raise EncoderError(f"{where}: missing 'id' (a short name, e.g. \"convnext-t\")")
    if not is_name(entry["id"]):
        check_fields({"id": entry["id"]}, where=where)
    encoder_id = entry.pop("id").strip()
    problem = id_problem(encoder_id)
    if problem is not None:
        raise EncoderError(f"{where}: id {quoted(encoder_id)} {problem}")
    where = f"{where} (id {encoder_id!r})"
    keys = [b.config_key for b in backends() if b.config_key]
    sources = [k for k in keys if k in entry]
    if len(sources) != 1:
        raise EncoderError(f"{where}: give exactly one of {', '.join(repr(k) for k in keys)} "
                           f"(got {sources or 'none'})")
    allowed = META_FIELDS + source_fields()
    unknown = sorted(set(entry) - set(allowed))
    if unknown:
        hint = did_you_mean(unknown[0], allowed, n=3)
        raise EncoderError(f"{where}: unknown field(s) {unknown}; allowed: "
                           f"{', '.join(allowed)}. {hint}")
    backend = backend_for_config_key(sources[0])
    for other in backends():
        bad = [k for k in other.config_fields if k in entry]
        if other is not backend and bad:
            raise EncoderError(f"{where}: {bad} only apply to {other.config_key} entries")
    backend.check_entry(entry, where)
    check_fields(entry, where=where)
    return encoder_id, sources[0], entry, where


def spec_from_entry(entry: dict, *, where: str, base_dir: Path = Path(".")) -> EncoderSpec:
    """One config entry (a dict) -> :class:`EncoderSpec` (checked by :func:`check_entry`)."""
    return _spec_from_checked(check_entry(entry, where=where), base_dir)


def _spec_from_checked(checked: tuple, base_dir: Path) -> EncoderSpec:
    encoder_id, kind, entry, where = checked
    try:
        return _spec_from_fields(dict(entry), kind, encoder_id, where, base_dir)
    except EncoderError as exc:
        if where in str(exc):
            raise
        raise EncoderError(f"{where}: {exc}") from None


def _spec_from_fields(entry: dict, kind: str, encoder_id: str, where: str,
                      base_dir: Path) -> EncoderSpec:
    fields = {**entry, "source": where}
    value = fields.pop(kind)
    return backend_for_config_key(kind).spec_from_entry(value, fields, id=encoder_id,
                                                        base_dir=base_dir)


def _clash(encoder_id: str, taken: dict) -> Optional[str]:
    """Why ``encoder_id`` cannot be used (``taken``: id -> source of the entry holding it),
    or ``None``. An id that differs from a taken one only in case is taken too (``PIXELS``:
    on a case-insensitive disk their weights files would be one file)."""
    if encoder_id not in taken:
        same = [i for i in taken if i.casefold() == encoder_id.casefold()]
        if not same:
            return None
        what = "a built-in encoder" if taken[same[0]] == "builtin" else "registered"
        return (f"id {quoted(encoder_id)} differs only in case from {same[0]!r}, which is "
                f"{what}; choose another id")
    if taken[encoder_id] == "builtin":
        return (f"id {encoder_id!r} is a built-in encoder; built-in ids cannot be redefined: "
                "choose another id")
    return (f"id {encoder_id!r} is already registered with register_encoder (source "
            f"{taken[encoder_id]!r}); choose another id")


def check_encoder_config(path=None, *, taken: Optional[dict] = None, settings=None) -> list:
    """Read and check the config file in effect (see :func:`config_path`) without building
    any model: every entry's fields (:func:`check_entry`) and its id, which must be unique in
    the file and not in ``taken``.

    Parameters
    ----------
    path : str or Path, optional
        The config file (default: the one in effect, :func:`config_path`).
    taken : dict, optional
        Ids already in use -> their ``source`` (``"builtin"`` for built-in entries); default:
        the built-in ids.
    settings : s2r.settings.Settings, optional
        Handed down by the caller: ``settings.encoders_config`` is the file in effect.

    Returns
    -------
    list of tuple
        :func:`check_entry`'s result per entry, in file order; ``[]`` without a config.
    """
    found = config_path(path, settings)
    if found is None:
        return []
    taken = {i: "builtin" for i in BUILTIN_SPECS} if taken is None else taken
    checked, first = [], {}
    for i, entry in enumerate(_read_config(found)):
        where = f"encoder config {found} entry {i + 1}"
        result = check_entry(entry, where=where)
        encoder_id = result[0]
        clash = _clash(encoder_id, taken)
        if clash is not None:
            raise EncoderError(f"{result[3]}: {clash}")
        if encoder_id in first:
            raise EncoderError(f"{result[3]}: id {encoder_id!r} is already used by entry "
                               f"{first[encoder_id]} of the same file; ids must be unique")
        first[encoder_id] = i + 1
        checked.append(result)
    return checked


def load_encoder_config(path=None, *, taken: Optional[dict] = None, settings=None) -> list:
    """The user encoders of the config file in effect (see :func:`config_path`); ``[]``
    when there is none. The whole file is checked first (:func:`check_encoder_config`), so a
    bad field or id fails before any model is built. Errors name the file, the entry and the
    field."""
    found = config_path(path, settings)
    if found is None:
        return []
    return [_spec_from_checked(checked, found.parent)
            for checked in check_encoder_config(found, taken=taken)]
