"""Prolific's `study.has_high_return_rate` event: kept on the batch of that study (a row; the
event log has its history) and shown as a warning on the batch page."""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.utils import timezone

from annotation.crowd.prolific.models import HighReturnRate
from annotation.models import Batch, EventAction
from annotation.providers.base import LaunchNote
from annotation.services.events import event_record


def return_rate_record(*, batch: Batch, event_id: str, metadata: dict[str, Any]) -> bool:
    """Record Prolific's report on `batch`'s study; whether it is the first one."""
    now = timezone.now()
    row, created = HighReturnRate.objects.get_or_create(
        batch=batch, defaults={"first_at": now, "last_at": now}
    )
    if not created:
        HighReturnRate.objects.filter(pk=row.pk).update(last_at=now, reports=F("reports") + 1)
    event_record(
        action=EventAction.PROLIFIC_HIGH_RETURN_RATE,
        run=batch.run,
        batch=batch,
        data={"event_id": event_id, "study": batch.provider_hit_type_id, "metadata": metadata},
    )
    return created


def return_rate_notes(*, batch: Batch) -> list[LaunchNote]:
    """The batch page's warning, if Prolific reported a high return rate on its study."""
    row = HighReturnRate.objects.filter(batch=batch).first()
    if row is None:
        return []
    first = f"{row.first_at:%Y-%m-%d %H:%M} UTC"
    last = f", {row.reports} reports, the last {row.last_at:%Y-%m-%d %H:%M} UTC"
    return [
        LaunchNote(
            "Warning: high return rate",
            f"Prolific reported that many participants return this study (first {first}"
            f"{last if row.reports > 1 else ''}): check the instructions, the time "
            "estimate and the task page; consider pausing the batch.",
        )
    ]
