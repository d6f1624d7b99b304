"""MTurk's API: publishing a draft batch as a job, and the read-only money check (staff)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.jobs import JobOutput
from annotation.crowd.mturk.publish import mturk_publish_start
from annotation.crowd.mturk.reconcile import mturk_reconcile
from annotation.models import Batch
from annotation.permissions import Action


class MTurkPublishApi(ServiceAPIView):
    """Check, estimate and enqueue publishing a draft MTurk batch."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={202: JobOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
        self.require(request, run=batch.run)
        job = mturk_publish_start(batch=batch)
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class MoneyOutput(serializers.Serializer):
    approved = serializers.IntegerField()
    rewards = serializers.DecimalField(max_digits=12, decimal_places=2)
    fees = serializers.DecimalField(max_digits=12, decimal_places=2)
    bonuses = serializers.DecimalField(max_digits=12, decimal_places=2)
    bonus_fees = serializers.DecimalField(max_digits=12, decimal_places=2)
    total = serializers.DecimalField(max_digits=12, decimal_places=2)


class MTurkReconcileApi(ServiceAPIView):
    """Compare every published MTurk batch's money and HITs with MTurk's own records (reads
    only; it lists the whole account's HITs, so staff only)."""

    required_action = Action.ADMIN

    class InputSerializer(serializers.Serializer):
        environment = serializers.ChoiceField(
            choices=["sandbox", "production"], required=False, allow_null=True, default=None
        )

    class OutputSerializer(serializers.Serializer):
        class BatchRow(serializers.Serializer):
            batch = serializers.IntegerField(source="batch.pk")
            run = serializers.IntegerField(source="batch.run_id")
            committed = serializers.DecimalField(max_digits=12, decimal_places=2)
            local = MoneyOutput()
            remote = MoneyOutput()
            submitted_remote = serializers.IntegerField()
            matches = serializers.BooleanField()

        environment = serializers.CharField()
        batches = BatchRow(many=True)
        mismatches = serializers.SerializerMethodField()
        unknown_remote = serializers.ListField(
            child=serializers.DictField(), help_text="HITs of ours MTurk has and we did not record"
        )
        other_remote = serializers.IntegerField(help_text="HITs of the account made elsewhere")
        missing_remote = serializers.SerializerMethodField(
            help_text="HITs we recorded that MTurk does not list"
        )
        gone = serializers.SerializerMethodField(
            help_text="HITs we recorded that MTurk no longer knows: their money was not compared"
        )

        def get_mismatches(self, report: object) -> list[int]:
            return [row.batch.pk for row in report.mismatches]  # type: ignore[attr-defined]

        def get_missing_remote(self, report: object) -> list[int]:
            return [hit.pk for hit in report.missing_remote]  # type: ignore[attr-defined]

        def get_gone(self, report: object) -> list[int]:
            return [hit.pk for hit in report.gone]  # type: ignore[attr-defined]

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = MTurkReconcileApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        report = mturk_reconcile(environment=data.validated_data["environment"])
        return Response(MTurkReconcileApi.OutputSerializer(report).data)
