"""The event log: one row per named state change, for history (the console's history pages,
the admin). Its action is an `EventAction` member; nothing reads the log back to decide."""

from __future__ import annotations

from typing import Any

from annotation.models import Assignment, Batch, Event, EventAction, Run, Worker


def event_record(
    *,
    action: EventAction,
    run: Run | None = None,
    batch: Batch | None = None,
    assignment: Assignment | None = None,
    worker: Worker | None = None,
    data: dict[str, Any] | None = None,
) -> Event:
    if not isinstance(action, EventAction):  # a free-form string would start a new action
        raise TypeError(f"event action {action!r} is not an EventAction member")
    return Event.objects.create(
        action=action, run=run, batch=batch, assignment=assignment, worker=worker, data=data or {}
    )
