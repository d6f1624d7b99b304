"""The API's lists and details: runs, batches, jobs, datasets, exports and reviews, each
paginated (limit/offset) and filtered by query parameters, within what the user may see."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, filters, page_of, paginated
from annotation.api.views import BatchCreateApi, JobOutput
from annotation.flow_registry import stage_names
from annotation.models import (
    Batch,
    BatchStatus,
    Dataset,
    Export,
    JobState,
    ReviewStatus,
    Run,
    RunKind,
    RunStatus,
)
from annotation.paths import paths_hidden
from annotation.permissions import Action
from annotation.selectors.exports import export_files
from annotation.selectors.listing import (
    batch_list,
    dataset_list,
    export_list,
    job_list,
    review_list,
    run_list,
)
from annotation.selectors.reviews import SORTS
from annotation.services.batches import batch_warnings


class RunOutput(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", allow_null=True, default=None)

    class Meta:
        model = Run
        fields = [
            "id",
            "project",
            "dataset",
            "kind",
            "name",
            "config",
            "status",
            "owner",
            "created_at",
        ]


class RunListApi(ServiceAPIView):
    required_action = Action.VIEW

    class FilterSerializer(serializers.Serializer):
        project = serializers.IntegerField(required=False)
        dataset = serializers.IntegerField(required=False)
        kind = serializers.ChoiceField(choices=RunKind.values, required=False)
        status = serializers.ChoiceField(choices=RunStatus.values, required=False)
        search = serializers.CharField(required=False, help_text="part of the run's name")

    @extend_schema(
        operation_id="runs_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(RunOutput), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """The runs of your projects, newest first."""
        wanted = filters(RunListApi.FilterSerializer, request)
        return paginated(RunOutput, run_list(user=request.user, **wanted), request, self)


class RunDetailApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(responses={200: RunOutput, **ERRORS})
    def get(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run.objects.select_related("owner"), pk=run_id)
        self.require(request, run=run)
        return Response(RunOutput(run).data)


class BatchOutput(BatchCreateApi.OutputSerializer):
    """A batch as `POST /api/runs/<id>/batches/` answers it, with its dates. `warnings` (what
    to know before publishing: a cost estimate, several queries) is computed for drafts only;
    a published batch's are in its `batch.published` event."""

    hits = serializers.IntegerField(source="n_hits")
    warnings = serializers.SerializerMethodField()

    def get_warnings(self, batch: Batch) -> list[str]:
        return batch_warnings(batch=batch) if batch.status == BatchStatus.DRAFT else []

    class Meta(BatchCreateApi.OutputSerializer.Meta):
        fields = [*BatchCreateApi.OutputSerializer.Meta.fields, "created_at", "published_at"]


class BatchListApi(ServiceAPIView):
    required_action = Action.VIEW

    class FilterSerializer(serializers.Serializer):
        stage = serializers.ChoiceField(choices=stage_names(), required=False)
        status = serializers.ChoiceField(choices=BatchStatus.values, required=False)
        provider = serializers.CharField(required=False)

    @extend_schema(
        operation_id="runs_batches_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(BatchOutput), **ERRORS},
    )
    def get(self, request: Request, run_id: int) -> Response:
        """The run's batches, newest first."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        wanted = filters(BatchListApi.FilterSerializer, request)
        batches = batch_list(user=request.user, run=run.pk, **wanted)
        return paginated(BatchOutput, batches, request, self)


class BatchDetailApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(responses={200: BatchOutput, **ERRORS})
    def get(self, request: Request, batch_id: int) -> Response:
        batch = get_object_or_404(batch_list(user=request.user), pk=batch_id)
        return Response(BatchOutput(batch).data)


class JobListApi(ServiceAPIView):
    required_action = Action.VIEW

    class FilterSerializer(serializers.Serializer):
        run = serializers.IntegerField(required=False)
        name = serializers.CharField(required=False, help_text="e.g. bison.pairing")
        state = serializers.ChoiceField(choices=JobState.values, required=False)

    @extend_schema(
        operation_id="jobs_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(JobOutput), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Jobs of your runs and dataset imports, newest first."""
        wanted = filters(JobListApi.FilterSerializer, request)
        return paginated(JobOutput, job_list(user=request.user, **wanted), request, self)


class DatasetListApi(ServiceAPIView):
    required_action = Action.VIEW

    class FilterSerializer(serializers.Serializer):
        search = serializers.CharField(required=False, help_text="part of the dataset's name")

    class OutputSerializer(serializers.ModelSerializer):
        images = serializers.IntegerField(source="n_images")
        captions = serializers.IntegerField(source="n_captions")

        class Meta:
            model = Dataset
            fields = ["id", "name", "image_source", "images", "captions", "created_at"]

    @extend_schema(
        operation_id="datasets_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(OutputSerializer), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Every dataset (datasets are shared by all projects), newest first."""
        wanted = filters(DatasetListApi.FilterSerializer, request)
        datasets = dataset_list(user=request.user, **wanted)
        return paginated(DatasetListApi.OutputSerializer, datasets, request, self)


class ExportOutput(serializers.ModelSerializer):
    files = serializers.SerializerMethodField()

    def to_representation(self, instance: Export) -> dict[str, Any]:
        data = super().to_representation(instance)
        # Exports written before issue 25 may name server paths in their manifest.
        data["manifest"] = paths_hidden(data["manifest"])
        return data

    class Meta:
        model = Export
        fields = ["id", "run", "format", "version", "checksum", "manifest", "files", "created_at"]

    def get_files(self, export: Export) -> list[dict[str, str]]:
        """Each file's name and where to download it (`GET`, researchers only)."""
        return [
            {
                "name": path.name,
                "url": reverse("api-export-file", args=[export.pk, path.name]),
            }
            for path in export_files(export)
        ]


class ExportListApi(ServiceAPIView):
    required_action = Action.VIEW

    class FilterSerializer(serializers.Serializer):
        format = serializers.CharField(required=False)

    @extend_schema(
        operation_id="runs_exports_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(ExportOutput), **ERRORS},
    )
    def get(self, request: Request, run_id: int) -> Response:
        """The run's export versions, newest first, with their manifests and files."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        wanted = filters(ExportListApi.FilterSerializer, request)
        return paginated(ExportOutput, export_list(run=run, **wanted), request, self)


class ReviewListApi(ServiceAPIView):
    required_action = Action.REVIEW

    class FilterSerializer(serializers.Serializer):
        run = serializers.IntegerField(required=False)
        batch = serializers.IntegerField(required=False)
        status = serializers.ChoiceField(choices=ReviewStatus.values, required=False)
        sort = serializers.ChoiceField(choices=list(SORTS), default="deadline")

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        run = serializers.IntegerField(source="run_id")
        batch = serializers.IntegerField(source="batch_id")
        assignment = serializers.IntegerField(source="assignment_id")
        worker = serializers.IntegerField(source="worker_id")
        status = serializers.ChoiceField(choices=ReviewStatus.values)
        reasons = serializers.JSONField()
        feedback = serializers.CharField()
        created_at = serializers.DateTimeField()
        decided_at = serializers.DateTimeField(allow_null=True)
        auto_approve_at = serializers.DateTimeField(
            allow_null=True, help_text="when the provider pays on its own"
        )

    @extend_schema(
        operation_id="reviews_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(OutputSerializer), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Reviews in the runs where you may decide them, by deadline unless `sort` says
        otherwise."""
        wanted = filters(ReviewListApi.FilterSerializer, request)
        reviews = review_list(user=request.user, **wanted)
        return paginated(ReviewListApi.OutputSerializer, reviews, request, self)
