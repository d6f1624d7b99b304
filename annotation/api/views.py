"""One API class per operation; each parses input, calls a service, renders output.
The core's operations are here; each flow adds its own in `annotation/flows/<flow>/api.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.parsers import BoundedJSONParser
from annotation.crowd import provider_for, web_provider_check, web_provider_names
from annotation.flow_registry import stage_names
from annotation.models import Batch, Dataset, ImageSource, Job, Project, Run, RunKind
from annotation.paths import paths_hidden
from annotation.permissions import Action, can
from annotation.selectors.image_availability import batch_images_check
from annotation.services.batches import batch_create, batch_publish, batch_warnings
from annotation.services.dataset_jobs import (
    dataset_import_start,
    dataset_upload_store,
    server_file,
)
from annotation.services.job_recovery import job_cancel, job_resume
from annotation.services.projects import project_default
from annotation.services.runs import run_create_any


class JobOutput(serializers.ModelSerializer):
    """A job as stored, with the server's absolute paths hidden from its message, error and
    result (`annotation/paths.py`; the full text is in the server's log)."""

    def to_representation(self, instance: Job) -> dict[str, Any]:
        data = super().to_representation(instance)
        for key in ("message", "error", "result"):
            data[key] = paths_hidden(data[key])
        return data

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
            "heartbeat_at",
            "resumed",
        ]


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


class RunCreateApi(ServiceAPIView):
    """Create a run in `project` (by id; default: the Default project), where the user must
    be a researcher."""

    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
        # An id, looked up after validation: another project's answers 404 as an unknown one.
        project = serializers.IntegerField(required=False, allow_null=True, default=None)
        kind = serializers.ChoiceField(choices=RunKind.values, default=RunKind.BISON)
        name = serializers.CharField(required=False, default="", allow_blank=True)
        config = serializers.DictField(required=False, default=dict)

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Run
            fields = ["id", "project", "dataset", "kind", "name", "config", "status"]

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        """Create a run of a dataset in a project (default: Default) where you are a
        researcher, with the flow's defaults for any setting not given."""
        data = RunCreateApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data)
        if options["project"] is None:
            options["project"] = project_default()
            # Everyone may know the Default project: a 403 that says what to do.
            if not can(request.user, Action.ACT, project=options["project"]):
                raise PermissionDenied(
                    "you may not act on runs in the Default project: name a project of yours"
                )
        else:
            options["project"] = get_object_or_404(Project, pk=options["project"])
            self.require(request, project=options["project"])
        run = run_create_any(**options, owner=request.user)
        return Response(RunCreateApi.OutputSerializer(run).data, status=status.HTTP_201_CREATED)


def _job(view: ServiceAPIView, request: Request, job_id: int) -> Job:
    """The job, once the user may do the view's action on its run (a job of no run, such as
    a dataset import, is checked in any project)."""
    job = get_object_or_404(Job.objects.select_related("run"), pk=job_id)
    view.require(request, run=job.run)
    return job


class ProviderListApi(ServiceAPIView):
    """The crowds this server offers batches to (the simulated one only with DJANGO_DEBUG=1),
    so a script can check its choice before it imports or runs anything."""

    required_action = Action.VIEW

    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        label = serializers.CharField()

    @extend_schema(responses={200: OutputSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        offered = [provider_for(name) for name in web_provider_names()]
        rows = [{"name": p.name, "label": p.label or p.name} for p in offered]
        return Response(self.OutputSerializer(rows, many=True).data)


class JobDetailApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(responses={200: JobOutput, **ERRORS})
    def get(self, request: Request, job_id: int) -> Response:
        return Response(JobOutput(_job(self, request, job_id)).data)


class JobResumeApi(ServiceAPIView):
    """Send a pending or running job's missing steps again (its worker died or its messages
    were lost); the periodic check does the same after CROWDVL_JOB_STALL_SECONDS."""

    class OutputSerializer(serializers.Serializer):
        job = JobOutput()
        sent = serializers.ListField(child=serializers.CharField())

    required_action = Action.ACT

    @extend_schema(request=None, responses={202: OutputSerializer, **ERRORS})
    def post(self, request: Request, job_id: int) -> Response:
        _job(self, request, job_id)
        plan = job_resume(job_id=job_id, reason="by hand", by=request.user.get_username())
        job = get_object_or_404(Job, pk=job_id)
        return Response(
            self.OutputSerializer({"job": job, "sent": [name for name, _ in plan]}).data,
            status=status.HTTP_202_ACCEPTED,
        )


class JobCancelApi(ServiceAPIView):
    """Cancel a pending or running job: its remaining steps do nothing; a run it kept busy
    fails, so it can be started again."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={200: JobOutput, **ERRORS})
    def post(self, request: Request, job_id: int) -> Response:
        _job(self, request, job_id)
        job = job_cancel(job_id=job_id, by=request.user.get_username())
        return Response(JobOutput(job).data)


class BatchCreateApi(ServiceAPIView):
    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        stage = serializers.ChoiceField(choices=stage_names())
        provider = serializers.CharField(default=settings.CROWDVL_DEFAULT_PROVIDER)
        items_per_hit = serializers.IntegerField(min_value=1, required=False)
        assignments_per_hit = serializers.IntegerField(min_value=1, required=False)
        # At most this many waiting items (e.g. a stage's first, calibration batch).
        limit = serializers.IntegerField(min_value=1, required=False)
        reward = serializers.CharField(required=False)
        lifetime_seconds = serializers.IntegerField(default=7 * 24 * 3600)
        assignment_duration_seconds = serializers.IntegerField(default=3600)
        auto_approval_delay_seconds = serializers.IntegerField(required=False)
        first_claim_seconds = serializers.IntegerField(required=False)
        skip_pilot = serializers.BooleanField(required=False)
        allow_low_pay = serializers.BooleanField(required=False)
        qualifications = serializers.DictField(required=False, default=dict)
        seed = serializers.IntegerField(default=0)
        publish = serializers.BooleanField(default=True)
        # Task options: ECCV rounds take a direction and may skip the rationale questions.
        direction = serializers.ChoiceField(choices=["i2t", "t2i"], required=False)
        follow_ups = serializers.BooleanField(default=True)
        # ECCV adaptive runs: a follow-up batch of the judged pairs still uncertain.
        more_judgments = serializers.BooleanField(required=False)

    class OutputSerializer(serializers.ModelSerializer):
        hits = serializers.IntegerField(source="hits.count")
        warnings = serializers.SerializerMethodField()

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
                "auto_approval_delay_seconds",
                "options",
                "qualifications",
                "hits",
                "warnings",
            ]

        def get_warnings(self, batch: Batch) -> list[str]:
            return batch_warnings(batch=batch)

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, **ERRORS})
    def post(self, request: Request, run_id: int) -> Response:
        """Create a batch of HITs for a stage of the run and, unless `publish` is false,
        publish it (a draft can be published later: `POST /api/batches/<id>/publish/`).
        The simulated crowd is offered only with DJANGO_DEBUG=1."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        data = BatchCreateApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        web_provider_check(data.validated_data["provider"])
        publish = data.validated_data.pop("publish")
        options = {"follow_ups": data.validated_data.pop("follow_ups")}
        for key in (
            "direction",
            "more_judgments",
            "first_claim_seconds",
            "skip_pilot",
            "allow_low_pay",
        ):
            if key in data.validated_data:
                options[key] = data.validated_data.pop(key)
        batch = batch_create(run=run, options=options, **data.validated_data)
        if publish:
            batch_images_check(batch=batch)
            batch = batch_publish(batch=batch)
        return Response(BatchCreateApi.OutputSerializer(batch).data, status=status.HTTP_201_CREATED)
