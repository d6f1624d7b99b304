"""The review queue at `/review/` (held HITs; a POST decides the ticked reviews at once) and
one review at `/review/<id>/`. Each lists the user's projects only and checks the role in the
review's project (annotation/permissions.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from annotation.errors import ServiceError
from annotation.models import Review
from annotation.permissions import (
    Action,
    can,
    is_staff,
    platform_id_runs,
    require,
    sees_platform_ids,
    visible_runs,
)
from annotation.providers import provider_for
from annotation.selectors.reviews.review_page import (
    review_reasons_in_words,
    review_rows,
    review_worker_history,
)
from annotation.selectors.reviews.reviews import review_queue_view
from annotation.services.work.decisions import assignment_reversible_until
from annotation.services.work.review_closing import auto_approved_policy
from annotation.services.work.reviews import review_decide, review_reverse, reviews_decide
from annotation.services.work.speed_policy import speed_rule
from pipeline.errors import InputError


@login_required
@require_http_methods(["GET", "POST"])
def review_queue(request: HttpRequest) -> HttpResponse:
    """The queue; a POST decides the ticked reviews at once (reject needs feedback)."""
    require(request.user, Action.VIEW)
    if request.method == "POST":
        require(request.user, Action.REVIEW)
        ids = [int(v) for v in request.POST.getlist("review") if v.isdigit()]
        decision = request.POST.get("decision")
        if not ids or decision not in ("approve", "reject"):
            messages.error(request, "Tick at least one review and choose approve or reject.")
        else:
            # Reviews outside the user's projects are refused one by one, like any failure.
            result = reviews_decide(
                review_ids=ids,
                approve=decision == "approve",
                feedback=request.POST.get("feedback", ""),
                user=request.user,
            )
            if result["decided"]:
                messages.success(
                    request, f"{decision.title()}d {len(result['decided'])} review(s)."
                )
            for pk, error in result["failed"].items():
                messages.error(request, f"Review {pk}: {error}")
        return redirect(f"{reverse('review-queue')}?sort={request.POST.get('sort', 'deadline')}")
    # Staff: every review, with no project filter in the query (as before projects).
    scope = None if is_staff(request.user) else visible_runs(request.user)
    context = review_queue_view(sort=request.GET.get("sort", "deadline"), runs=scope)
    context["can_review"] = can(request.user, Action.REVIEW)
    context["platform_runs"] = platform_id_runs(request.user)
    return render(request, "annotation/review_queue.html", context)


@login_required
def review_detail(request: HttpRequest, review_id: int) -> HttpResponse:
    review = get_object_or_404(
        Review.objects.select_related("assignment__worker", "assignment__hit__batch__run"),
        pk=review_id,
    )
    run = review.assignment.hit.batch.run
    require(request.user, Action.VIEW, run=run)
    error = None
    if request.method == "POST":
        require(request.user, Action.REVIEW, run=run)
        decision = request.POST.get("decision")
        feedback = request.POST.get("feedback", "")
        category = request.POST.get("category", "")
        if category and decision == "reject":  # a platform's rejection category (Prolific)
            feedback = f"{category}: {feedback}"
        try:
            if decision == "reverse":
                decided = review_reverse(review=review, feedback=feedback)
            else:
                decided = review_decide(
                    review=review, approve=decision == "approve", feedback=feedback
                )
        except (ServiceError, InputError) as exc:
            error = str(exc)
        else:
            # The service decided on the row it locked and read again: its status, not ours.
            messages.success(request, f"Review {review.pk}: {decided.get_status_display()}.")
            return redirect("review-queue")
    policy = auto_approved_policy(review.assignment.hit.batch)
    # The reversal is offered only while the provider still accepts it.
    reversible_until = assignment_reversible_until(assignment=review.assignment)
    context = {
        "review": review,
        # Each question as the worker saw it, the answers in words (the stage's task type).
        "rows": review_rows(review=review),
        "error": error,
        "policy": policy,
        "held_because": review_reasons_in_words(review=review),
        "history": review_worker_history(
            review=review, platform_ids=sees_platform_ids(request.user, run=run)
        ),
        "speed_rule": speed_rule(run),
        "reversible_until": reversible_until,
        "reversal_open": reversible_until is None or timezone.now() <= reversible_until,
        "can_review": can(request.user, Action.REVIEW, run=run),
        "provider": provider_for(review.assignment.hit.batch.provider),
    }
    return render(
        request,
        "annotation/review_detail.html",
        context,
        status=400 if error else 200,
    )
