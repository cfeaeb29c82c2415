"""The encoder spec: one frozen record per encoder, its fields grouped by what they describe.

Modelled on timm's ``default_cfgs``: an encoder is *data*. An :class:`EncoderSpec` is its id
plus five small frozen groups, each built with keyword arguments only (so two fields cannot be
swapped by position):

================= ================ ==========================================================
group             class            fields
================= ================ ==========================================================
``facts``         :class:`TableFacts`  the paper's Table I (and the score scatter): name,
                                   table_number, architecture, training_type,
                                   pretraining_data, pretraining_group, params_m,
                                   paper_params_m, license, notes
``build``         :class:`BuildSpec`   backend, identifier, tag, model_kwargs, dim, int8,
                                   layer
``weights``       :class:`WeightsSpec` checkpoint, hub_repo, hub_files, random_init, seed
``preprocessing`` :class:`Preprocessing` mean, std, input_size
``cam``           :class:`CamSpec`     family (the activation layout), layer (``cam_layer``)
================= ================ ==========================================================

Every field of every group is also a read-only attribute of the spec under its flat name
(``spec.name``, ``spec.dim``, ``spec.cam_layer``...), and ``EncoderSpec(...)`` /
``dataclasses.replace(spec, ...)`` accept the flat names as keywords too (they update the
group that holds them). Whatever depends on the backend (``pretrained_name``,
``weights_file``, ``has_image_model``, consistency checks) is asked of the backend registered
under ``spec.backend`` (:mod:`s2r.encoders.backend`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from s2r.encoders.backend import backend_names, get_backend
from s2r.errors import EncoderError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
INCEPTION_MEAN = (0.5, 0.5, 0.5)
INCEPTION_STD = (0.5, 0.5, 0.5)
OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

ARCHITECTURES = ("CNN", "Transformer", "Pixels", "State")
FAMILIES = ("cnn", "vit", "swin", "clip", "pixels", "state")
PRETRAINING_GROUPS = ("general", "manipulation", "none")
RANDOM_SUFFIX = "@random"
#: Separates an encoder's id from one of its layers in a layer encoder's id (``BASE@LAYER``).
LAYER_MARK = "@"
RANDOM_SEED = 0


@dataclass(frozen=True)
class CheckpointSpec:
    """Where a released checkpoint comes from and how its keys map onto our architecture.

    Attributes
    ----------
    file : str
        File name expected in the weights folder (``S2R_WEIGHTS_DIR``), or an absolute path
        (user encoders).
    url : str
        Where to download it (shown in messages; s2r never downloads these itself).
    key_paths : tuple of str
        Where the state_dict sits inside the file, tried in order; ``""`` is the file's top
        level, ``"a.b"`` is ``ckpt["a"]["b"]``; empty: the mapping's defaults.
    mapping : str
        Name of the key mapping in :data:`s2r.encoders.checkpoints.MAPPINGS`.
    arch : str
        Architecture to build (:data:`s2r.encoders.backends.checkpoint.CHECKPOINT_ARCHS` or a
        timm name).
    how : str
        Extra instructions (e.g. which member of a zip to extract and rename).
    """

    file: str
    url: str
    key_paths: tuple = ()
    mapping: str = "auto"
    arch: str = ""
    how: str = ""


@dataclass(frozen=True, kw_only=True)
class TableFacts:
    """What the paper's Table I says (corrected where it is wrong) and the scatter encodes.

    Attributes
    ----------
    name : str
        Display name (the paper's wording for Table I entries).
    table_number : int or None
        Number in the paper's Table I (``None`` for encoders not in the paper and for
        random-init controls).
    architecture : str
        ``"CNN"``, ``"Transformer"``, ``"Pixels"`` (the raw-pixel baseline) or ``"State"``
        (the robot-state reference).
    training_type, pretraining_data : str
        The paper's wording ("Supervised", "General (ImageNet)", "Manipulation", ...).
    pretraining_group : str
        ``"general"``, ``"manipulation"`` (the scatter's marker shape) or ``"none"`` (random
        init, pixels, state).
    params_m : float
        Parameters (millions) of the embedding module, computed from the built model.
    paper_params_m : float or None
        The parameter count printed in Table I.
    license : str
        Licence of the pretrained weights.
    notes : str
        Where Table I is wrong, caveats, provenance.
    """

    name: str
    table_number: Optional[int] = None
    architecture: str
    training_type: str
    pretraining_data: str
    pretraining_group: str
    params_m: float
    paper_params_m: Optional[float] = None
    license: str = ""
    notes: str = ""


@dataclass(frozen=True, kw_only=True)
class BuildSpec:
    """Which library builds the model and what it outputs.

    Attributes
    ----------
    backend : str
        A registered backend: ``"timm"``, ``"open_clip"``, ``"checkpoint"``, ``"pixels"``,
        ``"package"`` or ``"state"`` (the FrameSet's state, no model).
    identifier : str
        timm architecture, open_clip model name, or package model name.
    tag : str or None
        Pinned pretrained tag (timm ``arch.tag``; open_clip ``pretrained``).
    model_kwargs : tuple of (str, value) pairs
        Extra keyword arguments of the model constructor (``img_size=224`` for DinoV2).
    dim : int or None
        Embedding dimension D of ``forward``/``embed``; ``None`` when it depends on the
        dataset (``state``: the FrameSet's state width S).
    int8 : bool
        CPU int8 embedding (``precision="int8"``, :mod:`s2r.encoders.quantize`) is offered:
        set for the ResNet/VGG-type CNNs where it was measured to be faster
        (``bench/bench_embed.py``); depthwise CNNs (MobileNet, EfficientNet) gain nothing and
        transformers are not quantized.
    layer : str or None
        A layer encoder (id ``BASE@LAYER``): the name of the tap of the architecture
        (:mod:`s2r.encoders.taps`, what ``score --layers`` names) whose pooled output is the
        embedding, ``dim`` its width; ``None``: the architecture's own embedding.
    """

    backend: str
    identifier: str
    tag: Optional[str] = None
    model_kwargs: tuple = ()
    dim: Optional[int]
    int8: bool = False
    layer: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class WeightsSpec:
    """Where the weights come from.

    Attributes
    ----------
    checkpoint : CheckpointSpec or None
        Released checkpoint (``backend == "checkpoint"``).
    hub_repo : str or None
        Hugging Face repo the hub library downloads the weights from (timm, open_clip).
    hub_files : tuple of str
        File names inside ``hub_repo``, preferred first.
    random_init : bool
        Weights are a seeded random initialisation (a control, never pretrained).
    seed : int
        Seed of the random initialisation (``random_init`` entries).
    """

    checkpoint: Optional[CheckpointSpec] = None
    hub_repo: Optional[str] = None
    hub_files: tuple = ()
    random_init: bool = False
    seed: int = RANDOM_SEED


@dataclass(frozen=True, kw_only=True)
class Preprocessing:
    """How frames are resized and normalised.

    Attributes
    ----------
    mean, std : tuple of 3 floats
        Per-channel normalisation applied to pixels scaled to [0, 1].
    input_size : (int, int)
        (height, width) every frame is resized to (antialiased, no crop).
    """

    mean: tuple = IMAGENET_MEAN
    std: tuple = IMAGENET_STD
    input_size: tuple = (224, 224)


@dataclass(frozen=True, kw_only=True)
class CamSpec:
    """Where Grad-CAM reads and how the activations there are laid out.

    Attributes
    ----------
    family : str
        ``"cnn"`` (B,C,h,w), ``"vit"`` (B,N,C, timm), ``"swin"`` (B,h,w,C), ``"clip"``
        (B,N,C, open_clip), ``"pixels"`` (no layer), ``"state"`` (no image model at all).
    layer : str or None
        Dotted path of the Grad-CAM layer inside ``Encoder.model`` (``-1`` indexes the last
        child), e.g. ``"layer4.-1"``, ``"blocks.-1.norm1"`` (``spec.cam_layer``).
    """

    family: str
    layer: Optional[str] = None


#: Flat field name -> (group, field in the group), in the order of :meth:`EncoderSpec.to_dict`
#: (``id``, ``base_id`` and ``source`` are the spec's own fields).
FLAT_FIELDS = {
    "id": (None, "id"), "name": ("facts", "name"), "table_number": ("facts", "table_number"),
    "architecture": ("facts", "architecture"), "family": ("cam", "family"),
    "training_type": ("facts", "training_type"),
    "pretraining_data": ("facts", "pretraining_data"),
    "pretraining_group": ("facts", "pretraining_group"), "params_m": ("facts", "params_m"),
    "dim": ("build", "dim"), "backend": ("build", "backend"),
    "identifier": ("build", "identifier"), "tag": ("build", "tag"),
    "checkpoint": ("weights", "checkpoint"), "mean": ("preprocessing", "mean"),
    "std": ("preprocessing", "std"), "input_size": ("preprocessing", "input_size"),
    "cam_layer": ("cam", "layer"), "random_init": ("weights", "random_init"),
    "hub_repo": ("weights", "hub_repo"), "hub_files": ("weights", "hub_files"),
    "model_kwargs": ("build", "model_kwargs"), "license": ("facts", "license"),
    "notes": ("facts", "notes"), "paper_params_m": ("facts", "paper_params_m"),
    "seed": ("weights", "seed"), "base_id": (None, "base_id"), "source": (None, "source"),
    "int8": ("build", "int8"), "layer": ("build", "layer"),
}
_GROUPS = {"facts": TableFacts, "build": BuildSpec, "weights": WeightsSpec,
           "preprocessing": Preprocessing, "cam": CamSpec}


class _Flat:
    """Read-only flat attribute backed by a group field (``spec.dim`` is ``spec.build.dim``)."""

    def __set_name__(self, owner, name):
        self.group, self.field = FLAT_FIELDS[name]

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(getattr(obj, self.group), self.field)


@dataclass(frozen=True, init=False, repr=False)
class EncoderSpec:
    """One encoder: its id, where it came from, and the five groups of the module docstring.

    Parameters
    ----------
    id : str
        Registry id (``clip-base-16``, ``resnet18@random``, ``efficientnet-lite0@blocks.4``,
        ``timm:convnext_tiny``).
    facts, build, weights, preprocessing, cam
        The groups (:class:`TableFacts`, :class:`BuildSpec`, :class:`WeightsSpec`,
        :class:`Preprocessing`, :class:`CamSpec`); ``weights``, ``preprocessing`` default
        to their defaults.
    base_id : str or None
        For ``@random`` entries: the id of the pretrained entry; for layer encoders
        (``BASE@LAYER``): ``BASE``.
    source : str
        ``"builtin"`` or where a user entry came from (config file, command line).
    **flat
        Any field of a group by its flat name (``dim=512``, ``cam_layer="layer4.-1"``): it
        replaces that field of the group given (or builds the group from flat names alone).

    Raises
    ------
    EncoderError
        A value outside its allowed set, malformed mean/std/input_size, or a spec its backend
        rejects (a ``checkpoint`` backend without a checkpoint).
    TypeError
        Positional arguments, unknown names, or a group missing a required field.
    """

    id: str
    facts: TableFacts
    build: BuildSpec
    weights: WeightsSpec
    preprocessing: Preprocessing
    cam: CamSpec
    base_id: Optional[str] = None
    source: str = "builtin"

    # the groups' fields under their flat names (one descriptor each)
    name, table_number, architecture, training_type = _Flat(), _Flat(), _Flat(), _Flat()
    pretraining_data, pretraining_group, params_m = _Flat(), _Flat(), _Flat()
    paper_params_m, license, notes = _Flat(), _Flat(), _Flat()
    backend, identifier, tag, model_kwargs, dim, int8, layer = (
        _Flat(), _Flat(), _Flat(), _Flat(), _Flat(), _Flat(), _Flat())
    checkpoint, hub_repo, hub_files, random_init, seed = (_Flat(), _Flat(), _Flat(), _Flat(),
                                                          _Flat())
    mean, std, input_size = _Flat(), _Flat(), _Flat()
    family, cam_layer = _Flat(), _Flat()

    def __init__(self, *, id: str, facts: Optional[TableFacts] = None,
                 build: Optional[BuildSpec] = None, weights: Optional[WeightsSpec] = None,
                 preprocessing: Optional[Preprocessing] = None, cam: Optional[CamSpec] = None,
                 base_id: Optional[str] = None, source: str = "builtin", **flat):
        given = {"facts": facts, "build": build, "weights": weights,
                 "preprocessing": preprocessing, "cam": cam}
        changes: dict = {group: {} for group in _GROUPS}
        for key, value in flat.items():
            group, field = FLAT_FIELDS.get(key, (None, None))
            if group is None:
                raise TypeError(f"EncoderSpec.__init__() got an unexpected keyword argument "
                                f"{key!r}")
            changes[group][field] = value
        object.__setattr__(self, "id", id)
        for group, cls in _GROUPS.items():
            if given[group] is None:
                value = cls(**changes[group])
            elif not isinstance(given[group], cls):
                raise TypeError(f"EncoderSpec {group} must be a {cls.__name__}, got "
                                f"{type(given[group]).__name__}")
            else:
                value = dataclasses.replace(given[group], **changes[group])
            object.__setattr__(self, group, value)
        object.__setattr__(self, "base_id", base_id)
        object.__setattr__(self, "source", source)
        self._check()

    def _check(self) -> None:
        checks = (("architecture", ARCHITECTURES), ("family", FAMILIES),
                  ("backend", backend_names()), ("pretraining_group", PRETRAINING_GROUPS))
        for name, allowed in checks:
            value = getattr(self, name)
            if value not in allowed:
                raise EncoderError(f"encoder {self.id!r}: {name} must be one of {allowed}, "
                                   f"got {value!r}")
        normalised = {}
        for name in ("mean", "std"):
            value = tuple(float(v) for v in getattr(self, name))
            if len(value) != 3 or (name == "std" and min(value) <= 0):
                raise EncoderError(f"encoder {self.id!r}: {name} must be 3 numbers"
                                   f"{' > 0' if name == 'std' else ''}, got {value!r}")
            normalised[name] = value
        size = tuple(int(v) for v in self.input_size)
        if len(size) != 2 or min(size) < 1:
            raise EncoderError(f"encoder {self.id!r}: input_size must be (height, width), "
                               f"got {self.input_size!r}")
        object.__setattr__(self, "preprocessing", dataclasses.replace(
            self.preprocessing, input_size=size, **normalised))
        get_backend(self.backend).check_spec(self)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in FLAT_FIELDS)
        return f"EncoderSpec({fields})"

    @property
    def pretrained_name(self) -> str:
        """``identifier.tag`` (timm) / ``identifier:tag`` (open_clip) / ``identifier``."""
        return get_backend(self.backend).pretrained_name(self)

    @property
    def has_image_model(self) -> bool:
        """Whether the embedding is computed from the frames by a model that can be built
        (and explained by saliency); False for the ``state`` reference."""
        return get_backend(self.backend).image_model

    @property
    def weights_file(self) -> Optional[str]:
        """File name s2r looks for in the weights folder (``None``: needs no file)."""
        if self.random_init:
            return None
        return get_backend(self.backend).weights_file(self)

    def to_dict(self) -> dict:
        """JSON-ready dict of every field by its flat name (the CLI's ``encoders --json``
        adds ``status``)."""
        out = {name: getattr(self, name) for name in FLAT_FIELDS}
        out["input_size"] = list(self.input_size)
        out["mean"], out["std"] = list(self.mean), list(self.std)
        out["model_kwargs"] = dict(self.model_kwargs)
        out["hub_files"] = list(self.hub_files)
        if self.checkpoint is not None:
            out["checkpoint"] = dataclasses.asdict(self.checkpoint)
            out["checkpoint"]["key_paths"] = list(self.checkpoint.key_paths)
        return out


def file_stem(encoder_id: str) -> str:
    """A file-name-safe version of an encoder id (``timm:a/b.c`` -> ``timm_a_b.c``)."""
    return "".join(c if (c.isalnum() or c in "-_.") else "_" for c in encoder_id)
