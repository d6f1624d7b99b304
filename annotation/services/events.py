from __future__ import annotations

from typing import Any

from annotation.models import Assignment, Batch, Event, Run, Worker


def event_record(
    *,
    action: str,
    run: Run | None = None,
    batch: Batch | None = None,
    assignment: Assignment | None = None,
    worker: Worker | None = None,
    data: dict[str, Any] | None = None,
) -> Event:
    return Event.objects.create(
        action=action, run=run, batch=batch, assignment=assignment, worker=worker, data=data or {}
    )
