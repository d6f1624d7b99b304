"""Launching a batch from the browser: a form (stage, provider, reward, sizes, times,
qualifications, the stage's own options such as an ECCV round's direction) makes a draft with the same `batch_create` as the CLI and the API; its page
shows what it would cost (rewards and the platform's fees), the expected hourly pay and
anything that would refuse it (budget, daily cap, balance, low pay) before "Publish" or
"Discard"; for an adaptive run's first batch, the judgments and cost over all its rounds
(minimum, expected, maximum: `selectors/money/adaptive_cost.py`). What it offers for a provider comes from the provider's declared capabilities."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.errors import Refused, ServiceError, page_message
from annotation.models import Batch, BatchStatus, Run
from annotation.pages.batches.forms import BatchForm
from annotation.pages.form_errors import form_refusal
from annotation.permissions import Action, require
from annotation.providers import provider_for, web_provider_names
from annotation.selectors.links import public_base_url
from annotation.selectors.money.adaptive_cost import batch_adaptive_cost
from annotation.selectors.money.pay import pay_estimate
from annotation.selectors.reviews.reviews import reviews_held_fast_count
from annotation.selectors.runs.batch_live import batch_live_status
from annotation.selectors.runs.batch_reach import batch_reach
from annotation.services.datasets.images import images_kept_apart
from annotation.services.money.batch_extension import batch_add_assignments, batch_extend
from annotation.services.runs.batches import (
    batch_create,
    batch_discard,
    batch_expire,
    batch_pause,
    batch_publish_request,
    batch_resume,
    batch_sync,
    batch_warnings,
)
from annotation.services.work.speed_policy import speed_rule
from annotation.tasktypes import task_type_for
from pipeline.errors import InputError


@login_required
@require_http_methods(["GET", "POST"])
def batch_new_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.ACT, run=run)
    form = BatchForm(request.POST or None, run=run)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            batch = batch_create(
                run=run,
                stage=data["stage"],
                provider=data["provider"],
                reward=data["reward"],
                items_per_hit=data["items_per_hit"],
                assignments_per_hit=data["assignments_per_hit"],
                limit=data["limit"],
                lifetime_seconds=data["lifetime_hours"] * 3600,
                assignment_duration_seconds=data["assignment_minutes"] * 60,
                qualifications=form.qualifications()
                if provider_for(data["provider"]).takes_qualifications
                else None,
                options={
                    **form.task_options(),
                    **({"allow_low_pay": True} if data["allow_low_pay"] else {}),
                },
            )
        except (InputError, ServiceError) as exc:
            form_refusal(form, exc, fields=BatchForm.SERVICE_FIELDS)
        else:
            batch_adaptive_cost(batch=batch)  # computed now, so the launch page only reads it
            return redirect("batch-launch", batch_id=batch.pk)
    status = 400 if request.method == "POST" else 200
    notices = [provider_for(name).notice for name in web_provider_names()]
    context = {"run": run, "form": form, "notices": [n for n in notices if n]}
    return render(request, "annotation/batch_new.html", context, status=status)


def _refusal(batch: Batch) -> list[str]:
    """Every reason publishing would be refused now (budget, cap, balance, pay, ...)."""
    provider = provider_for(batch.provider)
    try:
        provider.publish_check(batch=batch)
    except Refused as exc:
        return exc.page_reasons
    except (ServiceError, InputError) as exc:
        return [page_message(exc)]
    except Exception as exc:  # no credentials, platform unreachable: say so, publishing will too
        return [f"{provider.label or provider.name} could not be asked: {exc}"]
    return []


@login_required
@require_http_methods(["GET"])
def batch_launch_page(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
    require(request.user, Action.VIEW, run=batch.run)
    provider = provider_for(batch.provider)
    hits = batch.hits.count()
    cost = provider.cost_estimate(batch=batch)
    context = {
        "batch": batch,
        "provider": provider,
        "hits": hits,
        "slots": hits * batch.assignments_per_hit,
        "cost": cost,
        "fees": provider.charges_fees,
        "pay": pay_estimate(batch=batch),
        "requirements": provider.requirements(batch=batch),
        "speed_rule": speed_rule(batch.run),
        "held_fast": reviews_held_fast_count(run=batch.run, batch=batch),
        "adaptive": batch_adaptive_cost(batch=batch),
        "warnings": batch_warnings(batch=batch),
        "refusal": _refusal(batch) if batch.status == BatchStatus.DRAFT else [],
        "notes": provider.launch_notes(batch=batch, base=public_base_url(request)),
        "live": batch_live_status(batch=batch) if batch.status != BatchStatus.DRAFT else None,
        "live_interval_ms": LIVE_POLL_MS,
        # Who can still fill its slots under the claim rules; a stalled batch says so.
        "reach_words": batch_reach(batch=batch).sentences() if batch.status in REACHABLE else [],
        "images_relaxed": task_type_for(batch.stage).images_disjoint
        and not images_kept_apart(batch),
    }
    return render(request, "annotation/batch_launch.html", context)


LIVE_POLL_MS = 3000  # how often the page's live status asks again
REACHABLE = (BatchStatus.DRAFT, BatchStatus.PUBLISHED, BatchStatus.PAUSED)

ACTIONS = ("publish", "discard", "expire", "extend", "add", "sync", "pause", "resume")


def _positive(data: Any, key: str) -> int:
    value = str(data.get(key, "")).strip()
    if not value.isdigit() or int(value) < 1:
        raise InputError("must be a whole number of at least 1", field=key)
    return int(value)


def _batch_action(batch: Batch, action: str, data: Any) -> str:
    """A published batch's actions through the same services as the CLI (provider calls
    included); the message for the page."""
    if action == "pause":
        batch_pause(batch=batch)
        return f"Batch {batch.pk} paused: no new claims; work in progress may finish."
    if action == "resume":
        batch_resume(batch=batch)
        return f"Batch {batch.pk} resumed."
    if action == "expire":
        batch_expire(batch=batch)
        return f"Batch {batch.pk} expired: its HITs are no longer offered."
    if action == "extend":
        hours = _positive(data, "hours")
        batch_extend(batch=batch, seconds=hours * 3600)
        return f"Batch {batch.pk} offered for {hours} more hour(s)."
    if action == "add":
        count = _positive(data, "count")
        hits = batch_add_assignments(batch=batch, count=count)
        return f"{count} more assignment(s) on each of {len(hits)} open HIT(s)."
    changed = batch_sync(batch=batch)
    return f"Synchronised batch {batch.pk}: {changed} assignment(s) changed."


@login_required
@require_POST
def batch_launch_action(request: HttpRequest, batch_id: int, action: str) -> HttpResponse:
    if action not in ACTIONS:
        raise Http404("no such action")
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
    require(request.user, Action.ACT, run=batch.run)
    run_id = batch.run_id
    try:
        if action in ("expire", "extend", "add", "sync", "pause", "resume"):
            messages.success(request, _batch_action(batch, action, request.POST))
            return redirect("batch-launch", batch_id=batch_id)
        if action == "discard":
            batch_discard(batch=batch)
            messages.success(request, f"Draft batch {batch_id} discarded.")
            return redirect("batch-new", run_id=run_id)
        _, job = batch_publish_request(batch=batch)
        if job is not None:
            label = provider_for(batch.provider).label or batch.provider
            messages.success(request, f"Publishing to {label} (job {job.pk}).")
        else:
            messages.success(request, f"Batch {batch_id} published.")
    except (ServiceError, InputError) as exc:
        messages.error(request, page_message(exc))
    return redirect("batch-launch", batch_id=batch_id)
