"""Launching a batch from the browser: a form (stage, provider, reward, sizes, times,
qualifications, the stage's own options such as an ECCV round's direction) makes a draft with the same `batch_create` as the CLI and the API; its page
shows what it would cost (rewards and the platform's fees), the expected hourly pay and
anything that would refuse it (budget, daily cap, balance, low pay) before "Publish" or
"Discard". What it offers for a provider comes from the provider's declared capabilities."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.crowd import provider_for, web_provider_names
from annotation.errors import ServiceError
from annotation.flow_registry import flow_for_kind, stage_label
from annotation.form_errors import form_refusal
from annotation.models import Batch, BatchStatus, Run
from annotation.permissions import Action, require
from annotation.selectors.links import public_base_url
from annotation.selectors.live import batch_live_status
from annotation.selectors.pay import pay_estimate
from annotation.selectors.reviews import reviews_held_fast_count
from annotation.services.batches import (
    batch_create,
    batch_discard,
    batch_expire,
    batch_pause,
    batch_publish_request,
    batch_resume,
    batch_sync,
    batch_warnings,
)
from annotation.services.review import batch_add_assignments, batch_extend
from annotation.services.speed_policy import speed_rule
from annotation.tasktypes import task_type_for
from annotation.tasktypes.base import BatchOption
from pipeline.errors import InputError


def providers() -> list[tuple[str, str]]:
    """Real crowds; the simulated one only where it cannot be mistaken for them (DEBUG)."""
    return [(name, provider_for(name).label or name) for name in web_provider_names()]


class BatchForm(forms.Form):
    stage = forms.ChoiceField()
    provider = forms.ChoiceField()
    reward = forms.DecimalField(
        min_value=Decimal("0.01"), decimal_places=2, required=False, help_text="$ per HIT"
    )
    items_per_hit = forms.IntegerField(min_value=1, required=False)
    assignments_per_hit = forms.IntegerField(min_value=1, required=False)
    limit = forms.IntegerField(
        min_value=1,
        required=False,
        help_text="at most this many waiting items (e.g. a stage's first, calibration batch)",
    )
    lifetime_hours = forms.IntegerField(min_value=1, initial=7 * 24)
    assignment_minutes = forms.IntegerField(min_value=1, initial=60)
    min_approval_percent = forms.IntegerField(min_value=0, max_value=100, required=False)
    min_approved_hits = forms.IntegerField(min_value=0, required=False)
    locales = forms.CharField(required=False, help_text="platforms with locales: e.g. US,GB,CA")
    allow_low_pay = forms.BooleanField(required=False)

    def __init__(self, *args: Any, run: Run, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        flow = flow_for_kind(run.kind)
        tasks = list(flow.task_types) if flow else []
        self.fields["stage"].choices = [(t.stage, stage_label(t.stage)) for t in tasks]
        self.fields["provider"].choices = providers()
        for task in tasks:  # the stages' own options (an ECCV round's direction, ...)
            for option in task.batch_options:
                only = f" ({stage_label(task.stage)} only)" if len(tasks) > 1 else ""
                self.fields.setdefault(option.name, _option_field(option, only))

    def task_options(self) -> dict[str, Any]:
        """The options the chosen stage takes, as `create_batch` stores them (an empty
        choice: not set)."""
        data = self.cleaned_data
        return {
            option.name: data[option.name]
            for option in task_type_for(data["stage"]).batch_options
            if option.name in data and data[option.name] != ""
        }

    def qualifications(self) -> dict[str, Any]:
        data = self.cleaned_data
        rules: dict[str, Any] = {}
        for key in ("min_approval_percent", "min_approved_hits"):
            if data[key] is not None:
                rules[key] = data[key]
        if data["locales"].strip():
            rules["locales"] = [c.strip().upper() for c in data["locales"].split(",") if c.strip()]
        return rules


def _option_field(option: BatchOption, only: str) -> forms.Field:
    if option.choices:
        return forms.ChoiceField(
            label=option.label,
            choices=option.choices,
            initial=option.default,
            required=False,
            help_text=option.help + only,
        )
    return forms.BooleanField(
        label=option.label, initial=option.default, required=False, help_text=option.help + only
    )


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
            form_refusal(form, exc)
        else:
            return redirect("batch-launch", batch_id=batch.pk)
    status = 400 if request.method == "POST" else 200
    notices = [provider_for(name).notice for name in web_provider_names()]
    context = {"run": run, "form": form, "notices": [n for n in notices if n]}
    return render(request, "annotation/batch_new.html", context, status=status)


def _refusal(batch: Batch) -> str | None:
    """Why publishing would be refused now (budget, cap, balance, pay), if it would."""
    provider = provider_for(batch.provider)
    try:
        provider.publish_check(batch=batch)
    except (ServiceError, InputError) as exc:
        return str(exc)
    except Exception as exc:  # no credentials, platform unreachable: say so, publishing will too
        return f"{provider.label or provider.name} could not be asked: {exc}"
    return None


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
        "warnings": batch_warnings(batch=batch),
        "refusal": _refusal(batch) if batch.status == BatchStatus.DRAFT else None,
        "notes": provider.launch_notes(batch=batch, base=public_base_url(request)),
        "live": batch_live_status(batch=batch) if batch.status != BatchStatus.DRAFT else None,
        "live_interval_ms": LIVE_POLL_MS,
    }
    return render(request, "annotation/batch_launch.html", context)


LIVE_POLL_MS = 3000  # how often the page's live status asks again

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
        messages.error(request, str(exc))
    return redirect("batch-launch", batch_id=batch_id)
