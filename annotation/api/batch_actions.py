"""A batch's actions in the API, through the same services as its console page: publish,
discard, expire, pause, resume, extend, add assignments, sync, and the simulated crowd (DEBUG)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.batches import BatchOutput, batch_output, batch_visible
from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.jobs import JobOutput
from annotation.errors import ServiceError
from annotation.permissions import Action
from annotation.providers import provider_for
from annotation.services.money.batch_extension import batch_add_assignments, batch_extend
from annotation.services.runs.batches import (
    batch_discard,
    batch_expire,
    batch_pause,
    batch_publish_request,
    batch_resume,
    batch_sync,
)
from pipeline.simulate import WorkerProfile


class BatchPublishApi(ServiceAPIView):
    """Publish a draft batch, checked as on the batch page (budget, daily cap, balance, pay).
    Server-side providers' batches are published at once (200); a remote provider's batch is
    enqueued as a job (202)."""

    required_action = Action.ACT

    class OutputSerializer(serializers.Serializer):
        batch = BatchOutput()
        job = JobOutput(allow_null=True)

    @extend_schema(
        request=None,
        responses={200: OutputSerializer, 202: OutputSerializer, **ERRORS},
    )
    def post(self, request: Request, batch_id: int) -> Response:
        batch, job = batch_publish_request(batch=batch_visible(self, request, batch_id))
        body = {"batch": batch_output(batch), "job": JobOutput(job).data if job else None}
        return Response(body, status=status.HTTP_202_ACCEPTED if job else status.HTTP_200_OK)


class BatchDiscardApi(ServiceAPIView):
    """Delete a draft batch (never published: nothing was offered or paid)."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={204: None, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch_discard(batch=batch_visible(self, request, batch_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class BatchExpireApi(ServiceAPIView):
    """Stop offering a published batch's HITs (work in progress may still be submitted)."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={200: BatchOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_expire(batch=batch_visible(self, request, batch_id))
        return Response(batch_output(batch))


class BatchPauseApi(ServiceAPIView):
    """Pause a published batch: no new claims (a platform with a pause sends no new workers);
    work in progress may finish."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={200: BatchOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_pause(batch=batch_visible(self, request, batch_id))
        return Response(batch_output(batch))


class BatchResumeApi(ServiceAPIView):
    """Resume a paused batch."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={200: BatchOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_resume(batch=batch_visible(self, request, batch_id))
        return Response(batch_output(batch))


class BatchExtendApi(ServiceAPIView):
    """Offer a published batch's HITs for longer."""

    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        hours = serializers.IntegerField(min_value=1, max_value=365 * 24)

    @extend_schema(request=InputSerializer, responses={200: BatchOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_visible(self, request, batch_id)
        data = BatchExtendApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        batch = batch_extend(batch=batch, seconds=data.validated_data["hours"] * 3600)
        return Response(batch_output(batch))


class BatchAddAssignmentsApi(ServiceAPIView):
    """Ask for `count` more workers on each of the batch's open HITs."""

    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        count = serializers.IntegerField(min_value=1, max_value=100)

    class OutputSerializer(serializers.Serializer):
        batch = BatchOutput()
        hits = serializers.IntegerField(help_text="open HITs that got more assignments")

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_visible(self, request, batch_id)
        data = BatchAddAssignmentsApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        hits = batch_add_assignments(batch=batch, count=data.validated_data["count"])
        return Response({"batch": batch_output(batch), "hits": len(hits)})


class BatchSyncApi(ServiceAPIView):
    """Fetch the provider's state of the batch's work now (MTurk: submitted assignments)."""

    required_action = Action.ACT

    class OutputSerializer(serializers.Serializer):
        batch = BatchOutput()
        changed = serializers.IntegerField(help_text="assignments whose state changed")

    @extend_schema(request=None, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_visible(self, request, batch_id)
        changed = batch_sync(batch=batch)
        return Response({"batch": batch_output(batch), "changed": changed})


class BatchSimulateApi(ServiceAPIView):
    """Let simulated workers answer a published simulated batch (development and demos
    only: refused unless DJANGO_DEBUG=1). Their work is marked simulated in every export."""

    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        workers = serializers.IntegerField(min_value=1, max_value=100, default=5)
        accuracy = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.9)
        seed = serializers.IntegerField(default=0)

    class OutputSerializer(serializers.Serializer):
        batch = BatchOutput()
        workers = serializers.IntegerField()
        assignments = serializers.IntegerField()
        answers = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_visible(self, request, batch_id)
        data = BatchSimulateApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if not settings.DEBUG:
            raise ServiceError("the simulated crowd works only with DJANGO_DEBUG=1")
        crowd = provider_for(batch.provider)
        if not crowd.simulated:
            raise ServiceError(f"batch {batch.pk} is offered to {batch.provider} workers")
        options = data.validated_data
        report = crowd.simulate(
            batch=batch,
            workers=options["workers"],
            profile=WorkerProfile(accuracy=options["accuracy"]),
            seed=options["seed"],
        )
        return Response(
            {
                "batch": batch_output(batch),
                "workers": report.workers,
                "assignments": report.assignments,
                "answers": report.answers,
            }
        )
