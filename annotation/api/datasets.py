"""Datasets in the API: the list (shared by every project) and a COCO import (a job)."""

from __future__ import annotations

from pathlib import Path

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.jobs import JobOutput
from annotation.api.paging import PAGE_PARAMETERS, filters, page_of, paginated
from annotation.api.parsers import BoundedJSONParser
from annotation.models import Dataset, ImageSource, Job
from annotation.permissions import Action
from annotation.selectors.runs.listing import dataset_list
from annotation.services.datasets.dataset_jobs import (
    dataset_import_start,
    dataset_upload_store,
    server_file,
)


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


class DatasetImportApi(ServiceAPIView):
    """Start importing a COCO captions file: a multipart upload (`file`, deleted after the
    import) or a file already on the server (`path`, inside CROWDVL_IMPORT_DIR). Answers 202
    with the job; poll /api/jobs/<id>/ for progress."""

    parser_classes = [BoundedJSONParser, MultiPartParser]
    required_action = Action.ACT  # datasets are shared: a researcher of any project

    class InputSerializer(serializers.Serializer):
        path = serializers.CharField(required=False, max_length=500)
        file = serializers.FileField(required=False)
        name = serializers.CharField(required=False, max_length=200)
        image_source = serializers.ChoiceField(
            choices=ImageSource.values, default=ImageSource.COCO_URL
        )
        image_location = serializers.CharField(
            required=False,
            default="",
            allow_blank=True,
            max_length=500,
            help_text="url_prefix: the URL prefix; local_dir: a folder under CROWDVL_IMPORT_DIR "
            "(relative to it, or absolute) or CROWDVL_IMAGE_DIRS",
        )
        update_image_source = serializers.BooleanField(
            default=False,
            help_text="a dataset imported before from the same file takes this image source "
            "(refused once one of its batches is published); without it a different source "
            "is refused, naming the difference",
        )

        def validate(self, attrs: dict) -> dict:
            if ("path" in attrs) == ("file" in attrs):
                raise serializers.ValidationError("give exactly one of 'file' (upload) or 'path'")
            return attrs

    class OutputSerializer(JobOutput):
        url = serializers.SerializerMethodField()

        class Meta(JobOutput.Meta):
            fields = [*JobOutput.Meta.fields, "url"]

        def get_url(self, job: Job) -> str:
            return f"/api/jobs/{job.pk}/"

    @extend_schema(request=InputSerializer, responses={202: OutputSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data)
        upload = options.pop("file", None)
        if upload is not None:
            options.setdefault("name", Path(upload.name or "upload").stem)
            options["path"] = dataset_upload_store(upload=upload)
            options["uploaded"] = True
            options["source"] = upload.name
        else:
            options["source"] = options["path"]  # as given: inside the import folder
            options["path"] = server_file(options["path"])
        job = dataset_import_start(**options)
        return Response(self.OutputSerializer(job).data, status=status.HTTP_202_ACCEPTED)
