"""A caption-quality run's settings, described for the new-run form, the API and the checks,
and the typed object a caption-quality run's config reads as (`quality_settings(run)`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation.flows.quality.vocabulary import SCALES
from annotation.run_settings import (
    CONSENT,
    GOLD_TOLERANCE,
    HOLD_FAST,
    SEED,
    RunSettings,
    Setting,
    declared,
    gold_settings,
)

if TYPE_CHECKING:
    from annotation.models import Run

SETTINGS = (
    Setting(
        "scale",
        "Rating scale",
        "The rating stage's scale: expert (Flickr8k-Expert's four points, Hodosh et al. 2013) "
        "or composite (Composite's five points of correspondence, Aditya et al.)",
        kind="choice",
        choices=tuple(SCALES),
        default="expert",
    ),
    Setting(
        "pairs_per_image",
        "Preference pairs per image",
        "Caption pairs per image for the preference stage, spread over the four categories",
        low=0,
        high=1000,
        unit="pairs",
        default=4,
    ),
    Setting(
        "adaptive",
        "Adaptive ratings",
        "Optional, the rating stage: a first batch of `start` ratings per caption, then "
        'follow-up batches ("More judgments") ask again only while a caption\'s 95 % interval '
        'is wider than `half_width` scale points either side, up to `cap`, e.g. {"start": 3, '
        '"cap": 7, "half_width": 0.5}',
        kind="object",
        advanced=True,
    ),
    Setting(
        "adaptive_preference",
        "Adaptive preferences",
        "Optional, the preference stage: a first batch of `start` judgments per pair, then "
        "follow-up rounds of `start` more only while the 95 % interval of the share preferring "
        "one caption contains one half and is wider than `half_width` either side, up to `cap`, "
        'e.g. {"start": 6, "cap": 48, "half_width": 0.15}',
        kind="object",
        advanced=True,
    ),
    GOLD_TOLERANCE,
    *gold_settings(categorical=True, ratings=True, agreement=0.8),
    HOLD_FAST,
    SEED,
    CONSENT,
)

# The defaults a new run stores, by setting (what `quality_create_run --help` lists).
DEFAULTS: dict[str, Any] = {s.key: s.default for s in SETTINGS if s.default is not None}


@dataclass(frozen=True)
class QualitySettings(RunSettings):
    DECLARED = declared(SETTINGS)

    scale: str
    pairs_per_image: int
    adaptive: Mapping[str, Any] | None  # the rating stage's policy
    adaptive_preference: Mapping[str, Any] | None
    gold_tolerance: float

    @property
    def scale_bounds(self) -> tuple[int, int]:
        """The lowest and highest point of the run's rating scale."""
        points = [int(value) for value, _ in SCALES[self.scale]]
        return min(points), max(points)

    def expectation_inputs(self) -> dict[str, Any]:
        return {
            "adaptive": None if self.adaptive is None else dict(self.adaptive),
            "adaptive_preference": (
                None if self.adaptive_preference is None else dict(self.adaptive_preference)
            ),
            "scale": self.scale,
        }

    def check(self) -> None:
        super().check()
        from annotation.flows.quality.adaptive import preference_policy_of, rating_policy_of

        rating_policy_of(self)  # the adaptive objects' own checks
        preference_policy_of(self)


def quality_settings(run: Run) -> QualitySettings:
    """The caption-quality run's settings (`run_settings` of such a run)."""
    from annotation.run_settings import run_settings

    return run_settings(run, QualitySettings)
