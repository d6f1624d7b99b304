"""What the rating and preference task types of adaptive runs share: the batch option that asks
for a follow-up batch, the items it takes, and how many workers each round asks."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation.models import Item
from annotation.selectors.id_sets import ids_in
from annotation.tasktypes.base import BatchOption
from pipeline.errors import InputError
from pipeline.redundancy_scales import PreferenceRedundancy, RatingRedundancy

MORE_JUDGMENTS = BatchOption(
    name="more_judgments",
    label="More judgments",
    help="adaptive runs: a follow-up batch of the judged items still too uncertain",
)


def follow_up_batch_items(ids: list[int], *, what: str, setting: str) -> QuerySet[Item]:
    """The follow-up batch's items; refused (next to the option) when none is uncertain."""
    if not ids:
        raise InputError(
            f"no judged {what} is still uncertain (the run's `{setting}` policy; adaptive "
            "runs only)",
            field="more_judgments",
        )
    return Item.objects.filter(ids_in("pk", ids)).order_by("pk")


def no_policy(setting: str) -> InputError:
    return InputError(
        f"a follow-up batch needs the run setting `{setting}` (adaptive redundancy)",
        field="more_judgments",
    )


def round_assignments(
    policy: RatingRedundancy | PreferenceRedundancy | None,
    options: dict[str, Any] | None,
    default: int,
) -> int:
    """Workers per HIT when the batch does not say: `start` in an adaptive run's first batch;
    in a follow-up batch one more rating per item, or `start` more preferences (one at a time
    would take dozens of rounds for a close pair)."""
    if policy is None:
        return default
    if (options or {}).get("more_judgments"):
        return 1 if isinstance(policy, RatingRedundancy) else policy.start
    return policy.start
