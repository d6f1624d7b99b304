"""What a run's page shows: the flow's funnel, each batch's submissions over time, agreement
per stage, ECCV's answer shares per model and rank, money against the budget, and the jobs.
Numbers come from the flows' own selectors where they exist (funnel, answer shares)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, Sum

from annotation.flow_registry import flow_for_kind, stage_label
from annotation.models import Answer, Assignment, AssignmentState, Bonus, Item, Job, Run
from annotation.paths import paths_hidden
from annotation.providers import provider_for
from annotation.selectors.counting import COUNTED_STATES, counted_reviewed
from annotation.selectors.reviews.agreement_pairs import agreement_pairs, held_answers
from annotation.services.jobs.jobs import LIVE


def run_funnel(run: Run) -> list[tuple[str, int | None]]:
    """(step, count) in pipeline order, the flow's own or items per kind; None: not started."""
    flow = flow_for_kind(run.kind)
    if flow is not None and flow.funnel is not None:
        return flow.funnel(run)
    counts = Item.objects.filter(run=run).values_list("kind").annotate(n=Count("pk"))
    return [(str(kind), n) for kind, n in counts.order_by("kind")]


def batch_progress(run: Run) -> list[dict[str, Any]]:
    """Per published batch: submissions counted over minutes since it was published."""
    out = []
    for batch in run.batches.exclude(published_at=None).order_by("pk"):
        times = Assignment.objects.filter(hit__batch=batch, submitted_at__isnull=False).values_list(
            "submitted_at", flat=True
        )
        assert batch.published_at is not None
        minutes = sorted((t - batch.published_at).total_seconds() / 60 for t in times if t)
        out.append(
            {
                "batch": batch.pk,
                "label": f"batch {batch.pk} ({batch.get_stage_display()})",
                "points": [{"x": round(m, 2), "y": n} for n, m in enumerate(minutes, start=1)],
                "slots": batch.hits.count() * batch.assignments_per_hit,
                "last": round(minutes[-1], 1) if minutes else None,
            }
        )
    return out


def stage_agreement(run: Run) -> list[dict[str, Any]]:
    """Per stage: over items at least two workers answered, the share of answer pairs on the
    same item that agree (same label): `agreement_pairs`, pooled over the stage's workers."""
    answered = set(
        Answer.objects.filter(counted_reviewed(""), question__item__run=run)
        .values_list("question__hit__batch__stage", flat=True)
        .distinct()
    )
    # Every answered stage has a row: one whose items each have one answer (one assignment per
    # HIT, as ECCV Caption's judgments) is listed with nothing compared, so the page says why.
    agree: dict[str, list[int]] = {stage: [0, 0] for stage in answered}
    for (stage, _worker), (ok, n) in agreement_pairs(run).items():
        agree[stage][0] += ok
        agree[stage][1] += n
    return [
        {
            "stage": stage,
            "title": stage_label(stage),
            "agreement": round(ok / n, 4) if n else None,
            "pairs": n // 2,  # each pair was counted from both sides
        }
        for stage, (ok, n) in sorted(agree.items())
    ]


def run_spend(run: Run) -> dict[str, Any]:
    """Committed (every published slot's reward, and the platforms' fees), owed (submitted
    work not yet approved: it may still be rejected) and paid (approved work and sent
    bonuses), against CROWDVL_BUDGET where set (a per-batch budget)."""
    committed = owed = paid = Decimal(0)
    for batch in run.batches.exclude(status="draft"):
        committed += provider_for(batch.provider).cost_estimate(batch=batch).total
        states = dict(
            Assignment.objects.filter(hit__batch=batch, confirmed=True, state__in=COUNTED_STATES)
            .values_list("state")
            .annotate(n=Count("pk"))
        )
        owed += batch.reward * states.get(AssignmentState.SUBMITTED, 0)
        paid += batch.reward * states.get(AssignmentState.APPROVED, 0)
        sent = Bonus.objects.filter(assignment__hit__batch=batch, sent_at__isnull=False)
        paid += sent.aggregate(total=Sum("amount"))["total"] or Decimal(0)
    budget = settings.CROWDVL_BUDGET
    return {"committed": str(committed), "owed": str(owed), "paid": str(paid), "budget": budget}


def run_jobs(run: Run) -> list[dict[str, Any]]:
    return [
        {
            "id": job.pk,
            "name": job.name,
            "state": job.state,
            "progress": job.progress,
            "message": paths_hidden(job.message),
            "live": job.state in LIVE,
        }
        for job in Job.objects.filter(run=run).order_by("-pk")[:50]
    ]


def run_page_data(run: Run) -> dict[str, Any]:
    funnel = run_funnel(run)
    flow = flow_for_kind(run.kind)
    shares = flow.answer_shares(run) if flow and flow.answer_shares else None
    return {
        "funnel": {"labels": [s for s, _ in funnel], "counts": [n for _, n in funnel]},
        "progress": batch_progress(run),
        "agreement": stage_agreement(run),
        "held_answers": held_answers(run),
        "shares": shares,
        "spend": run_spend(run),
        "jobs": run_jobs(run),
    }
