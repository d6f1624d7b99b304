"""The BISON flow's API operations. The flow's selectors and services (numpy, pyarrow) are
imported by the operation that calls them: the API's URLs, which every command's checks load,
import this module (issue 46)."""

from __future__ import annotations

import json

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.jobs import JobOutput
from annotation.flows.bison.vocabulary import DEFAULT_EPOCHS
from annotation.models import Export, Run
from annotation.permissions import Action
from annotation.services.datasets.dataset_jobs import server_file
from pipeline.bison import bison_accuracy, parse_bison_annotations, parse_bison_predictions


class PairingStartApi(ServiceAPIView):
    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        vectors_path = serializers.CharField(required=False, allow_null=True, default=None)
        dim = serializers.IntegerField(min_value=2, max_value=2048, default=100)
        epochs = serializers.IntegerField(min_value=1, max_value=500, default=DEFAULT_EPOCHS)
        seed = serializers.IntegerField(default=0)
        block_size = serializers.IntegerField(
            min_value=1, required=False, allow_null=True, default=None
        )
        allow_new_dim = serializers.BooleanField(default=False)

    @extend_schema(request=InputSerializer, responses={202: JobOutput, **ERRORS})
    def post(self, request: Request, run_id: int) -> Response:
        from annotation.flows.bison.services.pairing import pairing_start

        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data)
        if options["vectors_path"]:  # a server file: only from the import folder
            options["vectors_path"] = str(
                server_file(options["vectors_path"], field="vectors_path")
            )
        job = pairing_start(run=run, **options)
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class RunSummaryApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description="The run's status and its counts per stage (pairs, triples, verified).",
    )
    def get(self, request: Request, run_id: int) -> Response:
        from annotation.flows.bison.selectors import bison_stage_counts

        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        return Response({"run": run.pk, "status": run.status, **bison_stage_counts(run=run)})


class BisonEvaluateApi(ServiceAPIView):
    """Score predictions (uploaded JSON) against a stored export: only scores come back, so
    viewing the export's run is enough."""

    required_action = Action.VIEW

    class InputSerializer(serializers.Serializer):
        export = serializers.PrimaryKeyRelatedField(queryset=Export.objects.all())
        predictions = serializers.JSONField()

    class OutputSerializer(serializers.Serializer):
        accuracy = serializers.FloatField()
        correct = serializers.IntegerField()
        total = serializers.IntegerField()
        missing = serializers.IntegerField()
        unknown = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        self.require(request, run=data.validated_data["export"].run)
        path = data.validated_data["export"].path
        with open(path, "rb") as fh:
            records = parse_bison_annotations(fh.read(), file=path)
        predictions = parse_bison_predictions(
            json.dumps(data.validated_data["predictions"]), file="predictions"
        )
        score = bison_accuracy(records, predictions)
        return Response(
            {
                "accuracy": score.accuracy,
                "correct": score.correct,
                "total": score.total,
                "missing": len(score.missing),
                "unknown": len(score.unknown),
            }
        )
