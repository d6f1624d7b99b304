"""Researcher pages (staff only): the dashboard of runs, and the review queue of held HITs."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.errors import ServiceError
from annotation.models import Review, Run
from annotation.selectors.reviews import review_queue_view
from annotation.services.batches import batches_stop
from annotation.services.job_recovery import job_cancel, job_resume
from annotation.services.mturk_reconcile import mturk_reconcile
from annotation.services.review_closing import auto_approved_policy
from annotation.services.reviews import review_decide, review_reverse, reviews_decide
from pipeline.errors import InputError


@staff_member_required
@require_http_methods(["GET", "POST"])
def review_queue(request: HttpRequest) -> HttpResponse:
    """The queue; a POST decides the ticked reviews at once (reject needs feedback)."""
    if request.method == "POST":
        ids = [int(v) for v in request.POST.getlist("review") if v.isdigit()]
        decision = request.POST.get("decision")
        if not ids or decision not in ("approve", "reject"):
            messages.error(request, "Tick at least one review and choose approve or reject.")
        else:
            result = reviews_decide(
                review_ids=ids,
                approve=decision == "approve",
                feedback=request.POST.get("feedback", ""),
            )
            if result["decided"]:
                messages.success(
                    request, f"{decision.title()}d {len(result['decided'])} review(s)."
                )
            for pk, error in result["failed"].items():
                messages.error(request, f"Review {pk}: {error}")
        return redirect(f"{reverse('review-queue')}?sort={request.POST.get('sort', 'deadline')}")
    context = review_queue_view(sort=request.GET.get("sort", "deadline"))
    return render(request, "annotation/review_queue.html", context)


@staff_member_required
def review_detail(request: HttpRequest, review_id: int) -> HttpResponse:
    review = get_object_or_404(
        Review.objects.select_related("assignment__worker", "assignment__hit__batch"), pk=review_id
    )
    error = None
    if request.method == "POST":
        decision = request.POST.get("decision")
        feedback = request.POST.get("feedback", "")
        try:
            if decision == "reverse":
                review_reverse(review=review, feedback=feedback)
            else:
                review_decide(review=review, approve=decision == "approve", feedback=feedback)
        except ServiceError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Review {review.pk}: {review.status}.")
            return redirect("review-queue")
    failed = {r["position"]: r for r in review.reasons}
    answers = review.assignment.answers.select_related(
        "question__item__positive__dataset", "question__item__caption"
    ).order_by("question__position")
    from annotation.selectors.images import STAFF_LINKS

    rows = [
        {
            "position": a.question.position + 1,
            "image": STAFF_LINKS.url(a.question.item.positive),
            "caption": a.question.item.caption.text if a.question.item.caption else "",
            "answer": a.label,
            "details": a.details,
            "gold": a.question.item.kind if a.question.item.kind.startswith("gold") else "",
            "failed": failed.get(a.question.position),
        }
        for a in answers
    ]
    policy = auto_approved_policy(review.assignment.hit.batch)
    return render(
        request,
        "annotation/review_detail.html",
        {"review": review, "rows": rows, "error": error, "policy": policy},
        status=400 if error else 200,
    )


@staff_member_required
def dashboard(request: HttpRequest) -> HttpResponse:
    from annotation.selectors.dashboard import dashboard_busy, dashboard_runs
    from annotation.selectors.links import public_base_url

    return render(
        request,
        "annotation/dashboard.html",
        {
            "runs": dashboard_runs(base=public_base_url(request)),
            "busy": dashboard_busy(),
            "stall_seconds": settings.CROWDVL_JOB_STALL_SECONDS,
        },
    )


@staff_member_required
@require_http_methods(["GET", "POST"])
def mturk_reconcile_page(request: HttpRequest) -> HttpResponse:
    """Asks MTurk only when staff press the button (it lists every HIT and assignment)."""
    report, error = None, None
    if request.method == "POST":
        try:
            report = mturk_reconcile(environment=request.POST.get("environment") or None)
        except (ServiceError, InputError) as exc:
            error = str(exc)
    context = {"report": report, "error": error}
    return render(request, "annotation/mturk_reconcile.html", context, status=400 if error else 200)


@staff_member_required
@require_http_methods(["POST"])
def stop_hits(request: HttpRequest) -> HttpResponse:
    """The kill switch: every HIT still on offer, of one run or of the installation."""
    run_id = request.POST.get("run") or None
    run = get_object_or_404(Run, pk=run_id) if run_id else None
    if request.POST.get("confirm") != "STOP":
        messages.error(request, "Type STOP to confirm: nothing was stopped.")
        return redirect("dashboard")
    try:
        result = batches_stop(run=run, reason=request.POST.get("reason") or "kill switch")
    except InputError as exc:
        messages.error(request, str(exc))
        return redirect("dashboard")
    messages.success(request, f"Stopped batches: {result['stopped'] or 'none'}.")
    for pk, error in result["failed"].items():
        messages.error(request, f"Batch {pk} could not be stopped ({error}); press again.")
    return redirect("dashboard")


@staff_member_required
@require_http_methods(["POST"])
def job_action(request: HttpRequest, job_id: int, action: str) -> HttpResponse:
    """Resume (re-send its missing steps) or cancel a pending or running job."""
    who = request.user.get_username()
    try:
        if action == "resume":
            sent = job_resume(job_id=job_id, reason="by hand", by=who)
            messages.success(request, f"Job {job_id}: {len(sent)} step(s) sent again.")
        else:
            job_cancel(job_id=job_id, by=who)
            messages.success(request, f"Job {job_id} cancelled.")
    except ServiceError as exc:
        messages.error(request, str(exc))
    return redirect("dashboard")
