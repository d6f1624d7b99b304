"""What a worker's page shows: built from the task type, never from gold or hidden fields."""

from __future__ import annotations

from typing import Any

from annotation.models import Hit
from annotation.selectors.images import batch_image_links
from annotation.tasktypes import task_type_for


def hit_view(*, hit: Hit) -> dict[str, Any]:
    task = task_type_for(hit.batch.stage)
    questions = list(
        hit.questions.select_related(
            "item__positive__dataset",
            "item__negative__dataset",
            "item__caption",
            "item__caption2",
            "item__candidate",
            "item__candidate2",
            "item__run",
        ).prefetch_related("item__positive__captions")
    )
    images = batch_image_links(
        batch=hit.batch,
        image_ids={q.item.positive_id for q in questions}
        | {q.item.negative_id for q in questions if q.item.negative_id},
    )
    return {
        "template": task.template_name,
        "title": task.title,
        "questions": [
            {
                "key": f"q{q.position}",
                "number": q.position + 1,
                **task.question_view(question=q, images=images),
            }
            for q in questions
        ],
    }
