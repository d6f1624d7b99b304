"""A batch's task pages as its workers will see them, for the researchers of its run: the
real HITs (draft or published) through the same cached view and template the workers get,
with the run's instructions. Nothing here writes: a preview's answers are only read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from annotation.models import Batch
from annotation.selectors.work.run_texts import run_instructions
from annotation.selectors.work.task_page import hit_view


@dataclass(frozen=True)
class PreviewPage:
    view: dict[str, Any]
    number: int  # 1-based, in the batch's HIT order
    total: int
    instructions: str


def batch_preview(*, batch: Batch, number: int) -> PreviewPage | None:
    """The `number`th task page of `batch` (None past its last HIT)."""
    hits = list(batch.hits.order_by("position", "pk").values_list("pk", flat=True))
    if not 1 <= number <= len(hits):
        return None
    return PreviewPage(
        view=hit_view(hit_id=hits[number - 1]),
        number=number,
        total=len(hits),
        instructions=run_instructions(batch.run.config, batch.stage),
    )


def preview_record(*, batch: Batch, page: PreviewPage) -> dict[str, Any]:
    """A preview page as data (the API's answer, the CLI's output): the questions' view, the
    run's instructions for the stage ("" : the task page's own) and the console's page."""
    return {
        "number": page.number,
        "total": page.total,
        "title": page.view["title"],
        "instructions": page.instructions,
        "questions": page.view["questions"],
        "url": reverse("batch-preview-task", args=[batch.pk, page.number]),
    }
