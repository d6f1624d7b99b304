"""What a run's settings mean: a label, a unit, a range and help text for each, declared by
the flow that reads it. The new-run form, the API's description of a flow's settings and the
settings' checks read these declarations, so a setting is described once.

A flow lists its settings on its `Flow` (`settings=`); the settings every flow shares (the
seed, gold, consent) are declared here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from annotation.services.checks import SEED_RANGE, check_int, check_number
from pipeline.errors import InputError

KINDS = ("int", "number", "choice", "text", "bool", "list", "object", "int_or_all")


@dataclass(frozen=True)
class Setting:
    """One run setting. `default` is what the flow uses when the setting is left out
    (None: nothing, the setting is optional); `low`/`high` bound numbers (inclusive)."""

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

    def check(self, config: dict[str, Any]) -> None:
        """The setting's own range or choices (flows check what spans several settings)."""
        if self.key not in config or (config[self.key] is None and self.default is None):
            return  # an optional setting left out
        value = config[self.key]
        if self.kind == "int":
            low = SEED_RANGE[0] if self.low is None else int(self.low)
            check_int(
                config,
                self.key,
                low=low,
                high=SEED_RANGE[1] if self.high is None else int(self.high),
            )
        elif self.kind == "number":
            low_f = -float("inf") if self.low is None else self.low
            check_number(
                config, self.key, low=low_f, high=float("inf") if self.high is None else self.high
            )
        elif self.kind == "choice" and value not in self.choices:
            raise InputError(
                f"must be one of {', '.join(self.choices)}, got {value!r}", field=self.key
            )
        elif self.kind == "bool" and not isinstance(value, bool):
            raise InputError(f"must be true or false, got {value!r}", field=self.key)

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


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value)
    return str(value)


def settings_check(settings: Iterable[Setting], config: dict[str, Any]) -> None:
    for setting in settings:
        setting.check(config)


# Shared by every flow.
SEED = Setting(
    "seed",
    "Seed",
    "Seeds every random choice of the run (samples, HIT order, shuffles): the same seed and "
    "inputs give the same run",
    low=SEED_RANGE[0],
    high=SEED_RANGE[1],
    default=0,
    advanced=True,
)


def gold_settings(
    *, categorical: bool, ratings: bool, agreement: float = 1.0, spread: float = 1.0
) -> tuple[Setting, ...]:
    """The gold settings of a flow (see annotation/services/runs/gold.py)."""
    from annotation.services.runs.gold import ESTABLISHED, GOLD_SOURCES

    out = [
        Setting(
            "gold_source",
            "Gold source",
            '"established": gold questions are copies of items earlier batches of the stage '
            'answered alike (no public file gives them away); "paper": the paper\'s own gold',
            kind="choice",
            choices=GOLD_SOURCES,
            default=ESTABLISHED,
        ),
        Setting(
            "gold_min_answers",
            "Gold: answers needed",
            "An item becomes gold once at least this many different workers answered it and agree",
            low=2,
            high=1000,
            unit="workers",
            default=3,
        ),
    ]
    if categorical:
        out.append(
            Setting(
                "gold_agreement",
                "Gold: agreement needed",
                "Share of those workers who must give the same answer",
                kind="number",
                low=0.5,
                high=1.0,
                unit="share",
                default=agreement,
            )
        )
    if ratings:
        out.append(
            Setting(
                "gold_spread",
                "Gold: rating spread allowed",
                "Highest minus lowest rating of an item that becomes gold; its known rating is "
                "their mean",
                kind="number",
                low=0.0,
                high=10.0,
                unit="rating points",
                default=spread,
            )
        )
    return tuple(out)


GOLD_TOLERANCE = Setting(
    "gold_tolerance",
    "Gold tolerance",
    "A gold rating further than this from the known rating is a failed check",
    kind="number",
    low=0.0,
    high=5.0,
    unit="rating points",
    default=1.0,
)

HOLD_FAST = Setting(
    "hold_fast_seconds_per_item",
    "Hold work faster than",
    "A submitted assignment whose active time per item is under this is held for review before "
    "it is paid (before the platform's own auto-approval); 0: fast work is only flagged",
    kind="number",
    low=0.0,
    high=3600.0,
    unit="seconds per item",
    default=0.0,
)

CONSENT = Setting(
    "consent",
    "Information and consent text",
    "Shown to invited and panel workers before their first task; changing it asks them again. "
    "Empty: the project's default text",
    kind="text",
    advanced=True,
)
