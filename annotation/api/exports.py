"""Exports in the API: a run's versions, starting a new one (a job), downloading any file of
a version (by its path in the folder: `data/<set>.parquet` too), and its release bundle
(packed by a job, then downloaded)."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.jobs import JobOutput
from annotation.api.paging import PAGE_PARAMETERS, filters, page_of, paginated
from annotation.flow_registry import flow_for_kind
from annotation.models import Export, Run
from annotation.paths import paths_hidden
from annotation.permissions import Action
from annotation.selectors.release.exports import (
    export_bundle,
    export_file_entries,
    export_file_named,
)
from annotation.selectors.runs.listing import export_list
from annotation.services.release.release_bundle import export_bundle_start


class ExportFileOutput(serializers.Serializer):
    name = serializers.CharField(help_text="the path in the version folder, e.g. data/x.parquet")
    size = serializers.IntegerField(help_text="bytes")
    url = serializers.CharField()


class ExportBundleOutput(ExportFileOutput):
    sha256 = serializers.CharField()


class ExportOutput(serializers.ModelSerializer):
    files = serializers.SerializerMethodField()
    bundle = serializers.SerializerMethodField()

    def to_representation(self, instance: Export) -> dict[str, Any]:
        data = super().to_representation(instance)
        # Exports written before issue 25 may name server paths in their manifest.
        data["manifest"] = paths_hidden(data["manifest"])
        return data

    class Meta:
        model = Export
        fields = [
            "id",
            "run",
            "format",
            "version",
            "checksum",
            "manifest",
            "files",
            "bundle",
            "created_at",
        ]

    @extend_schema_field(ExportFileOutput(many=True))
    def get_files(self, export: Export) -> list[dict[str, Any]]:
        """Every file of the version (`data/` too), its size and where to download it (`GET`,
        researchers only)."""
        return [
            {
                "name": f.name,
                "size": f.size,
                "url": reverse("api-export-file-path", args=[export.pk, f.name]),
            }
            for f in export_file_entries(export)
        ]

    @extend_schema_field(ExportBundleOutput(allow_null=True))
    def get_bundle(self, export: Export) -> dict[str, Any] | None:
        """The version's release bundle once packed (`POST .../bundle/` packs it), else null."""
        bundle = export_bundle(export)
        if bundle is None:
            return None
        return {
            "name": bundle.name,
            "size": bundle.size,
            "sha256": bundle.sha256,
            "url": reverse("api-export-bundle", args=[export.pk]),
        }


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


class ExportStartApi(ServiceAPIView):
    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        """This export's terms, over the run's (`config.release`); none: "unlicensed"."""

        license = serializers.CharField(required=False, allow_blank=True, max_length=100)
        creators = serializers.ListField(
            child=serializers.CharField(max_length=200), required=False, max_length=50
        )
        citation = serializers.CharField(required=False, allow_blank=True, max_length=4000)

    @extend_schema(request=InputSerializer, responses={202: JobOutput, **ERRORS})
    def post(self, request: Request, run_id: int) -> Response:
        """Start exporting the run in its flow's published format (a new version); poll the
        job, then list the run's exports. Optional body: the export's license, creators and
        citation."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        flow = flow_for_kind(run.kind)
        if flow is None or flow.start_export is None:
            raise Http404("this kind of run has no export")
        body = self.InputSerializer(data=request.data or {})
        body.is_valid(raise_exception=True)
        job = flow.start_export(run=run, release=dict(body.validated_data) or None)
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class ExportFileApi(ServiceAPIView):
    """Download one file of an export (researchers only), streamed as an attachment; the
    name (its path in the version folder, e.g. `data/<set>.parquet`) must be one the export
    lists: `..`, absolute paths and links are not found."""

    required_action = Action.DOWNLOAD

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **ERRORS})
    def get(self, request: Request, export_id: int, name: str) -> FileResponse:
        export = get_object_or_404(Export.objects.select_related("run"), pk=export_id)
        self.require(request, run=export.run)
        path = export_file_named(export, name)
        if path is None:
            raise Http404("no such file in this export")
        return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)


@extend_schema(exclude=True)  # the same operation as the path route below, for links handed out
class ExportFileNameApi(ExportFileApi):
    pass


class ExportBundleApi(ServiceAPIView):
    """Download the version's release bundle (researchers only): its folder as a .tar.gz with
    SHA256SUMS; 404 until `POST` has packed it."""

    required_action = Action.DOWNLOAD

    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY, **ERRORS})
    def get(self, request: Request, export_id: int) -> FileResponse:
        export = get_object_or_404(Export.objects.select_related("run"), pk=export_id)
        self.require(request, run=export.run)
        bundle = export_bundle(export)
        if bundle is None:
            raise Http404("this version has no release bundle yet: POST to pack it")
        return FileResponse(bundle.path.open("rb"), as_attachment=True, filename=bundle.name)


class ExportBundleStartApi(ServiceAPIView):
    required_action = Action.ACT

    @extend_schema(request=None, responses={202: JobOutput, **ERRORS})
    def post(self, request: Request, export_id: int) -> Response:
        """Pack the version's release bundle (a job: poll it, then `GET` this URL or the
        export's `bundle.url`). Packing starts a job and makes a file that leaves the
        installation: researchers only."""
        export = get_object_or_404(Export.objects.select_related("run"), pk=export_id)
        self.require(request, run=export.run)
        self.require(request, run=export.run, action=Action.DOWNLOAD)
        job = export_bundle_start(export=export)
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)
