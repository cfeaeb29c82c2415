"""Field rules of user encoders: what each field of a config entry (or keyword of a spec
factory) must be, checked before any model is built.

:data:`FIELD_RULES` holds the rules of the fields every user encoder takes (its id and the
metadata of :class:`~s2r.encoders.spec.EncoderSpec`); each backend adds the rules of its own
fields (``timm``, ``open_clip``, ``checkpoint``, ``arch``, ``mapping``, ``key_paths``) as
``Backend.field_rules``; :func:`field_rules` is the union.
"""

from __future__ import annotations

import math

from s2r.encoders.backend import backends
from s2r.encoders.spec import LAYER_MARK, PRETRAINING_GROUPS, RANDOM_SUFFIX
from s2r.errors import EncoderError

#: Values of the enum fields a user encoder may take (``Pixels``/``State`` and their families
#: are the built-in baselines', not an image model's).
USER_ARCHITECTURES = ("CNN", "Transformer")
USER_FAMILIES = ("cnn", "vit", "swin", "clip")
#: Metadata fields a config entry or spec factory may set.
META_FIELDS = ("name", "architecture", "family", "training_type", "pretraining_data",
               "pretraining_group", "mean", "std", "input_size", "cam_layer", "license",
               "notes", "dim", "params_m", "int8")
#: Further spec fields the spec factories accept as keywords (not in config files).
FACTORY_FIELDS = ("table_number", "tag", "source", "seed", "model_kwargs")


#: The longest encoder id a config file or spec factory may give (``train-encoder`` names are
#: shorter still: :data:`s2r.pipeline.train_encoder.NAME_MAX_LENGTH`).
ID_MAX_LENGTH = 100
#: Characters an id may not hold: ``,`` separates ids in ``--encoders`` lists and links,
#: ``* ? [ ]`` are the wildcards of ``--encoders`` patterns.
ID_FORBIDDEN = ",*?[]"


def id_problem(text: str, *, max_length: int = ID_MAX_LENGTH):
    """Why ``text`` (already stripped) cannot be an encoder id, or ``None``: empty, longer
    than ``max_length``, whitespace or control characters, ``,`` or a wildcard, ``:`` (the
    mark of inline references, ``timm:NAME``) or ``@`` (the mark of ``ID@random`` and of
    layer encoders, ``ID@LAYER``)."""
    if not text:
        return "is empty"
    if len(text) > max_length:
        return f"is {len(text):,} characters long; ids are at most {max_length}"
    if any(c.isspace() or not c.isprintable() for c in text):
        return "may not contain whitespace or control characters"
    if "," in text:
        return "may not contain ',' (it separates ids in --encoders lists)"
    if any(c in ID_FORBIDDEN for c in text):
        return "may not contain the wildcards * ? [ ] (they select ids in --encoders patterns)"
    if ":" in text:
        return "may not contain ':' (it marks inline references such as timm:NAME)"
    if text.endswith(RANDOM_SUFFIX):
        return f"may not end in {RANDOM_SUFFIX} (the random-init controls' suffix)"
    if LAYER_MARK in text:
        return (f"may not contain {LAYER_MARK!r} (it marks ID{RANDOM_SUFFIX} controls and "
                f"layer encoders, ID{LAYER_MARK}LAYER)")
    return None


def is_number(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def is_positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def is_text(value) -> bool:
    return isinstance(value, str)


def is_name(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def one_of(allowed):
    return lambda value: isinstance(value, str) and value in allowed


def triple(positive: bool):
    return lambda value: (isinstance(value, (list, tuple)) and len(value) == 3
                          and all(is_number(v) and (v > 0 or not positive) for v in value))


def is_size(value) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) == 2
            and all(map(is_positive_int, value)))


def is_text_list(value) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def choices(allowed) -> str:
    return "one of " + ", ".join(repr(a) for a in allowed)


#: field -> (check, what it must be), for the fields of every user encoder. Checked when a
#: config file is read (before any model is built) and by the spec factories.
FIELD_RULES = {
    "id": (lambda v: is_name(v) and id_problem(v.strip()) is None,
           f'a non-empty string of at most {ID_MAX_LENGTH} characters without whitespace, '
           '",", ":" or wildcards, e.g. "convnext-t"'),
    "name": (is_name, "a non-empty string"),
    "architecture": (one_of(USER_ARCHITECTURES), choices(USER_ARCHITECTURES)),
    "family": (one_of(USER_FAMILIES), choices(USER_FAMILIES)),
    "training_type": (is_text, 'a string, e.g. "Supervised"'),
    "pretraining_data": (is_text, 'a string, e.g. "General (ImageNet)"'),
    "pretraining_group": (one_of(PRETRAINING_GROUPS), choices(PRETRAINING_GROUPS)),
    "mean": (triple(False), "3 numbers, e.g. [0.485, 0.456, 0.406]"),
    "std": (triple(True), "3 numbers > 0, e.g. [0.229, 0.224, 0.225]"),
    "input_size": (is_size, "[height, width], two positive integers, e.g. [224, 224]"),
    "cam_layer": (is_name, 'a dotted layer path, e.g. "layer4.-1"'),
    "license": (is_text, "a string"),
    "notes": (is_text, "a string"),
    "dim": (is_positive_int, "a positive integer (the embedding width; computed when left "
                             "out)"),
    "params_m": (lambda v: is_number(v) and v >= 0, "a number >= 0 (millions of parameters)"),
    "int8": (lambda v: isinstance(v, bool), "true or false"),
}


def field_rules() -> dict:
    """:data:`FIELD_RULES` plus every registered backend's ``field_rules``."""
    rules = dict(FIELD_RULES)
    for backend in backends():
        rules.update(backend.field_rules)
    return rules


def source_fields() -> tuple:
    """Config fields that name a model and its backend's extra fields, then ``id``:
    ``timm, open_clip, checkpoint, arch, mapping, key_paths, id``."""
    keys = tuple(b.config_key for b in backends() if b.config_key)
    extra = tuple(f for b in backends() for f in b.config_fields)
    return keys + extra + ("id",)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_fields(fields: dict, *, where: str) -> None:
    """Raise EncoderError (one line: ``where``, the field, what it must be, what it got) for
    the first field of ``fields`` that breaks :func:`field_rules`; other names pass."""
    rules = field_rules()
    for key, value in fields.items():
        rule = rules.get(key)
        if rule is not None and not rule[0](value):
            raise EncoderError(f"{where}: field {key!r} must be {rule[1]}; got {_show(value)}")


def check_meta_fields(fields: dict, *, where: str) -> dict:
    """``fields`` if every name is a metadata field (or a factory keyword), else an
    EncoderError listing the allowed names."""
    unknown = set(fields) - set(META_FIELDS) - set(FACTORY_FIELDS)
    if unknown:
        raise EncoderError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: "
                           f"{', '.join(META_FIELDS + source_fields())}")
    return fields
