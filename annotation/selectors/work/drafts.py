"""A worker's answers in progress as their task page restores them (`services/work/drafts.py` keeps
them). Read only for the worker's own page: nothing that counts work reads drafts."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from annotation.models import AssignmentDraft


def draft_view(answers: Any, updated_at: datetime | None) -> dict[str, Any] | None:
    """What the page restores: the form's values and when they were saved (milliseconds
    since the epoch, which the page compares with a copy it kept itself); None: no draft."""
    if updated_at is None:
        return None
    if isinstance(answers, str):  # a raw read returns JSON as text
        answers = json.loads(answers)
    return {"answers": answers, "at": int(updated_at.timestamp() * 1000)}


def assignment_draft(*, assignment_id: int) -> dict[str, Any] | None:
    """The draft of assignment `assignment_id` as its page restores it, or None (one query)."""
    row = (
        AssignmentDraft.objects.filter(assignment_id=assignment_id)
        .values_list("answers", "updated_at")
        .first()
    )
    return None if row is None else draft_view(*row)
