"""What one run setting means: a label, a unit, a range and help text, declared by the flow
that reads it, and how its stored JSON value reads as a typed value. The new-run form, the
API's description of a flow's settings, the settings' checks and the typed settings object
(`annotation.run_settings.typed`) read these declarations, so a setting is described once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

from annotation.services.checks import SEED_RANGE, check_int, check_number
from pipeline.errors import InputError

# "json": any JSON value, read as stored (a value a service records, e.g. ECCV's split).
KINDS = ("int", "number", "choice", "text", "bool", "list", "object", "int_or_all", "json")


class _Same:
    def __repr__(self) -> str:
        return "the default"


SAME = _Same()  # `absent` left as is: a stored config without the setting means its default


@dataclass(frozen=True)
class Setting:
    """One run setting. `default` is what the flow uses when the setting is left out
    (None: nothing, the setting is optional); `low`/`high` bound numbers (inclusive).
    `filled`: a new run's config gets the default written in when the setting is left out
    (False: it stays out, and what reads it says "the flow's default"). `absent`: what a stored
    config without the setting means, where that is not `default` (runs created before the
    setting existed keep what they did then)."""

    key: str
    label: str
    help: str
    kind: str = "int"
    default: Any = None
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    advanced: bool = False  # shown folded on the new-run form
    filled: bool = True
    absent: Any = SAME

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"setting {self.key}: kind must be one of {KINDS}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"setting {self.key}: a choice needs its choices")

    @property
    def range_text(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.low is None and self.high is None:
            return ""
        low = _number(self.low) if self.low is not None else "…"
        high = _number(self.high) if self.high is not None else "…"
        text = f"{low} to {high}"
        if self.kind == "int_or_all":
            text += ', or "all"'
        return text

    def describe(self) -> str:
        """The help line under the setting's field: what it does, its range and default."""
        parts = [self.help.rstrip(".") + "."]
        if self.range_text:
            parts.append(f"Range: {self.range_text}{' ' + self.unit if self.unit else ''}.")
        if self.default is not None:
            parts.append(f"Default: {_shown(self.default)}.")
        return " ".join(parts)

    def check(self, config: Mapping[str, Any]) -> None:
        """The setting's own range, choices or shape (flows check what spans several)."""
        if self.key in config:
            self.value(config[self.key])

    def value(self, stored: Any) -> Any:
        """`stored` (the config's JSON value) checked and converted to the setting's typed
        value: ints, floats, text, tuples for lists, read-only mappings for objects; None for
        an optional setting left empty. InputError names the setting."""
        if stored is None and self.default is None:
            return None  # an optional setting left out
        kind = self.kind
        low, high = self._bounds
        # The common case first (a good number, read on every page that reads the run's
        # settings); anything else goes through the checks that name what is wrong.
        if kind == "int":
            if type(stored) is int and low <= stored <= high:
                return stored
            return check_int({self.key: stored}, self.key, low=int(low), high=int(high))
        if kind == "number":
            if type(stored) in (int, float) and low <= stored <= high and math.isfinite(stored):
                return float(stored)
            return check_number({self.key: stored}, self.key, low=low, high=high)
        if kind == "int_or_all":
            given = self.stored_form(stored)
            if given == "all":
                return given
            return check_int({self.key: given}, self.key, low=int(low), high=int(high))
        if self.kind == "choice":
            if stored not in self.choices:
                raise InputError(
                    f"must be one of {', '.join(self.choices)}, got {stored!r}", field=self.key
                )
            return str(stored)
        if self.kind == "bool":
            if not isinstance(stored, bool):
                raise InputError(f"must be true or false, got {stored!r}", field=self.key)
            return stored
        if self.kind == "text":
            if not isinstance(stored, str):
                raise InputError(f"must be text, got {stored!r}", field=self.key)
            return stored
        if self.kind == "list":
            if not isinstance(stored, list | tuple):
                raise InputError(f"must be a list, got {stored!r}", field=self.key)
            return tuple(stored)
        if self.kind == "object":
            if not isinstance(stored, Mapping):
                raise InputError(f"must be an object, got {stored!r}", field=self.key)
            return MappingProxyType(dict(stored))
        return _frozen(stored)  # json

    @cached_property
    def _bounds(self) -> tuple[float, float]:
        """The inclusive range a number is checked in (ints: 64 bits where none is given;
        int_or_all: from 0)."""
        if self.kind == "number":
            low = -math.inf if self.low is None else self.low
            return low, math.inf if self.high is None else self.high
        default_low = 0 if self.kind == "int_or_all" else SEED_RANGE[0]
        low_i = default_low if self.low is None else int(self.low)
        return low_i, SEED_RANGE[1] if self.high is None else int(self.high)

    def stored_form(self, given: Any) -> Any:
        """The value as a new run's config stores it: a form's text field sends a number as
        text ("20"), stored as the number; every other value is stored as given."""
        if self.kind == "int_or_all" and isinstance(given, str) and given.strip().isdigit():
            return int(given)
        return given

    def default_value(self) -> Any:
        """The typed value a stored config without the setting reads as."""
        return self._default_value

    @cached_property
    def _default_value(self) -> Any:
        absent = self.default if self.absent is SAME else self.absent
        return None if absent is None else self.value(absent)

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "help": self.help,
            "kind": self.kind,
            "default": self.default,
            "unit": self.unit,
            "low": self.low,
            "high": self.high,
            "choices": list(self.choices),
        }


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType(dict(value))
    if isinstance(value, list):
        return tuple(value)
    return value


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value)
    return str(value)


def settings_check(settings: Iterable[Setting], config: Mapping[str, Any]) -> None:
    for setting in settings:
        setting.check(config)
