"""A run's workers page: who worked, how well, how fast, for what pay; block, unblock, bonus
and notify through the worker's crowd provider. Only workers with work in the run are shown
or acted on."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.errors import ServiceError
from annotation.models import Run, Worker
from annotation.money import symbol
from annotation.permissions import Action, can, require, sees_platform_ids
from annotation.selectors.reviews.agreement_pairs import held_answers
from annotation.selectors.runs.run_workers import accuracy_histogram, run_workers, workers_of_run
from annotation.services.work.worker_actions import (
    BLOCK_SCOPES,
    run_worker_bonus,
    worker_block,
    worker_unblock,
    workers_notify,
)
from pipeline.errors import InputError


def _run_worker(run: Run, worker_id: int) -> Worker:
    """A worker of this run (404 for anyone else: the page acts on its own workers only)."""
    return get_object_or_404(workers_of_run(run=run), pk=worker_id)


@login_required
@require_http_methods(["GET"])
def run_workers_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.VIEW, run=run)
    rows = run_workers(run=run, platform_ids=sees_platform_ids(request.user, run=run))
    context = {
        "run": run,
        "can_act": can(request.user, Action.ACT, run=run),
        "can_account_wide": can(request.user, Action.ACCOUNT_WIDE, run=run),
        "rows": rows,
        "histogram": accuracy_histogram(rows),
        "held_answers": held_answers(run),
        "scopes": BLOCK_SCOPES,
    }
    return render(request, "annotation/run_workers.html", context)


@login_required
@require_POST
def run_worker_action(
    request: HttpRequest, run_id: int, worker_id: int, action: str
) -> HttpResponse:
    if action not in ("block", "unblock", "bonus"):
        raise Http404("no such action")
    run = get_object_or_404(Run, pk=run_id)
    # A block (either scope) reaches the worker in every project; a bonus is the run's money.
    require(request.user, Action.ACT if action == "bonus" else Action.ACCOUNT_WIDE, run=run)
    worker = _run_worker(run, worker_id)
    reason = request.POST.get("reason", "")
    try:
        if action == "block":
            worker_block(worker=worker, reason=reason, scope=request.POST.get("scope", "project"))
            messages.success(request, f"Worker {worker.external_id} blocked.")
        elif action == "unblock":
            worker_unblock(worker=worker, reason=reason)
            messages.success(request, f"Worker {worker.external_id} unblocked.")
        else:  # bonus: paid on the worker's latest counted assignment of this run
            bonus = run_worker_bonus(
                run=run, worker=worker, amount=request.POST.get("amount", ""), reason=reason
            )
            messages.success(request, f"Bonus of {symbol()}{bonus.amount} to {worker.external_id}.")
    except (ServiceError, InputError) as exc:
        messages.error(request, f"Worker {worker.external_id}: {exc}")
    return redirect("run-workers", run_id=run.pk)


@login_required
@require_POST
def run_workers_notify(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.ACCOUNT_WIDE, run=run)
    ids = [int(v) for v in request.POST.getlist("worker") if v.isdigit()]
    workers = list(workers_of_run(run=run).filter(pk__in=ids))
    try:
        if not workers:
            raise InputError("pick at least one worker of this run", field="worker")
        sent = workers_notify(
            workers=workers,
            subject=request.POST.get("subject", ""),
            message=request.POST.get("message", ""),
        )
        messages.success(
            request, f"Notified {sent} worker(s) ({len(workers) - sent} already had it)."
        )
    except (ServiceError, InputError) as exc:
        messages.error(request, str(exc))
    return redirect("run-workers", run_id=run.pk)
