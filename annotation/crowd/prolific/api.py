"""Prolific's API: a batch's pay as Prolific computes it, and paying the adjustment the median
completion time asks for (idempotent: what was paid is never paid again)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.crowd.prolific.adjustments import prolific_pay_adjust
from annotation.crowd.prolific.pay import MedianPay, declared_pay, median_pay
from annotation.crowd.prolific.provider import prolific_provider
from annotation.models import Batch
from annotation.permissions import Action


class PayOutput(serializers.Serializer):
    batch = serializers.IntegerField()
    declared_minutes = serializers.IntegerField(help_text="estimated_completion_time sent")
    declared_hourly = serializers.DecimalField(
        max_digits=12, decimal_places=2, help_text="reward over declared time"
    )
    minimum_hourly = serializers.DecimalField(max_digits=12, decimal_places=2)
    completed = serializers.IntegerField(help_text="completed submissions timed at Prolific")
    median_seconds = serializers.FloatField(allow_null=True)
    median_hourly = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    adjustment_per_participant = serializers.DecimalField(max_digits=12, decimal_places=2)
    owed_participants = serializers.IntegerField()
    owed_total = serializers.DecimalField(max_digits=12, decimal_places=2)
    summary = serializers.CharField()


def _pay(batch: Batch, review: MedianPay) -> dict[str, object]:
    declared = declared_pay(batch)
    return {
        "batch": batch.pk,
        "declared_minutes": declared.minutes,
        "declared_hourly": declared.hourly,
        "minimum_hourly": review.minimum,
        "completed": review.submissions,
        "median_seconds": review.median_seconds,
        "median_hourly": review.hourly,
        "adjustment_per_participant": review.owed_each,
        "owed_participants": len(review.to_pay),
        "owed_total": review.total,
        "summary": review.describe(),
    }


class ProlificPayApi(ServiceAPIView):
    """GET: the batch's pay at Prolific (declared and at the median); POST: pay what the median
    asks for (safe to repeat)."""

    required_action = Action.VIEW

    @extend_schema(request=None, responses={200: PayOutput, **ERRORS})
    def get(self, request: Request, batch_id: int) -> Response:
        batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
        self.require(request, run=batch.run)
        review = median_pay(batch=batch, client=prolific_provider().client)
        return Response(PayOutput(_pay(batch, review)).data)

    @extend_schema(request=None, responses={200: PayOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
        self.require(request, run=batch.run, action=Action.ACT)
        review = prolific_pay_adjust(batch=batch, client=prolific_provider().client)
        return Response(PayOutput(_pay(batch, review)).data)
