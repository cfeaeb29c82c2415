"""Dataset formats as plug-ins: the :class:`Format` protocol, the one sim/real join
(:func:`join_domains`) and the one way a spec finds its format (:func:`parse_with`).

A format is one module that defines a :class:`Format` and one line in
:data:`s2r.datasets.FORMATS`. Two shapes fit the one protocol:

- a **single-spec** format (:class:`Format`): one spec names both domains (the s2r folder
  layout; the built-in demo): ``load`` returns both;
- a **pair** format (:class:`PairFormat`): ``SIM REAL``, one file or folder per domain
  (FurnitureBench, robomimic, LeRobot): it loads one domain (``load_domain``) and
  :func:`join_domains` makes the dataset, the same join for every pair format.

=====================  ===========================================================================
protocol               meaning
=====================  ===========================================================================
``name``               the spec's kind: ``parse_spec(spec)["kind"]``, ``FrameSet.source["kind"]``
``pair``               True for ``SIM REAL`` formats
``keys_label``         what messages call it when it takes ``image_key`` / ``action_key`` /
                       ``state_key`` (``"HDF5 files"``); None: it takes none
``claims(part)``       whether one spec string or path is of this format: a word, a prefix, a
                       file name, a marker file; cheap, never reads data, never raises
``parse(parts)``       check the spec (existence, form) without loading; the parsed dict
``load(parsed, req)``  the FrameSet, both domains (:class:`LoadRequest`: keys, progress,
                       settings)
``identity(parsed,     bytes that change whenever a file of the dataset changes (sizes and
settings)``            times, :mod:`s2r.identity`), without loading
``load_domain(...)``   (pair) one domain as a single-domain FrameSet
``source(...)``        (pair) the format's fields of the joined ``FrameSet.source``
=====================  ===========================================================================

**Detection order** is the order of :data:`s2r.datasets.FORMATS`: the first format that claims
a part wins: the word ``demo`` first, then file names by extension (``.zarr``, ``.zarr.zip``,
``.hdf5``, ``.h5``), then LeRobot's ``hf:`` prefix and marker file (``meta/info.json``), and
the folder layout last: it claims any single path. A name is looked at before what a folder
holds (a ``.zarr`` folder that holds ``meta/info.json`` is a zarr store). For two parts only
pair formats are asked, and both parts must be claimed by the same one.

**The state** (``state_key``, one rule for every pair format): ``None`` is the format's usual
state, kept when both domains have it; ``""`` is no state at all (pairing by actions);
``"a,b"`` names keys or columns, concatenated in that order, required in both domains. States
of different widths are refused by :func:`join_domains`: one line naming both widths, both
places and ``--state-key``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from s2r.datasets._checks import (
    check_same_frame_size, check_same_state_width, existing_path, place, warn_if_signal_like,
)
from s2r.errors import DataError
from s2r.frameset import FrameSet, concat_domains


@dataclass(frozen=True)
class LoadRequest:
    """What a caller asks of a load, besides the spec.

    Attributes
    ----------
    image_key, action_key, state_key : str or None
        The user's choice of camera, action and state (None: the format's default; see the
        module docstring for ``state_key``).
    progress : ProgressCallback or None
        Reported by formats that render (the demo); file formats read no pixels while loading.
    settings : s2r.settings.Settings or None
        What a format that reaches outside the files needs (the Hugging Face hub cache and
        offline mode for ``hf:`` datasets); handed down by the caller, never read here.
    """

    image_key: Optional[str] = None
    action_key: Optional[str] = None
    state_key: Optional[str] = None
    progress: Any = None
    settings: Any = None

    @property
    def keys(self) -> dict:
        return {"image_key": self.image_key, "action_key": self.action_key,
                "state_key": self.state_key}

    @property
    def state_columns(self) -> Optional[list]:
        """The state keys asked for: None (the format's default), ``[]`` (no state: ``""``), or
        the comma-separated names, stripped."""
        if self.state_key is None:
            return None
        return [k.strip() for k in str(self.state_key).split(",") if k.strip()]


class Format:
    """A dataset format that one spec names whole (both domains); see the module docstring."""

    name: str = ""
    pair: bool = False
    keys_label: Optional[str] = None

    def names_kind(self, kind: str) -> bool:
        """Whether ``kind`` (a parsed spec's) is this format's (its :attr:`name`)."""
        return kind == self.name

    def claims(self, part) -> bool:
        raise NotImplementedError

    def parse(self, parts: tuple) -> dict:
        raise NotImplementedError

    def load(self, parsed: dict, request: LoadRequest) -> FrameSet:
        raise NotImplementedError

    def identity(self, parsed: dict, settings=None) -> bytes:
        raise NotImplementedError


def path_identity(path) -> bytes:
    """The storage identity of one file or folder (every file below a folder)."""
    from s2r.identity import files_identity, tree_identity

    return tree_identity(path) if Path(path).is_dir() else files_identity([path])


class PairFormat(Format):
    """A ``SIM REAL`` format: one file or folder per domain, joined by :func:`join_domains`.

    Attributes
    ----------
    one : str
        One part alone, in messages (``"robomimic file"``: "is one robomimic file; give two").
    units : str
        The parts, plural, in messages (``"files"``: "both files need the same action layout").
    hint : str
        How its parts are recognised, in the list of pair forms (``".hdf5/.h5 (robomimic)"``).
    default_action_key, default_state_key : str
        The actions and the usual state (kept when both domains have it) when the request
        names none, as messages name them.
    """

    pair = True
    one: str = ""
    units: str = "files"
    hint: str = ""
    default_action_key: str = "actions"
    default_state_key: str = "state"

    # -- the spec --------------------------------------------------------------------------
    def example(self, part) -> str:
        """A pair of the same form as ``part``, for the message about one part alone."""
        suffix = Path(str(part)).suffix
        return f"sim{suffix} real{suffix}"

    def alone(self, part) -> DataError:
        """The error for one part of this format given alone."""
        return DataError(f"{str(part)!r} is one {self.one}; give two, SIM REAL (e.g. "
                         f"{self.example(part)}), one per domain")

    def partner_error(self, good: str, bad: str) -> Optional[DataError]:
        """The error for a part of this format (``good``) beside one no pair format claims
        (``bad``, which exists); None: the list of pair forms."""
        return None

    def parse(self, parts: tuple) -> dict:
        sim, real = (str(p) for p in parts)
        existing_path(sim, f"sim {self.name} file")
        existing_path(real, f"real {self.name} file")
        return {"kind": self.name, "sim": sim, "real": real}

    # -- loading -----------------------------------------------------------------------------
    def load_domain(self, path, domain: str, request: LoadRequest, shared: dict) -> FrameSet:
        """One domain's frames as a single-domain FrameSet (pixels stay on disk); ``shared``
        is one dict for both domains (e.g. a decoded-chunk budget)."""
        raise NotImplementedError

    def action_key(self, request: LoadRequest) -> str:
        """The action key in effect."""
        return request.action_key or self.default_action_key

    def images_label(self, request: LoadRequest) -> str:
        """What the frame-size message calls the images (``"camera 'agentview' images"``)."""
        return "images"

    def state_label(self, request: LoadRequest) -> str:
        """The state in effect, as the width message names it."""
        columns = request.state_columns
        return ",".join(columns) if columns else self.default_state_key

    def source(self, parsed: dict, sim: FrameSet, real: FrameSet, request: LoadRequest) -> dict:
        """The joined FrameSet's ``source`` (``kind``, ``sim``, ``real`` and the format's own
        fields)."""
        return {"kind": self.name, "sim": str(Path(parsed["sim"]).resolve()),
                "real": str(Path(parsed["real"]).resolve())}

    def load(self, parsed: dict, request: LoadRequest) -> FrameSet:
        shared: dict = {}
        sim = self.load_domain(parsed["sim"], "sim", request, shared)
        real = self.load_domain(parsed["real"], "real", request, shared)
        return join_domains(self, parsed, sim, real, request)

    def locate(self, part: str, settings=None) -> str:
        """The local path of a part for :meth:`identity` (a hub id: its cached copy)."""
        return part

    def identity(self, parsed: dict, settings=None) -> bytes:
        from s2r.identity import digest

        paths = [self.locate(parsed[d], settings) for d in ("sim", "real")]
        return digest(self.name, *(digest(p) if p.startswith("hf:") else path_identity(p)
                                   for p in paths))


def join_domains(fmt: PairFormat, parsed: dict, sim: FrameSet, real: FrameSet,
                 request: LoadRequest) -> FrameSet:
    """The one sim/real join of every pair format.

    Checks, each one line naming both places (``sim (PATH)``, ``real (PATH)``): the same frame
    size, the same action width, and the same state width (:func:`check_same_state_width`:
    both widths and ``--state-key``; never a silent drop); warns once when the action key looks
    like a reward or done signal. Then sim frames first, real episode ids after the sim ones
    (:func:`~s2r.frameset.concat_domains`); the state is kept when both domains have one;
    action names only when both domains give the same ones (else ``a0, a1, ...``).

    Returns
    -------
    FrameSet
        Both domains; ``source`` from ``fmt.source(...)``.
    """
    sim_label, real_label = place("sim", parsed["sim"]), place("real", parsed["real"])
    check_same_frame_size({sim_label: sim.image_shape, real_label: real.image_shape},
                          fmt.images_label(request))
    action_key = fmt.action_key(request)
    if sim.action_dim != real.action_dim:
        raise DataError(f"{action_key!r} is {sim.action_dim}-D in {sim_label} but "
                        f"{real.action_dim}-D in {real_label}; both {fmt.units} need the same "
                        "action layout")
    check_same_state_width(fmt.state_label(request), {sim_label: sim.state,
                                                      real_label: real.state})
    warn_if_signal_like(action_key, {sim_label: (sim.actions, sim.episode),
                                     real_label: (real.actions, real.episode)})
    name = sim.name if sim.name == real.name else f"{sim.name}+{real.name}"
    fs = concat_domains(sim, real, name=name, source=fmt.source(parsed, sim, real, request))
    if sim.action_names != real.action_names:  # e.g. only one file names its actions
        fs.action_names = [f"a{j}" for j in range(fs.action_dim)]
    return fs


# ----------------------------------------------------------------------------- the spec
def spec_parts(spec) -> tuple:
    """A spec as a tuple of 1-2 parts: strings, or a :class:`~pathlib.Path` given as such (a
    Path is always a path, never a word such as ``demo``)."""
    if isinstance(spec, (list, tuple)):
        parts = tuple(str(s) for s in spec)
        if len(parts) not in (1, 2):
            raise DataError(f"a dataset is 'demo', one folder, or two files SIM REAL; got "
                            f"{len(parts)} paths: {list(parts)}")
        return parts
    if not isinstance(spec, (str, Path)):
        raise DataError(f"a dataset spec is a string or a list of 1-2 paths, got "
                        f"{type(spec).__name__}")
    return (spec,)


def parse_with(formats: Sequence[Format], spec) -> dict:
    """Parse ``spec`` with the first of ``formats`` that claims it (see the module docstring
    for the order); the parsed dict of that format."""
    parts = spec_parts(spec)
    if len(parts) == 1:
        fmt = next((f for f in formats if f.claims(parts[0])), None)
        if fmt is None:  # only when no single-spec format is registered last
            raise DataError(f"{str(parts[0])!r}: not a dataset s2r can read")
        if fmt.pair:
            raise fmt.alone(parts[0])
        return fmt.parse(parts)
    pairs = [f for f in formats if f.pair]
    found = [next((f for f in pairs if f.claims(p)), None) for p in parts]
    if found[0] is not None and found[0] is found[1]:
        return found[0].parse(parts)
    if None not in found:
        raise DataError(f"sim {parts[0]!r} is {found[0].name} but real {parts[1]!r} is "
                        f"{found[1].name}; both files must be the same kind")
    k = found.index(None)
    bad, good, fmt = parts[k], parts[1 - k], found[1 - k]
    existing_path(bad, ("sim", "real")[k] + " dataset")
    error = fmt.partner_error(good, bad) if fmt is not None else None
    raise error or DataError(f"{bad!r}: two paths must be SIM REAL files of one kind: "
                             + " or ".join(f.hint for f in pairs))
