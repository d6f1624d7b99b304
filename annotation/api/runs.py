"""Runs in the API: the list and one run, creating a run of any registered flow, starting one
of its flow's jobs and giving it one of its flow's inputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.jobs import JobOutput
from annotation.api.paging import PAGE_PARAMETERS, filters, page_of, paginated
from annotation.api.parsers import BoundedJSONParser
from annotation.flow_registry import flow_for_kind
from annotation.models import Dataset, Project, Run, RunKind, RunStatus
from annotation.permissions import Action, can
from annotation.selectors.runs.listing import run_list
from annotation.services.runs.projects import project_default
from annotation.services.runs.run_inputs import run_input_apply, run_inputs_of
from annotation.services.runs.runs import run_create_any


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


class RunJobStartApi(ServiceAPIView):
    """Start one of the flow's jobs with its defaults, as the run page's buttons do (BISON:
    `pairing`, stage 1 on vectors trained on the captions; ECCV: `propose`)."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={202: JobOutput, **ERRORS})
    def post(self, request: Request, run_id: int, name: str) -> Response:
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        flow = flow_for_kind(run.kind)
        if flow is None or name not in flow.run_jobs:
            raise Http404("no such job for this run")
        job = flow.run_jobs[name][1](run)
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class RunInputApi(ServiceAPIView):
    """Give a run one of its flow's inputs (ECCV: `annotator`, `cxc`; CxC: `sample`, `gold`;
    caption quality: `candidates`, `items`): a multipart upload (`file`) or a file inside
    CROWDVL_IMPORT_DIR (`path`), and the input's options as fields (the run page's form
    lists them). Checked and applied as on the page; a job it starts is in `job`."""

    required_action = Action.ACT
    parser_classes = [MultiPartParser, BoundedJSONParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(required=False)
        path = serializers.CharField(required=False, max_length=500)
        options = serializers.DictField(
            required=False,
            default=dict,
            help_text="JSON body: the options; multipart: each option as its own field",
        )

    class OutputSerializer(serializers.Serializer):
        message = serializers.CharField()
        job = JobOutput(allow_null=True)

    @extend_schema(
        request={
            "multipart/form-data": InputSerializer,
            "application/json": InputSerializer,
        },
        responses={200: OutputSerializer, 202: OutputSerializer, **ERRORS},
    )
    def post(self, request: Request, run_id: int, name: str) -> Response:
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        if name not in run_inputs_of(run):
            raise Http404("no such input for this run")
        data = RunInputApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data.get("options") or {})
        # Multipart: the options come as plain fields next to the file.
        options.update(
            {
                k: v
                for k, v in cast(Mapping[str, Any], request.data).items()
                if k not in ("file", "path", "options")
            }
        )
        message, job = run_input_apply(
            run=run,
            name=name,
            options=options,
            upload=data.validated_data.get("file"),
            path=data.validated_data.get("path"),
        )
        body = {"message": message, "job": JobOutput(job).data if job else None}
        return Response(body, status=status.HTTP_202_ACCEPTED if job else status.HTTP_200_OK)
