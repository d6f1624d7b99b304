"""What the researcher's dashboard shows: runs with their jobs, batches and exports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.db.models import F, Func, IntegerField, OuterRef, Q, QuerySet, Subquery

from annotation.models import (
    Assignment,
    Batch,
    Hit,
    HitStatus,
    JobState,
    RefusedAnswers,
    Review,
    ReviewStatus,
    Run,
)
from annotation.providers import provider_for
from annotation.selectors.money.pay import PayEstimate
from annotation.selectors.money.pay_many import effective_pays, pay_estimates


def dashboard_filter_from(params: Mapping[str, str]) -> dict[str, str]:
    """The dashboard's filter from a query string: text (run or dataset name, or a run id),
    project id, kind and status; unknown keys are ignored, every value is a plain string."""
    return {
        key: str(params.get(key, "")).strip()[:200] for key in ("q", "project", "kind", "status")
    }


def dashboard_filtered(
    *, runs: QuerySet[Run] | None, q: str = "", project: str = "", kind: str = "", status: str = ""
) -> QuerySet[Run]:
    """`runs` (every run when None) narrowed by the dashboard's filter."""
    runs = Run.objects.all() if runs is None else runs
    if q:
        text = Q(name__icontains=q) | Q(dataset__name__icontains=q)
        runs = runs.filter(text | Q(pk=int(q)) if q.isdigit() else text)
    if project.isdigit():
        runs = runs.filter(project_id=int(project))
    if kind:
        runs = runs.filter(kind=kind)
    if status:
        runs = runs.filter(status=status)
    return runs


def dashboard_runs(
    *, limit: int = 20, base: str | None = None, runs: QuerySet[Run] | None = None
) -> list[dict[str, Any]]:
    """The newest `limit` of `runs` (every run by default; pages pass the user's visible
    runs)."""
    runs = (
        (Run.objects.all() if runs is None else runs)
        .select_related("dataset", "project")
        .prefetch_related("jobs", "exports")
        .order_by("-pk")[:limit]
    )
    batches = list(
        Batch.objects.filter(run__in=[r.pk for r in runs])
        .annotate(
            n_hits=_count(Hit.objects.filter(batch=OuterRef("pk"))),
            open_hits=_count(Hit.objects.filter(batch=OuterRef("pk"), status=HitStatus.OPEN)),
            held=_count(
                Review.objects.filter(
                    assignment__hit__batch=OuterRef("pk"), status=ReviewStatus.OPEN
                )
            ),
            unconfirmed=_count(
                Assignment.objects.filter(hit__batch=OuterRef("pk"), confirmed=False)
            ),
            refused=_count(RefusedAnswers.objects.filter(batch=OuterRef("pk"))),
            stuck=_count(
                Hit.objects.filter(
                    batch=OuterRef("pk"),
                    cannot_grow_at__isnull=False,
                    reoffered_as__isnull=True,
                )
            ),
        )
        .order_by("pk")
    )
    pay = pay_summaries(batches=batches)  # all shown batches at once: no statements per batch
    by_run: dict[int, list[dict[str, Any]]] = {}
    for batch in batches:
        by_run.setdefault(batch.run_id, []).append(
            {
                "batch": batch,
                "hits": batch.n_hits,
                "open": batch.open_hits,
                "held": batch.held,
                "unconfirmed": batch.unconfirmed,
                "refused": batch.refused,
                "stuck": batch.stuck,
                "link": provider_for(batch.provider).worker_url(batch=batch, base=base),
                "pay": pay[batch.pk],
            }
        )
    return [
        {
            "run": run,
            "jobs": sorted(run.jobs.all(), key=lambda j: -j.pk)[:5],
            "batches": by_run.get(run.pk, []),
            "exports": sorted(run.exports.all(), key=lambda e: -e.pk)[:3],
        }
        for run in runs
    ]


# Work done this many times faster than the expected time is flagged: a real person reading
# and looking at every item rarely manages it (scripted, careless or simulated answers).
IMPLAUSIBLE_SPEEDUP = 4


def _count(rows: QuerySet[Any]) -> Subquery:
    """The number of `rows` (filtered by an OuterRef to the batch) as a correlated subquery:
    each count reads its own index, where joining hits, assignments, reviews and events in
    one grouped query sorted and planned a row per HIT (12 ms at 20 shown runs of 100 HITs)."""
    return Subquery(
        rows.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n"),
        output_field=IntegerField(),
    )


def pay_summary(batch: Batch) -> dict[str, Any]:
    """Expected hourly pay before publishing; effective hourly pay once work is in, flagged
    when it implies work far faster than the expected time."""
    return pay_summaries(batches=[batch])[batch.pk]


def pay_summaries(*, batches: Sequence[Batch]) -> dict[int, dict[str, Any]]:
    """pay_summary of each of `batches`, by batch id, in a fixed number of queries."""
    estimates = pay_estimates(batches=batches)
    effective = effective_pays(
        batches=[b for b in batches if b.status != "draft"], estimates=estimates
    )
    return {b.pk: _summary(estimates[b.pk], effective.get(b.pk)) for b in batches}


def _summary(expected: PayEstimate, effective: dict[str, Any] | None) -> dict[str, Any]:
    hourly = Decimal(effective["hourly"]) if effective and effective["hourly"] else None
    speedup = float(hourly / expected.hourly) if hourly and expected.hourly else None
    return {
        "expected": expected.hourly,
        "below": expected.below_minimum,
        "effective": effective["hourly"] if effective else None,
        "underpaid": effective["below_minimum"] if effective else 0,
        "speedup": round(speedup, 1) if speedup and speedup >= IMPLAUSIBLE_SPEEDUP else None,
    }


def dashboard_busy(*, runs: QuerySet[Run] | None = None) -> bool:
    from annotation.models import Job

    jobs = Job.objects.filter(state__in=(JobState.PENDING, JobState.RUNNING))
    if runs is not None:
        jobs = jobs.filter(run__in=runs)
    return jobs.exists()
