"""A world's dataset-spec options, declared as data (scikit-learn's parameter constraints are
the model): each :class:`Option` says its default (whose type is the option's type), its bounds
or choices, and how a form labels it; :func:`check_options` checks any world's values against
its declaration and raises one :class:`~s2r.errors.DataError` naming the option.

Everything that reads a world's options goes through this declaration: the spec parser
(:func:`s2r.datasets.world.parse_world`) types ``key=value`` text by it, the dashboard draws its
inputs from it, and the world's own checks are this module's.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

import numpy as np

from s2r.checks import check_number
from s2r.errors import DataError

__all__ = ["Option", "Options", "check_options"]

#: A bound: a number, or a function of the options checked before this one (a bound that
#: depends on another option, e.g. Meta-World's steps on its action repeat).
Bound = Union[None, float, Callable[[dict], float]]


@dataclass(frozen=True)
class Option:
    """One option of a world's dataset spec.

    Attributes
    ----------
    name : str
        The spec's key (``episodes`` in ``demo:episodes=8``).
    default : bool, int, float or str
        The library's default; its type is the option's type.
    low, high : number, callable or None
        Inclusive bounds of a number (a callable gets the options checked before this one).
    choices : tuple
        The values a text option may take (empty: any text).
    label, help : str
        What a form calls the option and the one line it explains it with.
    shown : bool
        Whether a form draws an input for it (False: kept as the spec says, e.g. a camera).
    widget_low, widget_high : number or None
        The range a form's input offers, where it is narrower than the check's (values a form
        cannot draw and embed in reasonable time, or fewer than the scores need).
    written : bool
        Whether a canonical spec writes the option at its default (False: only when set
        otherwise, for an option added to a world after its specs were written, so each of
        them keeps its one string; such an option's default never changes).
    """

    name: str
    default: Any
    low: Bound = None
    high: Bound = None
    choices: tuple = ()
    label: str = ""
    help: str = ""
    shown: bool = True
    widget_low: Optional[float] = None
    widget_high: Optional[float] = None
    written: bool = True

    @property
    def kind(self) -> type:
        """``bool``, ``int``, ``float`` or ``str``: the default's type."""
        for kind in (bool, int, float, str):
            if isinstance(self.default, kind):
                return kind
        raise TypeError(f"option {self.name!r}: a default of type {type(self.default).__name__}")

    def bounds(self, checked: Mapping) -> tuple:
        """``(low, high)`` given the options checked before this one."""
        return tuple(b(dict(checked)) if callable(b) else b for b in (self.low, self.high))

    def check(self, value: Any, checked: Mapping = {}) -> Any:
        """``value`` as this option's type; :class:`DataError` naming the option otherwise."""
        kind, name = self.kind, self.name
        if kind is bool:
            if isinstance(value, (bool, np.bool_)) or (
                    isinstance(value, numbers.Integral) and int(value) in (0, 1)):
                return bool(value)
            raise DataError(f"{name} must be True or False, got {value!r}")
        if kind is str:
            if not isinstance(value, str):
                raise DataError(f"{name} must be text, got {value!r}")
            if self.choices and value not in self.choices:
                raise DataError(f"{name} {value!r} is not one of {', '.join(self.choices)}")
            return value
        low, high = self.bounds(checked)
        check_number(name, value, low=low, high=high, integer=kind is int, error=DataError)
        return int(value) if kind is int else float(value)


class Options(Mapping):
    """A world's declared options, name -> :class:`Option`, in declaration order (the order
    they are checked in, so a bound may depend on an option declared before it)."""

    def __init__(self, *options: Option):
        self._options = {o.name: o for o in options}
        if len(self._options) != len(options):
            raise ValueError("an option is declared twice")

    def __getitem__(self, name: str) -> Option:
        return self._options[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)

    def defaults(self) -> dict:
        """Every option's default, by name."""
        return {name: o.default for name, o in self._options.items()}

    def with_defaults(self, **defaults: Any) -> "Options":
        """The same options with other defaults (a world's second set of defaults)."""
        from dataclasses import replace

        unknown = sorted(set(defaults) - set(self._options))
        if unknown:
            raise ValueError(f"unknown options {unknown}")
        return Options(*(replace(o, default=defaults.get(n, o.default))
                         for n, o in self._options.items()))


def check_options(declared: Options, values: Mapping) -> dict:
    """Check a world's option ``values`` against its declaration.

    Parameters
    ----------
    declared : Options
        The world's declaration (:attr:`s2r.worlds.base.World.options`).
    values : mapping
        Option values by name; a missing one takes its default.

    Returns
    -------
    dict
        Every declared option, checked and converted to its type, in declaration order.

    Raises
    ------
    DataError
        An unknown option, or a value of the wrong type, out of its bounds or not one of its
        choices; one line naming the option.
    """
    unknown = [k for k in values if k not in declared]
    if unknown:
        raise DataError(f"unknown option {unknown[0]!r}; the options are: {', '.join(declared)}")
    out: dict = {}
    for name, option in declared.items():
        out[name] = option.check(values.get(name, option.default), out)
    return out
