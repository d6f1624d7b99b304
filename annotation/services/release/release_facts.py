"""Facts about a release that both DATASHEET.md (for people) and croissant.json (its RAI
fields) state, computed once here from the run's rows and the export's tables, so the two
files never say different things (issue 50)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from django.db.models import Count, Exists, Max, Min, OuterRef, Q

from annotation.models import (
    GOLD_KINDS,
    Answer,
    Assignment,
    AssignmentState,
    Item,
    Review,
    ReviewStatus,
    Run,
)
from annotation.selectors.counting import COUNTED_STATES, counted, counted_reviewed
from annotation.services.release.column_stats import column_mean, column_median
from pipeline.expectation import wilson

# The record set of per-label provenance (release_judgments.py): rows are judgments, not
# records, so the per-record measures below leave it out.
_PER_JUDGMENT = "label_provenance"


@dataclass(frozen=True)
class GoldTally:
    """Counted answers to the run's gold questions: right, in all, from how many workers."""

    right: int = 0
    total: int = 0
    workers: int = 0

    def sentence(self) -> str:
        if not self.total:
            return "no counted answer to a gold question in this run"
        low, high = wilson(self.right, self.total)
        return (
            f"{self.right} of {self.total} counted answers to gold questions were right "
            f"({self.right / self.total:.1%}, 95 % Wilson interval {low:.1%}–{high:.1%}), from "
            f"{self.workers} worker(s)"
        )


def gold_tally(run: Run) -> GoldTally:
    """The run's gold accuracy by its flow's rule (`Flow.worker_gold`)."""
    from annotation.flow_registry import flow_for_kind

    flow = flow_for_kind(run.kind)
    tally = flow.worker_gold(run) if flow is not None and flow.worker_gold is not None else {}
    return GoldTally(
        right=sum(r for r, _ in tally.values()),
        total=sum(t for _, t in tally.values()),
        workers=len(tally),
    )


def collection_timeframe(run: Run) -> tuple[str, str] | None:
    """When the run's counted work was done: the first accept and the last submission
    (ISO 8601, UTC), or None when nothing counts."""
    span = Assignment.objects.filter(counted(), hit__batch__run=run).aggregate(
        start=Min("accepted_at"), end=Max("submitted_at")
    )
    if span["start"] is None or span["end"] is None:
        return None
    return span["start"].isoformat(), span["end"].isoformat()


def agreement_lines(tables: dict[str, pa.Table]) -> list[str]:
    """Per record set, the agreement its records carry: the mean share of judgments agreeing
    with the majority (`agreement`) or the mean spread of the ratings (`spread`)."""
    parts = []
    for name, table in tables.items():
        for column_name, what in (
            ("agreement", "mean share of judgments agreeing with the majority"),
            ("spread", "mean spread (standard deviation) of the ratings"),
        ):
            if column_name in table.column_names:
                column = table.column(column_name)
                if (mean := column_mean(column)) is not None:
                    parts.append(
                        f"{name}: {what} {mean:.3f} over {len(column) - column.null_count} records"
                    )
                break
    return parts


def annotations_per_item(tables: dict[str, pa.Table]) -> list[str]:
    """Per record set, the median number of human labels behind a record (its `judgments`
    or `raters` column), measured from the rows."""
    return [
        f"{name}: median {column_median(table.column(col))} (min "
        f"{_bound(table.column(col), 'min')}, max {_bound(table.column(col), 'max')}) "
        "judgments per record"
        for name, table in tables.items()
        if name != _PER_JUDGMENT and table.num_rows
        for col in ("judgments", "raters")
        if col in table.column_names
    ]


def _bound(column: Any, which: str) -> Any:
    return pc.min_max(column)[which].as_py()


@dataclass(frozen=True)
class MissingWork:
    """Work the run took in that the export leaves out, from the run's rows."""

    rejected: int = 0  # assignments rejected
    abandoned: int = 0  # taken and given up (returned, expired or timed out)
    excluded: int = 0  # confirmed but excluded (the worker also did an earlier stage)
    unconfirmed: int = 0  # submitted but never confirmed by the provider
    held: int = 0  # submitted and still held for review (open)
    review_rejected: int = 0  # held for review and then rejected by a person
    items_unanswered: int = 0  # items the run made (not gold) with no counted answer

    def sentence(self) -> str:
        return (
            f"left out of the export: {self.rejected} rejected assignment(s), "
            f"{self.review_rejected} of them rejected after a gold check held them for review; "
            f"{self.held} submission(s) still held for review; {self.excluded} excluded "
            "(the worker had done an earlier stage of the run); "
            f"{self.unconfirmed} never confirmed by their provider; {self.abandoned} taken "
            f"and given up before submitting; {self.items_unanswered} item(s) the run made "
            "with no counted answer (no record; nothing was imputed)"
        )


def missing_work(run: Run) -> MissingWork:
    """Counts of the run's work and items the export leaves out, and why."""
    work = Assignment.objects.filter(hit__batch__run=run).aggregate(
        rejected=Count("pk", filter=Q(state=AssignmentState.REJECTED)),
        abandoned=Count("pk", filter=Q(state=AssignmentState.ABANDONED)),
        excluded=Count("pk", filter=Q(state__in=COUNTED_STATES, confirmed=True, excluded=True)),
        unconfirmed=Count("pk", filter=Q(state__in=COUNTED_STATES, confirmed=False)),
    )
    reviews = Review.objects.filter(assignment__hit__batch__run=run).aggregate(
        held=Count("pk", filter=Q(status=ReviewStatus.OPEN)),
        review_rejected=Count("pk", filter=Q(status=ReviewStatus.REJECTED)),
    )

    answered = Answer.objects.filter(counted_reviewed(""), question__item=OuterRef("pk"))
    unanswered = (
        Item.objects.filter(run=run).exclude(kind__in=GOLD_KINDS).exclude(Exists(answered)).count()
    )
    return MissingWork(**work, **reviews, items_unanswered=unanswered)
