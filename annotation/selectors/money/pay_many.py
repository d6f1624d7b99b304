"""Expected and effective pay of many batches at once, in a fixed number of queries (issue 32:
the dashboard read each shown batch's pay with five statements of its own). The figures are
pay.py's: the same rows are read, grouped by batch, and go through the same functions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db.models import (
    Case,
    Count,
    DurationField,
    F,
    IntegerField,
    OuterRef,
    Subquery,
    Sum,
    Value,
    When,
    Window,
)
from django.db.models.functions import Coalesce, RowNumber

from annotation.models import Assignment, Batch, Bonus, Hit, Question
from annotation.selectors.counting import COUNTED_STATES
from annotation.selectors.money.pay import (
    PAID_WORK,
    PILOT_ROWS,
    PayEstimate,
    active_time,
    effective_pay_from,
    pay_estimate_from,
    pilot_median,
    same_pilot_options,
)


def pay_estimates(*, batches: Sequence[Batch]) -> dict[int, PayEstimate]:
    """pay_estimate of each of `batches` (saved ones), by batch id, in at most three queries."""
    if not batches:
        return {}
    ids = [b.pk for b in batches]
    # Per HIT its questions by index (a join would read every question of the table).
    per_hit = (
        Question.objects.filter(hit=OuterRef("pk"))
        .order_by()
        .values("hit")
        .annotate(n=Count("pk"))
        .values("n")
    )
    counts = {
        batch: (hits, questions)
        for batch, hits, questions in Hit.objects.filter(batch__in=ids)
        .values("batch_id")
        .annotate(
            n_hits=Count("pk"),
            n_questions=Sum(Coalesce(Subquery(per_hit, output_field=IntegerField()), 0)),
        )
        .values_list("batch_id", "n_hits", "n_questions")
        .order_by()
    }
    pilots = _pilots(batches)
    return {
        b.pk: pay_estimate_from(
            batch=b,
            pilot=pilots.get(b.pk),
            hits=counts.get(b.pk, (0, 0))[0],
            questions=counts.get(b.pk, (0, 0))[1],
        )
        for b in batches
    }


def _pilots(batches: Sequence[Batch]) -> dict[int, float | None]:
    """pilot_seconds_per_item of each batch: the oldest PILOT_ROWS submitted assignments of its
    earlier batches of the same run, stage and options. Each earlier batch gives at most
    PILOT_ROWS of its oldest rows (a window in the database), enough for any batch after it."""
    siblings = list(
        Batch.objects.filter(run__in={b.run_id for b in batches}).values_list(
            "pk", "run_id", "stage", "options"
        )
    )
    earlier = {
        b.pk: [
            pk
            for pk, run, stage, options in siblings
            if run == b.run_id
            and stage == b.stage
            and pk < b.pk
            and same_pilot_options(options, b.options)
        ]
        for b in batches
    }
    sources = sorted({pk for pks in earlier.values() for pk in pks})
    if not sources:
        return {}
    items = (
        Question.objects.filter(hit=OuterRef("hit"))
        .values("hit")
        .annotate(n=Count("pk"))
        .values("n")
    )
    rows = (
        Assignment.objects.filter(
            hit__batch__in=sources, state__in=COUNTED_STATES, submitted_at__isnull=False
        )
        .annotate(
            items=Coalesce(Subquery(items, output_field=IntegerField()), 0),
            rank=Window(RowNumber(), partition_by=[F("hit__batch_id")], order_by=F("pk").asc()),
        )
        .filter(rank__lte=PILOT_ROWS)
        .values_list("hit__batch_id", "pk", "accepted_at", "submitted_at", "items")
    )
    by_batch: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for batch, *row in rows:
        by_batch[batch].append(tuple(row))
    out: dict[int, float | None] = {}
    for target, pks in earlier.items():
        oldest = sorted((row for pk in pks for row in by_batch.get(pk, ())), key=lambda r: r[0])
        out[target] = pilot_median(row[1:] for row in oldest[:PILOT_ROWS])
    return out


def effective_pays(
    *, batches: Sequence[Batch], estimates: dict[int, PayEstimate]
) -> dict[int, dict[str, Any]]:
    """effective_pay of each of `batches` given their estimates, by batch id, in two queries."""
    if not batches:
        return {}
    ids = [b.pk for b in batches]
    # Each batch's own cap on an assignment's active time: its expected time per HIT, one
    # branch per distinct cap (batches of one stage and size usually share it).
    by_cap: dict[float, list[int]] = defaultdict(list)
    for pk in ids:
        by_cap[estimates[pk].seconds_per_hit].append(pk)
    cap = Case(
        *(
            When(hit__batch_id__in=pks, then=Value(timedelta(seconds=seconds)))
            for seconds, pks in by_cap.items()
        ),
        output_field=DurationField(),
    )
    done: dict[int, list[tuple[int, int, Any]]] = defaultdict(list)
    for batch, worker, n, spent in (
        Assignment.objects.filter(hit__batch__in=ids, **PAID_WORK)
        .values("hit__batch_id", "worker_id")
        .annotate(n=Count("pk"), active=Sum(active_time(cap)))
        .values_list("hit__batch_id", "worker_id", "n", "active")
        .order_by()
    ):
        done[batch].append((worker, n, spent))
    bonuses: dict[int, dict[int, Any]] = defaultdict(dict)
    for batch, worker, total in (
        Bonus.objects.filter(assignment__hit__batch__in=ids, sent_at__isnull=False)
        .values("assignment__hit__batch_id", "assignment__worker_id")
        .annotate(total=Sum("amount"))
        .values_list("assignment__hit__batch_id", "assignment__worker_id", "total")
        .order_by()
    ):
        bonuses[batch][worker] = total
    return {
        b.pk: effective_pay_from(batch=b, done=done.get(b.pk, []), bonuses=bonuses.get(b.pk, {}))
        for b in batches
    }
