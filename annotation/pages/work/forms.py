"""Reading a submitted task form, whichever provider's page posted it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from annotation.errors import AnswerError, ServiceError, TooLate
from annotation.models import Worker
from annotation.services.work.submit import assignment_submit
from annotation.tasktypes import task_type_for


def answers_from(data: Any, stage: str) -> dict[str, str]:
    """The answers (q0, q1, …) of a submitted task form, as the stage's task type reads them."""
    task = task_type_for(stage)
    return {k: task.form_value(data=data, key=k) for k in data if k[:1] == "q" and k[1:].isdigit()}


def started_at_from(value: str) -> datetime | None:
    """The page's first-answer time (milliseconds since the epoch), or None if unreadable."""
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def task_form_submit(*, data: Any, assignment_id: int, worker_id: int, stage: str) -> str | None:
    """Store a posted task form as `worker_id`'s answers: None when stored, else the refusal
    for the page to show with the form again. TooLate is raised: the form cannot be sent
    again, so each page offers its own way on."""
    try:
        assignment_submit(
            assignment_id=assignment_id,
            worker=Worker.objects.get(pk=worker_id),
            answers=answers_from(data, stage),
            started_at=started_at_from(data.get("started_at", "")),
        )
    except TooLate:
        raise
    except (AnswerError, ServiceError) as exc:
        return str(exc)
    return None
