"""A run's data browser: its items with their answers, agreement, aggregate and workers, per
stage, filtered (agreement, gold, held for review) and paged. Constant queries in the number
of rows: the filtered page of items with their counts (one query, the count another), then
every answer of the page's items (one query)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet

from annotation.models import GOLD_KINDS, Answer, Item, ReviewStatus, Run
from annotation.selectors.counting import counted, counted_reviewed
from annotation.selectors.pseudonyms import worker_pseudonym

# Each filter's choices, as conditions on the items and their counts (`run_items`).
AGREEMENT_FILTERS = {
    "agree": Q(answers__gte=2, labels=1),
    "disagree": Q(labels__gte=2),
    "single": Q(answers=1),
    "unanswered": Q(answers=0, held=0),
}
GOLD_FILTERS = {"gold": Q(kind__in=GOLD_KINDS), "real": ~Q(kind__in=GOLD_KINDS)}
HELD_FILTERS = {"held": Q(held__gt=0), "not_held": Q(held=0)}
AGREEMENT = tuple(AGREEMENT_FILTERS)
GOLD = tuple(GOLD_FILTERS)
HELD = tuple(HELD_FILTERS)


def run_data_stages(run: Run) -> list[str]:
    """The stages the run has batches of, in the order they were first made."""
    stages: list[str] = []
    for stage in run.batches.order_by("pk").values_list("stage", flat=True):
        if stage not in stages:
            stages.append(stage)
    return stages


def run_items(
    *, run: Run, stage: str, agreement: str = "", gold: str = "", held: str = ""
) -> QuerySet[Item]:
    """The items asked about in `stage`'s batches, with `answers` (counted, not held),
    `labels` (distinct labels among them) and `held` (answers held by an open review);
    filtered, in item order. Agreement: "agree" (two or more answers, one label),
    "disagree", "single" (one answer), "unanswered"."""
    answer = "questions__answers__"
    counts = counted_reviewed(answer)
    items = (
        Item.objects.filter(run=run, questions__hit__batch__stage=stage)
        .annotate(
            answers=Count(f"{answer}pk", filter=counts, distinct=True),
            labels=Count(f"{answer}label", filter=counts, distinct=True),
            held=Count(
                f"{answer}pk",
                filter=counted(f"{answer}assignment__")
                & Q(**{f"{answer}assignment__review__status": ReviewStatus.OPEN}),
                distinct=True,
            ),
        )
        .select_related("positive", "negative", "caption", "caption2", "candidate", "candidate2")
        .order_by("pk")
    )
    for wanted, choices in (
        (gold, GOLD_FILTERS),
        (held, HELD_FILTERS),
        (agreement, AGREEMENT_FILTERS),
    ):
        if wanted:
            items = items.filter(choices[wanted])
    return items


@dataclass
class AnswerRow:
    worker: str  # pseudonym
    label: str
    caption: str  # the chosen caption's text, where the answer picks one
    counted: bool
    review: int | None  # the open review holding it, if any


@dataclass
class ItemRow:
    item: Item
    answers: list[AnswerRow] = field(default_factory=list)

    @property
    def gold(self) -> bool:
        return self.item.kind in GOLD_KINDS

    @property
    def counted_labels(self) -> list[str]:
        return [a.label for a in self.answers if a.counted]

    @property
    def aggregate(self) -> str:
        """The mean of numeric labels (ratings), else the majority answer ("tie" when none). An
        answer that picks a caption is that caption's text, never its id as a number (issue
        46: BISON's caption ids read "81234.00")."""
        counted = [a for a in self.answers if a.counted]
        if not counted:
            return ""
        if not any(a.caption for a in counted):
            try:
                return f"{sum(float(a.label) for a in counted) / len(counted):.2f}"
            except ValueError:
                pass
        top = Counter(a.caption or a.label for a in counted).most_common(2)
        return "tie" if len(top) > 1 and top[0][1] == top[1][1] else top[0][0]

    @property
    def agreement(self) -> float | None:
        """The share of counted answers giving the most frequent label (None below two)."""
        labels = self.counted_labels
        if len(labels) < 2:
            return None
        return Counter(labels).most_common(1)[0][1] / len(labels)

    @property
    def workers(self) -> list[str]:
        return sorted({a.worker for a in self.answers})

    @property
    def reviews(self) -> list[int]:
        return sorted({a.review for a in self.answers if a.review is not None})


def _counts(review: Any) -> bool:
    """As `counted_reviewed`: no review, or one approved (by a person or the provider)."""
    return review is None or review.status in (ReviewStatus.APPROVED, ReviewStatus.AUTO_APPROVED)


def item_rows(*, items: list[Item], stage: str) -> list[ItemRow]:
    """The page's items with every answer of `stage` given to them by counted work (one
    query): those that count and those a review holds or set aside."""
    rows = {item.pk: ItemRow(item) for item in items}
    answers = (
        Answer.objects.filter(question__item_id__in=rows, question__hit__batch__stage=stage)
        .filter(counted("assignment__"))
        .select_related("question", "caption", "assignment__worker", "assignment__review")
        .order_by("question__item_id", "assignment__submitted_at", "pk")
    )
    for answer in answers:
        assignment = answer.assignment
        review = getattr(assignment, "review", None)
        worker = assignment.worker
        rows[answer.question.item_id].answers.append(
            AnswerRow(
                worker=worker_pseudonym(provider=worker.provider, external_id=worker.external_id),
                label=answer.label,
                caption=answer.caption.text if answer.caption else "",
                counted=_counts(review),
                review=review.pk
                if review is not None and review.status == ReviewStatus.OPEN
                else None,
            )
        )
    return list(rows.values())
