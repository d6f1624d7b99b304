"""Installation operations in the API, as on the dashboard: the kill switch (one run's HITs:
its researchers; every HIT: staff). Providers add their own (`annotation/crowd/<name>/api.py`)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.models import Run
from annotation.permissions import Action
from annotation.services.runs.batches import batches_stop
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
