"""What workers earn: expected hourly pay before publishing (from the papers' times or a
pilot's), and effective hourly pay after (from the time each assignment was worked on,
capped at the batch's expected time so idling is not counted as work)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_CEILING, Decimal
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import (
    Aggregate,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, Extract, Greatest, Least

from annotation.models import Assignment, Batch, Bonus, Question, Run
from annotation.money import symbol
from annotation.selectors.counting import COUNTED_STATES
from annotation.tasktypes import task_type_for

CENT = Decimal("0.01")


def min_hourly_pay() -> Decimal:
    return Decimal(str(settings.CROWDVL_MIN_HOURLY_PAY))


def pilot_seconds_per_item(*, batch: Batch) -> float | None:
    """Median seconds per item of submitted work in earlier batches of the same run, stage and
    task options (a pilot: ECCV's rounds with and without the rationale questions differ), or
    None."""
    same = [
        b.pk
        for b in Batch.objects.filter(run=batch.run_id, stage=batch.stage, pk__lt=batch.pk or 0)
        if same_pilot_options(b.options, batch.options)
    ]
    earlier = (
        Assignment.objects.filter(
            hit__batch__in=same, state__in=COUNTED_STATES, submitted_at__isnull=False
        )
        .annotate(items=Count("hit__questions"))  # one query, not one per assignment
        .order_by("pk")  # the oldest: the same rows every time (pay_many reads them alike)
        .values_list("accepted_at", "submitted_at", "items")[:PILOT_ROWS]
    )
    return pilot_median(earlier)


# A pilot's median reads at most this many of the earliest assignments.
PILOT_ROWS = 500


def same_pilot_options(earlier: dict[str, Any], batch: dict[str, Any]) -> bool:
    return earlier.get("follow_ups", True) == batch.get("follow_ups", True)


def pilot_median(rows: Iterable[tuple[datetime | None, datetime | None, int]]) -> float | None:
    """The pilot's median seconds per item from (accepted, submitted, items) rows, or None
    under 5 usable rows."""
    times = [
        (submitted - accepted).total_seconds() / max(1, items)
        for accepted, submitted, items in rows
        if accepted and submitted
    ]
    times = [t for t in times if t > 0]
    return statistics.median(times) if len(times) >= 5 else None


@dataclass(frozen=True)
class PayEstimate:
    seconds_per_item: float
    source: str  # "pilot" or the task type's documented assumption
    seconds_per_hit: float
    reward: Decimal
    hourly: Decimal
    minimum: Decimal

    @property
    def below_minimum(self) -> bool:
        return self.hourly < self.minimum

    def describe(self) -> str:
        return (
            f"expected {self.seconds_per_hit / 60:.1f} min per HIT ({self.seconds_per_item:.0f} s "
            f"per item, {self.source}) at {symbol()}{self.reward} = {symbol()}{self.hourly}/h "
            f"(minimum {symbol()}{self.minimum}/h)"
        )


def pay_estimate(*, batch: Batch) -> PayEstimate:
    # The HITs' real size (the last may be short, gold items add questions) once they exist.
    return pay_estimate_from(
        batch=batch,
        pilot=pilot_seconds_per_item(batch=batch),
        hits=batch.hits.count(),
        questions=Question.objects.filter(hit__batch=batch).count(),
    )


def pay_estimate_from(
    *, batch: Batch, pilot: float | None, hits: int, questions: int
) -> PayEstimate:
    """The estimate from figures already read (one batch's or, in pay_many, many batches')."""
    task = task_type_for(batch.stage)
    seconds, source = (
        (pilot, "measured in a pilot")
        if pilot is not None
        else (task.seconds_per_item(options=batch.options), task.seconds_source)
    )
    items = questions / hits if hits else 0
    per_hit = seconds * (items or batch.items_per_hit)
    hourly = (batch.reward * Decimal(3600) / Decimal(str(per_hit))).quantize(CENT)
    return PayEstimate(
        seconds_per_item=seconds,
        source=source,
        seconds_per_hit=per_hit,
        reward=batch.reward,
        hourly=hourly,
        minimum=min_hourly_pay(),
    )


def fair_reward(*, seconds: float) -> Decimal:
    """The reward that pays the minimum hourly rate for `seconds` of work (the time the platform
    is told, `CrowdProvider.declared_seconds`), rounded up to cents."""
    dollars = min_hourly_pay() * Decimal(str(seconds)) / Decimal(3600)
    return dollars.quantize(CENT, rounding=ROUND_CEILING)


def effective_pay(*, batch: Batch, estimate: PayEstimate | None = None) -> dict[str, Any]:
    """Per worker (pseudonymous ids stay with the caller) and for the batch: rewards of paid or
    payable work plus bonuses, over active time (accept to submit, each capped at the
    expected time of a HIT)."""
    expected = (estimate or pay_estimate(batch=batch)).seconds_per_hit
    # Summed per worker in the database: an export's manifest reads every batch of a run
    # (CxC's 267k assignments made 267k timestamps to parse in Python).
    done = (
        Assignment.objects.filter(hit__batch=batch, **PAID_WORK)
        .values("worker_id")
        .annotate(n=Count("pk"), active=Sum(active_time(Value(timedelta(seconds=expected)))))
        .values_list("worker_id", "n", "active")
        .order_by()
    )
    bonuses = dict(
        Bonus.objects.filter(assignment__hit__batch=batch, sent_at__isnull=False)
        .values("assignment__worker_id")
        .annotate(total=Sum("amount"))
        .values_list("assignment__worker_id", "total")
    )
    return effective_pay_from(batch=batch, done=done, bonuses=bonuses)


# The assignments whose time and reward count as paid work.
PAID_WORK: dict[str, Any] = {
    "state__in": COUNTED_STATES,
    "confirmed": True,
    "submitted_at__isnull": False,
}


def active_time(cap: Any) -> Least:
    """An assignment's active time: accept (or first answer, if known) to submit, at least 0
    and at most `cap` (a duration expression)."""
    return Least(
        Greatest(
            ExpressionWrapper(
                F("submitted_at") - Coalesce("started_at", "accepted_at"),
                output_field=DurationField(),
            ),
            Value(timedelta(0)),
        ),
        cap,
    )


def effective_pay_from(
    *,
    batch: Batch,
    done: Iterable[tuple[int, int, timedelta | float | int | None]],
    bonuses: dict[int, Any],
) -> dict[str, Any]:
    """The effective pay report from (worker, assignments, active time) rows and sent bonuses
    per worker, already read (one batch's or, in pay_many, many batches')."""
    seconds: dict[int, float] = {}
    paid: dict[int, Decimal] = {}
    for worker, n, spent in done:
        seconds[worker] = _seconds(spent)
        paid[worker] = batch.reward * n
    per_worker: dict[int, dict[str, Any]] = {}
    for worker, secs in seconds.items():
        total = paid[worker] + Decimal(bonuses.get(worker) or 0)
        per_worker[worker] = {
            "assignments": int(paid[worker] / batch.reward) if batch.reward else 0,
            "hours": round(secs / 3600, 4),
            "seconds": round(secs, 3),
            "paid": str(total.quantize(CENT)),
            "hourly": str((total * 3600 / Decimal(str(secs))).quantize(CENT)) if secs else None,
        }
    hours = sum(seconds.values()) / 3600
    total = sum(paid.values(), Decimal(0)) + sum((Decimal(b) for b in bonuses.values()), Decimal(0))
    hourlies = [Decimal(v["hourly"]) for v in per_worker.values() if v["hourly"]]
    return {
        "workers": len(per_worker),
        "hours": round(hours, 3),
        "paid": str(total.quantize(CENT)),
        "hourly": str((total / Decimal(str(hours))).quantize(CENT)) if hours else None,
        "median_worker_hourly": str(statistics.median(hourlies)) if hourlies else None,
        "below_minimum": sum(h < min_hourly_pay() for h in hourlies),
        "minimum": str(min_hourly_pay()),
        "per_worker": per_worker,
    }


def _seconds(value: timedelta | float | int | None) -> float:
    # SQLite may hand back a summed duration as microseconds.
    if value is None:
        return 0.0
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value) / 1e6


class _Median(Aggregate):
    """PostgreSQL's median of a number (`percentile_cont(0.5)`)."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"


def median_seconds_per_hit(*, batch: Batch) -> float | None:
    """The median time workers spent on one of `batch`'s HITs (first answer, or accept, to
    submit; uncapped), over its paid work; None when nothing was submitted."""
    done = Assignment.objects.filter(hit__batch=batch, **PAID_WORK)
    spent = Greatest(
        ExpressionWrapper(
            F("submitted_at") - Coalesce("started_at", "accepted_at"), output_field=DurationField()
        ),
        Value(timedelta(0)),
    )
    if connection.vendor == "postgresql":  # the median in the database: no row per HIT here
        value = done.aggregate(m=_Median(Extract(spent, "epoch"), output_field=FloatField()))["m"]
        return None if value is None else round(float(value), 1)
    times = [_seconds(t) for t in done.annotate(t=spent).values_list("t", flat=True)]
    return round(statistics.median(times), 1) if times else None


def hourly_at(*, reward: Decimal, seconds: float | None) -> str | None:
    """The hourly rate a HIT's `reward` pays for `seconds` of work (None: no time)."""
    if not seconds:
        return None
    return str((reward * 3600 / Decimal(str(seconds))).quantize(CENT))


def run_pay_summary(*, run: Run) -> list[dict[str, Any]]:
    """Per batch of `run`, for export manifests: expected and effective hourly pay (no
    per-worker rows: a manifest names no worker)."""
    out = []
    for batch in run.batches.exclude(status="draft").order_by("pk"):
        expected = pay_estimate(batch=batch)
        effective = effective_pay(batch=batch, estimate=expected)
        effective.pop("per_worker")
        # What a HIT's reward pays per hour at the median time spent on a HIT (issue 50).
        median = median_seconds_per_hit(batch=batch)
        effective["median_seconds_per_hit"] = median
        effective["hourly_at_median_time"] = hourly_at(reward=batch.reward, seconds=median)
        out.append(
            {
                "batch": batch.pk,
                "stage": batch.stage,
                "provider": batch.provider,
                "reward": str(batch.reward),
                "expected": {
                    "seconds_per_item": round(expected.seconds_per_item, 1),
                    "source": expected.source,
                    "hourly": str(expected.hourly),
                },
                "effective": effective,
            }
        )
    return out
