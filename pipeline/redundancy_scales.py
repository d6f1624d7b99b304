"""Adaptive redundancy for ratings and preferences: ask for another judgment only while an
item's interval is too wide.

Ratings (CxC 0-5, the caption-quality scales): an item gets another rating while it has fewer
than `start`, or while the half-width of its 95 % interval under the per-worker scale model
(`pipeline.scales.rating_model`) is wider than `half_width` and it has fewer than `cap`. The
defaults (3, 7, ±0.5) are the quality sweep's: on the realistic population they spend 4.5
ratings per pair at the model error of CxC's five (benchmarks/results/cxc_adaptive_seeds.txt).

Preferences (which of two captions is better): a pair gets another judgment while it has
fewer than `start`, or while it has fewer than `cap` and the 95 % Wilson interval of the
share preferring the first caption both contains one half (the preference is not decided) and
is wider than `half_width` either side (a near tie not yet pinned down). For one pair, the
Bradley-Terry strength difference is the logit of that share, so its interval excludes 0.5
exactly when the share's does; Wilson's interval stays finite at 0 or all wins, where the
logit's does not, so it is the one used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.errors import InputError
from pipeline.expectation import wilson
from pipeline.numbers import setting_number

MAX_CAP = 100


def _values(options: dict[str, Any], field: str) -> dict[str, Any]:
    if not isinstance(options, dict):
        raise InputError("must be an object of redundancy settings", field=field)
    unknown = set(options) - {"start", "cap", "half_width"}
    if unknown:
        raise InputError(f"unknown redundancy setting {sorted(unknown)[0]!r}", field=field)
    return {
        key: setting_number(
            value, key=f"bad redundancy setting: {key}", field=field, whole=key != "half_width"
        )
        for key, value in options.items()
    }


def _check_counts(start: int, cap: int, field: str) -> None:
    if not 1 <= start <= cap <= MAX_CAP:
        raise InputError(f"need 1 <= start <= cap <= {MAX_CAP}, got {start}, {cap}", field=field)


@dataclass(frozen=True)
class RatingRedundancy:
    start: int = 3
    cap: int = 7
    half_width: float = 0.5  # scale points either side of the estimate

    def check(self, field: str, span: float) -> None:
        _check_counts(self.start, self.cap, field)
        if not 0 < self.half_width <= span:
            raise InputError(
                f"half_width must be within (0, {span:g}] scale points, got {self.half_width:g}",
                field=field,
            )

    @classmethod
    def from_options(
        cls, options: dict[str, Any], *, field: str = "adaptive", span: float = 5.0
    ) -> RatingRedundancy:
        """The policy from a run setting's object; `span`: the scale's length in points."""
        policy = cls(**_values(options, field))
        policy.check(field, span)
        return policy

    def needs_more(self, count: int, half: float) -> bool:
        """Whether an item with `count` ratings spent and interval half-width `half` gets
        another."""
        if count < self.start:
            return True
        return count < self.cap and half > self.half_width


@dataclass(frozen=True)
class PreferenceRedundancy:
    start: int = 6  # also the size of each follow-up round
    cap: int = 48  # Pascal-50S's fixed number per pair
    half_width: float = 0.15  # of the share's interval, either side

    @classmethod
    def from_options(
        cls, options: dict[str, Any], *, field: str = "adaptive_preference"
    ) -> PreferenceRedundancy:
        policy = cls(**_values(options, field))
        _check_counts(policy.start, policy.cap, field)
        if not 0 < policy.half_width < 0.5:
            raise InputError(
                f"half_width must be within (0, 0.5), got {policy.half_width:g}", field=field
            )
        return policy

    def needs_more(self, first: int, total: int, spent: int | None = None) -> bool:
        """Whether a pair whose first caption won `first` of `total` independent judgments
        gets another round; `spent` (default `total`): every judgment paid for, which the cap
        bounds."""
        if total < self.start:
            return True
        if (total if spent is None else spent) >= self.cap:
            return False
        low, high = wilson(first, total)
        decided = low > 0.5 or high < 0.5
        return not decided and (high - low) / 2 > self.half_width


def preference_maximum(policy: PreferenceRedundancy) -> int:
    """The most judgments a pair can get: rounds of `start` until one reaches `cap`."""
    return policy.start * -(-policy.cap // policy.start)
