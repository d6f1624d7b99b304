"""Installation operations in the API, as on the dashboard: the kill switch (one run's HITs:
its researchers; every HIT: staff), revoking a local worker's link, and the read-only MTurk
money check (staff)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.models import Invitation, Run
from annotation.permissions import Action
from annotation.services.batches import batches_stop
from annotation.services.invitations import invitation_revoke
from annotation.services.mturk_reconcile import mturk_reconcile
from pipeline.errors import InputError


class StopApi(ServiceAPIView):
    """The kill switch: stop offering every HIT of a run (`run`), or of the whole
    installation (no `run`: staff only). `confirm` must be "STOP"."""

    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        run = serializers.IntegerField(required=False, allow_null=True, default=None)
        reason = serializers.CharField(max_length=500, default="kill switch")
        confirm = serializers.CharField(help_text='type "STOP"')

    class OutputSerializer(serializers.Serializer):
        stopped = serializers.ListField(child=serializers.IntegerField())
        failed = serializers.DictField(
            child=serializers.CharField(), help_text="batch id -> why (call again)"
        )

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = StopApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run_id = data.validated_data["run"]
        run = get_object_or_404(Run, pk=run_id) if run_id is not None else None
        self.require(request, run=run, action=Action.ACT if run else Action.ADMIN)
        if data.validated_data["confirm"] != "STOP":
            raise InputError('type "STOP" to confirm: nothing was stopped', field="confirm")
        result = batches_stop(run=run, reason=data.validated_data["reason"])
        failed = {str(pk): str(error) for pk, error in result["failed"].items()}
        return Response({"stopped": list(result["stopped"]), "failed": failed})


class InvitationRevokeApi(ServiceAPIView):
    """A local worker's link stops working at once; their submitted work stays."""

    required_action = Action.ACT

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        label = serializers.CharField()
        revoked_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(request=None, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, invitation_id: int) -> Response:
        invitation = get_object_or_404(Invitation.objects.select_related("run"), pk=invitation_id)
        self.require(request, run=invitation.run)
        invitation = invitation_revoke(invitation=invitation)
        return Response(InvitationRevokeApi.OutputSerializer(invitation).data)


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

        def get_mismatches(self, report: object) -> list[int]:
            return [row.batch.pk for row in report.mismatches]  # type: ignore[attr-defined]

        def get_missing_remote(self, report: object) -> list[int]:
            return [hit.pk for hit in report.missing_remote]  # type: ignore[attr-defined]

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = MTurkReconcileApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        report = mturk_reconcile(environment=data.validated_data["environment"])
        return Response(MTurkReconcileApi.OutputSerializer(report).data)
