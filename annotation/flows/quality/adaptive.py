"""A caption-quality run's adaptive redundancy: `adaptive` for the rating stage (another
rating while the item's 95 % interval is wider than `half_width` scale points) and
`adaptive_preference` for the preference stage (another round while the share's Wilson
interval neither excludes one half nor is narrower than `half_width`); see
`pipeline.redundancy_scales`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from annotation.models import Run
from pipeline.redundancy_scales import PreferenceRedundancy, RatingRedundancy

if TYPE_CHECKING:
    from annotation.flows.quality.settings import QualitySettings


def rating_policy_of(settings: QualitySettings) -> RatingRedundancy | None:
    if settings.adaptive is None:
        return None
    low, high = settings.scale_bounds
    options = dict(settings.adaptive)
    return RatingRedundancy.from_options(options, field="adaptive", span=high - low)


def preference_policy_of(settings: QualitySettings) -> PreferenceRedundancy | None:
    if settings.adaptive_preference is None:
        return None
    options = dict(settings.adaptive_preference)
    return PreferenceRedundancy.from_options(options, field="adaptive_preference")


def quality_rating_policy(run: Run) -> RatingRedundancy | None:
    from annotation.flows.quality.settings import quality_settings

    return rating_policy_of(quality_settings(run))


def quality_preference_policy(run: Run) -> PreferenceRedundancy | None:
    from annotation.flows.quality.settings import quality_settings

    return preference_policy_of(quality_settings(run))
