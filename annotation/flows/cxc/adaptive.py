"""A CxC run's adaptive redundancy (the run setting `adaptive`): after a first batch of
`start` ratings per pair, follow-up batches ask again only for the pairs whose 95 % interval
under the per-worker scale model is still wider than `half_width` (`pipeline.redundancy_scales`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from annotation.models import Run
from pipeline.redundancy_scales import RatingRedundancy

LOW, HIGH = 0, 5  # the STS-style scale


if TYPE_CHECKING:
    from annotation.flows.cxc.settings import CxcSettings


def cxc_policy(run: Run) -> RatingRedundancy | None:
    """The run's policy, or None when it has no `adaptive` setting."""
    from annotation.flows.cxc.settings import cxc_settings

    return cxc_policy_of(cxc_settings(run))


def cxc_policy_of(settings: CxcSettings) -> RatingRedundancy | None:
    if settings.adaptive is None:
        return None
    options = dict(settings.adaptive)
    return RatingRedundancy.from_options(options, field="adaptive", span=HIGH - LOW)
