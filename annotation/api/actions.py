"""The console's actions in the API, through the same services as the pages: a batch's
publish, discard, expire, extend, add assignments and sync; a run's jobs and exports; export
downloads; review decisions; invitation links for local workers; the simulated crowd (DEBUG)."""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.lists import BatchOutput
from annotation.api.parsers import BoundedJSONParser
from annotation.api.views import JobOutput
from annotation.crowd import provider_for
from annotation.errors import ServiceError
from annotation.flow_registry import flow_for_kind
from annotation.models import Batch, Export, Review, Run
from annotation.permissions import Action
from annotation.selectors.exports import export_file_named
from annotation.selectors.listing import batches_counted
from annotation.services.batches import (
    batch_discard,
    batch_expire,
    batch_pause,
    batch_publish_request,
    batch_resume,
    batch_sync,
)
from annotation.services.review import batch_add_assignments, batch_extend
from annotation.services.reviews import review_reverse, reviews_decide
from annotation.services.run_inputs import run_input_apply, run_inputs_of
from pipeline.simulate import WorkerProfile


def _batch(view: ServiceAPIView, request: Request, batch_id: int) -> Batch:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
    view.require(request, run=batch.run)
    return batch


def _batch_output(batch: Batch) -> dict:
    return dict(BatchOutput(batches_counted().get(pk=batch.pk)).data)


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
        batch, job = batch_publish_request(batch=_batch(self, request, batch_id))
        body = {"batch": _batch_output(batch), "job": JobOutput(job).data if job else None}
        return Response(body, status=status.HTTP_202_ACCEPTED if job else status.HTTP_200_OK)


class BatchDiscardApi(ServiceAPIView):
    """Delete a draft batch (never published: nothing was offered or paid)."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={204: None, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch_discard(batch=_batch(self, request, batch_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class BatchExpireApi(ServiceAPIView):
    """Stop offering a published batch's HITs (work in progress may still be submitted)."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={200: BatchOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_expire(batch=_batch(self, request, batch_id))
        return Response(_batch_output(batch))


class BatchPauseApi(ServiceAPIView):
    """Pause a published batch: no new claims (a platform with a pause sends no new workers);
    work in progress may finish."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={200: BatchOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_pause(batch=_batch(self, request, batch_id))
        return Response(_batch_output(batch))


class BatchResumeApi(ServiceAPIView):
    """Resume a paused batch."""

    required_action = Action.ACT

    @extend_schema(request=None, responses={200: BatchOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = batch_resume(batch=_batch(self, request, batch_id))
        return Response(_batch_output(batch))


class BatchExtendApi(ServiceAPIView):
    """Offer a published batch's HITs for longer."""

    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        hours = serializers.IntegerField(min_value=1, max_value=365 * 24)

    @extend_schema(request=InputSerializer, responses={200: BatchOutput, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = _batch(self, request, batch_id)
        data = BatchExtendApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        batch = batch_extend(batch=batch, seconds=data.validated_data["hours"] * 3600)
        return Response(_batch_output(batch))


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
        batch = _batch(self, request, batch_id)
        data = BatchAddAssignmentsApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        hits = batch_add_assignments(batch=batch, count=data.validated_data["count"])
        return Response({"batch": _batch_output(batch), "hits": len(hits)})


class BatchSyncApi(ServiceAPIView):
    """Fetch the provider's state of the batch's work now (MTurk: submitted assignments)."""

    required_action = Action.ACT

    class OutputSerializer(serializers.Serializer):
        batch = BatchOutput()
        changed = serializers.IntegerField(help_text="assignments whose state changed")

    @extend_schema(request=None, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, batch_id: int) -> Response:
        batch = _batch(self, request, batch_id)
        changed = batch_sync(batch=batch)
        return Response({"batch": _batch_output(batch), "changed": changed})


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


class ExportStartApi(ServiceAPIView):
    required_action = Action.ACT

    @extend_schema(request=None, responses={202: JobOutput, **ERRORS})
    def post(self, request: Request, run_id: int) -> Response:
        """Start exporting the run in its flow's published format (a new version); poll the
        job, then list the run's exports."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        flow = flow_for_kind(run.kind)
        if flow is None or flow.start_export is None:
            raise Http404("this kind of run has no export")
        job = flow.start_export(run=run)
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class ExportFileApi(ServiceAPIView):
    """Download one file of an export (researchers only), streamed as an attachment; the
    name must be one the export lists."""

    required_action = Action.DOWNLOAD

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **ERRORS})
    def get(self, request: Request, export_id: int, name: str) -> FileResponse:
        export = get_object_or_404(Export.objects.select_related("run"), pk=export_id)
        self.require(request, run=export.run)
        path = export_file_named(export, name)
        if path is None:
            raise Http404("no such file in this export")
        return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)


class ReviewDecideApi(ServiceAPIView):
    """Approve or reject several reviews at once (a rejection needs feedback for the worker);
    each is decided on its own: one refused does not undo the others."""

    required_action = Action.REVIEW

    class InputSerializer(serializers.Serializer):
        reviews = serializers.ListField(
            child=serializers.IntegerField(), min_length=1, max_length=1000
        )
        decision = serializers.ChoiceField(choices=["approve", "reject"])
        feedback = serializers.CharField(required=False, default="", allow_blank=True)

    class OutputSerializer(serializers.Serializer):
        decided = serializers.ListField(child=serializers.IntegerField())
        failed = serializers.DictField(
            child=serializers.CharField(), help_text="review id -> why it was not decided"
        )

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = ReviewDecideApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = reviews_decide(
            review_ids=sorted(set(data.validated_data["reviews"])),
            approve=data.validated_data["decision"] == "approve",
            feedback=data.validated_data["feedback"],
            user=request.user,
        )
        failed = {str(pk): why for pk, why in result["failed"].items()}
        return Response({"decided": result["decided"], "failed": failed})


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
        batch = _batch(self, request, batch_id)
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
                "batch": _batch_output(batch),
                "workers": report.workers,
                "assignments": report.assignments,
                "answers": report.answers,
            }
        )


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
            {k: v for k, v in request.data.items() if k not in ("file", "path", "options")}
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


class ReviewReverseApi(ServiceAPIView):
    """Reverse a rejection (a worker's appeal upheld): the work is approved and paid, within
    its provider's window from the submission (MTurk: 30 days; refused after), and counts
    again."""

    required_action = Action.REVIEW

    class InputSerializer(serializers.Serializer):
        feedback = serializers.CharField(max_length=1024)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        status = serializers.CharField()
        feedback = serializers.CharField()
        decided_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, review_id: int) -> Response:
        review = get_object_or_404(
            Review.objects.select_related("assignment__hit__batch__run"), pk=review_id
        )
        self.require(request, run=review.assignment.hit.batch.run)
        data = ReviewReverseApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        review = review_reverse(review=review, feedback=data.validated_data["feedback"])
        return Response(ReviewReverseApi.OutputSerializer(review).data)
