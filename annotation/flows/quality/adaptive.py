"""A caption-quality run's adaptive redundancy: `adaptive` for the rating stage (another
rating while the item's 95 % interval is wider than `half_width` scale points) and
`adaptive_preference` for the preference stage (another round while the share's Wilson
interval neither excludes one half nor is narrower than `half_width`); see
`pipeline.redundancy_scales`."""

from __future__ import annotations

from typing import Any

from annotation.flows.quality.services.candidates import SCALES
from annotation.models import Run
from pipeline.redundancy_scales import PreferenceRedundancy, RatingRedundancy


def scale_bounds(config: dict[str, Any]) -> tuple[int, int]:
    points = [int(value) for value, _ in SCALES[str(config.get("scale", "expert"))]]
    return min(points), max(points)


def rating_policy_of(config: dict[str, Any]) -> RatingRedundancy | None:
    options = config.get("adaptive")
    if options is None:
        return None
    low, high = scale_bounds(config)
    return RatingRedundancy.from_options(options, field="adaptive", span=high - low)


def preference_policy_of(config: dict[str, Any]) -> PreferenceRedundancy | None:
    options = config.get("adaptive_preference")
    if options is None:
        return None
    return PreferenceRedundancy.from_options(options, field="adaptive_preference")


def quality_rating_policy(run: Run) -> RatingRedundancy | None:
    return rating_policy_of(run.config)


def quality_preference_policy(run: Run) -> PreferenceRedundancy | None:
    return preference_policy_of(run.config)
