"""A CxC run's adaptive redundancy (the run setting `adaptive`): after a first batch of
`start` ratings per pair, follow-up batches ask again only for the pairs whose 95 % interval
under the per-worker scale model is still wider than `half_width` (`pipeline.redundancy_scales`)."""

from __future__ import annotations

from typing import Any

from annotation.models import Run
from pipeline.redundancy_scales import RatingRedundancy

LOW, HIGH = 0, 5  # the STS-style scale


def cxc_policy(run: Run) -> RatingRedundancy | None:
    """The run's policy, or None when it has no `adaptive` setting."""
    return cxc_policy_of(run.config)


def cxc_policy_of(config: dict[str, Any]) -> RatingRedundancy | None:
    options = config.get("adaptive")
    if options is None:
        return None
    return RatingRedundancy.from_options(options, field="adaptive", span=HIGH - LOW)
