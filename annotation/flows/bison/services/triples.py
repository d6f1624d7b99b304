"""BISON stage 2 -> 3: turn chosen captions into query-positive-negative triples."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotation.flows.bison.vocabulary import NONE, BisonItemKind, BisonStage
from annotation.models import Answer, EventAction, Item, Run
from annotation.selectors.counting import counted
from annotation.services.events import event_record


@dataclass(frozen=True)
class TriplesResult:
    selection_answers: int
    created: int


def bison_triples_create(*, run: Run) -> TriplesResult:
    """One triple per (pair, chosen caption) from submitted stage-2 answers. Idempotent."""
    answers = Answer.objects.filter(
        counted("assignment__"),
        question__hit__batch__run=run,
        question__hit__batch__stage=BisonStage.SELECTION,
    )
    chosen = (
        answers.exclude(label=NONE)
        .values_list(
            "question__item_id",
            "question__item__positive_id",
            "question__item__negative_id",
            "caption_id",
        )
        .distinct()
        # The triples' primary keys decide stage 3's HITs (shuffled from pk order): the same
        # order on SQLite and PostgreSQL, or one seed gives two datasets (issue 48).
        .order_by("question__item_id", "caption_id")
    )
    with transaction.atomic():
        before = Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE).count()
        Item.objects.bulk_create(
            [
                Item(
                    run=run,
                    kind=BisonItemKind.TRIPLE,
                    source_id=pair,
                    positive_id=positive,
                    negative_id=negative,
                    caption_id=caption,
                )
                for pair, positive, negative, caption in chosen
            ],
            batch_size=5000,
            ignore_conflicts=True,
        )
        created = Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE).count() - before
        if created:
            event_record(
                action=EventAction.BISON_TRIPLES_CREATED, run=run, data={"created": created}
            )
    return TriplesResult(selection_answers=answers.count(), created=created)
