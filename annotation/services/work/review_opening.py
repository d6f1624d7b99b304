"""Opening a review on submitted work whose answers the stage's task type flags (a failed
gold item, say); the review queue decides them."""

from __future__ import annotations

from annotation.models import Answer, Assignment, EventAction, Question, Review
from annotation.services.events import event_record
from annotation.tasktypes import task_type_for


def review_open_if_needed(
    *, assignment: Assignment, questions: list[Question], answers: list[Answer]
) -> None:
    """Open a review of `assignment` (once) when its task type finds reasons in its answers."""
    batch = assignment.hit.batch
    reasons = task_type_for(batch.stage).review_reasons(questions=questions, answers=answers)
    if reasons and not Review.objects.filter(assignment=assignment).exists():
        Review.objects.create(assignment=assignment, reasons=reasons)
        event_record(
            action=EventAction.REVIEW_OPENED,
            run=batch.run,
            batch=batch,
            assignment=assignment,
            worker=assignment.worker,
            data={"reasons": reasons},
        )
