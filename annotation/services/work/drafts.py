"""A worker's answers in progress, kept on the server as they are given (issue 46): the task
page posts its form's values after each change, so a closed browser, a reload, another device
or an expired session loses nothing. A draft never counts: it lives in its own table, which no
counting, agreement, export or gold code reads, and the submit removes it in its transaction
(`draft_consume`), so an assignment's answers are counted once, from the submit."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.errors import AnswerError, NotAssignmentHolder, ServiceError, TooLate
from annotation.models import Assignment, AssignmentDraft, AssignmentState
from annotation.selectors.work.task_page import hit_questions
from annotation.services.work.slots import late_reason

# The form's own names: a question's answer (q3) and an uncertain answer's follow-ups
# (q3_reason, q3_error), and when work began (the page's first answer, as the submit takes it).
QUESTION_FIELD = re.compile(r"q([0-9]{1,6})(?:_reason|_error)?")
STARTED_AT = "started_at"
# Bounds on what a browser may store: the longest form value is a few words (an option's
# value, an error type, a time in milliseconds); a follow-up has at most a dozen boxes.
MAX_VALUES = 16
MAX_VALUE_LENGTH = 64
CLOSED = "this task was submitted or closed: its answers in progress are no longer kept"


def draft_save(
    *,
    assignment_id: int,
    worker_id: int,
    answers: Any,
    now: datetime | None = None,
) -> AssignmentDraft:
    """Keep `answers` (the task form's values, `{name: [values]}`) as `worker_id`'s draft of
    their open assignment, replacing the one before. Everything in it is a browser's claim:
    names must be the form's own for questions of the assignment's HIT, values few and short.
    Refused for another worker's assignment, and once it is submitted, abandoned or too late
    to submit (a paused batch's open work may still finish: its draft is kept)."""
    now = now or timezone.now()
    with transaction.atomic():
        # Locked as the submit locks it: a save that loses the race to a submit finds the
        # assignment submitted and stores nothing, so no draft outlives its submit.
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("hit__batch")
            .filter(pk=assignment_id)
            .first()
        )
        if assignment is None or assignment.worker_id != worker_id:
            raise NotAssignmentHolder(f"assignment {assignment_id} is not this worker's")
        if assignment.state != AssignmentState.ACCEPTED:
            raise ServiceError(CLOSED)
        late = late_reason(assignment, assignment.hit.batch, now)
        if late is not None:
            raise TooLate(late)
        cleaned = _checked(assignment, answers)
        draft, _ = AssignmentDraft.objects.update_or_create(
            assignment=assignment, defaults={"answers": cleaned, "updated_at": now}
        )
    return draft


def draft_consume(*, assignment_id: int) -> None:
    """The submit's step: the draft is gone once the answers are stored (in the submit's
    transaction, so the answers count once, from the submit)."""
    AssignmentDraft.objects.filter(assignment_id=assignment_id).delete()


def _checked(assignment: Assignment, answers: Any) -> dict[str, list[str]]:
    """`answers` as a draft keeps them, or AnswerError naming what does not fit."""
    where = f"assignment {assignment.pk}"
    if not isinstance(answers, Mapping):
        raise AnswerError("a draft is an object of the form's values", record=where)
    positions = {q.position for q in hit_questions(hit_id=assignment.hit_id)}
    # Every name at most once: a question's answer, its two follow-ups, and the start time.
    if len(answers) > 3 * len(positions) + 1:
        raise AnswerError("too many values for this task", record=where)
    cleaned: dict[str, list[str]] = {}
    for name, raw in answers.items():
        match = QUESTION_FIELD.fullmatch(str(name))
        if name != STARTED_AT and (match is None or int(match[1]) not in positions):
            raise AnswerError("no question of this task has that name", record=where, field=name)
        values = [raw] if isinstance(raw, str) else raw
        if (
            not isinstance(values, list)
            or len(values) > MAX_VALUES
            or not all(isinstance(v, str) and len(v) <= MAX_VALUE_LENGTH for v in values)
        ):
            raise AnswerError(
                f"at most {MAX_VALUES} values of {MAX_VALUE_LENGTH} characters",
                record=where,
                field=name,
            )
        cleaned[name] = values
    return cleaned
