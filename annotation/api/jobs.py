"""Jobs in the API: the list (paged and filtered), one job, resume and cancel; `JobOutput` is
the job as every operation that starts one answers it (flows and providers included)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, filters, page_of, paginated
from annotation.models import Job, JobState
from annotation.paths import paths_hidden
from annotation.permissions import Action
from annotation.selectors.runs.job_walls import job_require
from annotation.selectors.runs.listing import job_list
from annotation.services.jobs.job_recovery import job_cancel, job_resume


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
            "timings",
            "result",
            "created_at",
            "started_at",
            "finished_at",
            "heartbeat_at",
            "resumed",
        ]


def _job(view: ServiceAPIView, request: Request, job_id: int) -> Job:
    """The job, once the user may do the view's action on its run or project (an encoding
    job: its set's project; a dataset import is checked in any project)."""
    job = get_object_or_404(Job.objects.select_related("run"), pk=job_id)
    job_require(user=request.user, job=job, action=view.required_action)
    return job


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
