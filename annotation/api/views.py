"""One API class per operation; each parses input, calls a service, renders output."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ServiceAPIView
from annotation.models import Batch, Dataset, Export, ImageSource, Job, Run, RunKind, Stage
from annotation.selectors.bison import bison_stage_counts
from annotation.services.batches import batch_create, batch_publish
from annotation.services.datasets import dataset_import
from annotation.services.exports import bison_export_start
from annotation.services.pairing import pairing_start
from annotation.services.runs import run_create
from pipeline.bison import bison_accuracy, parse_bison_annotations, parse_bison_predictions


class JobOutput(serializers.ModelSerializer):
    class Meta:
        model = Job
        fields = [
            "id",
            "name",
            "run",
            "state",
            "progress",
            "message",
            "error",
            "parts_total",
            "parts_done",
            "result",
            "created_at",
            "started_at",
            "finished_at",
        ]


class DatasetImportApi(ServiceAPIView):
    class InputSerializer(serializers.Serializer):
        path = serializers.CharField()
        name = serializers.CharField(required=False)
        image_source = serializers.ChoiceField(
            choices=ImageSource.values, default=ImageSource.COCO_URL
        )
        image_location = serializers.CharField(required=False, default="", allow_blank=True)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField(source="dataset.pk")
        name = serializers.CharField(source="dataset.name")
        created = serializers.BooleanField()
        images = serializers.IntegerField()
        captions = serializers.IntegerField()
        skipped_images = serializers.ListField(child=serializers.IntegerField())
        warnings = serializers.ListField(child=serializers.CharField())

    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = dataset_import(**data.validated_data)
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        return Response(self.OutputSerializer(result).data, status=code)


class RunCreateApi(ServiceAPIView):
    class InputSerializer(serializers.Serializer):
        dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
        kind = serializers.ChoiceField(choices=RunKind.values, default=RunKind.BISON)
        name = serializers.CharField(required=False, default="", allow_blank=True)
        config = serializers.DictField(required=False, default=dict)

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Run
            fields = ["id", "dataset", "kind", "name", "config", "status"]

    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = run_create(**data.validated_data)
        return Response(self.OutputSerializer(run).data, status=status.HTTP_201_CREATED)


class PairingStartApi(ServiceAPIView):
    class InputSerializer(serializers.Serializer):
        vectors_path = serializers.CharField(required=False, allow_null=True, default=None)
        dim = serializers.IntegerField(min_value=2, max_value=2048, default=100)
        epochs = serializers.IntegerField(min_value=1, max_value=100, default=5)
        seed = serializers.IntegerField(default=0)
        block_size = serializers.IntegerField(
            min_value=1, required=False, allow_null=True, default=None
        )
        allow_new_dim = serializers.BooleanField(default=False)

    def post(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run, pk=run_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = pairing_start(run=run, **data.validated_data)
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class JobDetailApi(ServiceAPIView):
    def get(self, request: Request, job_id: int) -> Response:
        return Response(JobOutput(get_object_or_404(Job, pk=job_id)).data)


class BatchCreateApi(ServiceAPIView):
    class InputSerializer(serializers.Serializer):
        stage = serializers.ChoiceField(choices=Stage.values)
        provider = serializers.CharField(default="local")
        items_per_hit = serializers.IntegerField(min_value=1, required=False)
        assignments_per_hit = serializers.IntegerField(min_value=1, required=False)
        reward = serializers.CharField(default="0.10")
        lifetime_seconds = serializers.IntegerField(min_value=1, default=7 * 24 * 3600)
        assignment_duration_seconds = serializers.IntegerField(min_value=1, default=3600)
        qualifications = serializers.DictField(required=False, default=dict)
        seed = serializers.IntegerField(default=0)
        publish = serializers.BooleanField(default=True)

    class OutputSerializer(serializers.ModelSerializer):
        hits = serializers.IntegerField(source="hits.count")

        class Meta:
            model = Batch
            fields = [
                "id",
                "run",
                "stage",
                "provider",
                "status",
                "items_per_hit",
                "assignments_per_hit",
                "reward",
                "lifetime_seconds",
                "assignment_duration_seconds",
                "qualifications",
                "hits",
            ]

    def post(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run, pk=run_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        publish = data.validated_data.pop("publish")
        batch = batch_create(run=run, **data.validated_data)
        if publish:
            batch = batch_publish(batch=batch)
        return Response(self.OutputSerializer(batch).data, status=status.HTTP_201_CREATED)


class RunSummaryApi(ServiceAPIView):
    def get(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run, pk=run_id)
        return Response({"run": run.pk, "status": run.status, **bison_stage_counts(run=run)})


class ExportStartApi(ServiceAPIView):
    def post(self, request: Request, run_id: int) -> Response:
        job = bison_export_start(run=get_object_or_404(Run, pk=run_id))
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class BisonEvaluateApi(ServiceAPIView):
    """Score predictions (uploaded JSON) against a stored export."""

    class InputSerializer(serializers.Serializer):
        export = serializers.PrimaryKeyRelatedField(queryset=Export.objects.all())
        predictions = serializers.JSONField()

    def post(self, request: Request) -> Response:
        import json

        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
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


class EccvEvaluateApi(ServiceAPIView):
    """Score a model's ranked lists against an ECCV export (mAP@R, R-Precision, R@K)."""

    class InputSerializer(serializers.Serializer):
        export = serializers.PrimaryKeyRelatedField(queryset=Export.objects.all())
        rankings = serializers.JSONField(
            help_text='{"i2t": {image: [captions]}, "t2i": {caption: [images]}}'
        )
        ks = serializers.ListField(child=serializers.IntegerField(min_value=1), default=[1, 5, 10])

    def post(self, request: Request) -> Response:
        import json
        import tempfile

        from annotation.services.eccv_export import eccv_evaluate

        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="rankings-") as fh:
            json.dump(data.validated_data["rankings"], fh)
            fh.flush()
            scores = eccv_evaluate(
                export=data.validated_data["export"],
                rankings_path=fh.name,
                ks=tuple(data.validated_data["ks"]),
            )
        return Response(scores)


class MTurkPublishApi(ServiceAPIView):
    """Check, estimate and enqueue publishing a draft MTurk batch."""

    def post(self, request: Request, batch_id: int) -> Response:
        from annotation.services.mturk import mturk_publish_start

        job = mturk_publish_start(batch=get_object_or_404(Batch, pk=batch_id))
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)
