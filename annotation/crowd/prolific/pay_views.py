"""A Prolific batch's pay page (staff of its run): what the study declares, the rate at the
median completion time Prolific judges it on, and the adjustment it asks for, paid on POST."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_http_methods

from annotation.crowd.prolific.adjustments import prolific_pay_adjust
from annotation.crowd.prolific.pay import MedianPay, declared_pay, median_pay
from annotation.crowd.prolific.provider import prolific_provider
from annotation.errors import ServiceError
from annotation.models import Batch
from annotation.permissions import Action, require
from pipeline.errors import InputError


@login_required
@require_http_methods(["GET", "POST"])
def prolific_pay_page(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id, provider="prolific")
    require(request.user, Action.VIEW, run=batch.run)
    review: MedianPay | None = None
    error, paid = None, False
    try:
        client = prolific_provider().client
        if request.method == "POST":
            require(request.user, Action.ACT, run=batch.run)
            review, paid = prolific_pay_adjust(batch=batch, client=client), True
        elif batch.provider_hit_type_id:
            review = median_pay(batch=batch, client=client)
    except (ServiceError, InputError) as exc:
        error = str(exc)
    context = {
        "batch": batch,
        "declared": declared_pay(batch),
        "review": review,
        "paid": paid,
        "error": error,
    }
    return render(request, "annotation/prolific_pay.html", context, status=400 if error else 200)
