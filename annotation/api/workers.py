"""A run's workers in the API, as on its workers page: who worked, how well, how fast, for
what pay; block, unblock, bonus and notify through the worker's crowd provider. Only workers
with work in the run are listed or acted on (others: 404)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, page_of, paginated
from annotation.models import Run, Worker
from annotation.permissions import Action, sees_platform_ids
from annotation.selectors.runs.run_workers import run_workers, workers_of_run
from annotation.services.work.worker_actions import (
    BLOCK_SCOPES,
    run_worker_bonus,
    worker_block,
    worker_unblock,
    workers_notify,
)
from pipeline.errors import InputError


class WorkerOutput(serializers.Serializer):
    id = serializers.IntegerField(source="worker.pk")
    external_id = serializers.CharField(
        source="platform_id",
        allow_null=True,
        help_text="the platform's worker id: only for researchers (who pay and contact "
        "workers); null for viewers and reviewers",
    )
    shown_as = serializers.CharField(
        source="label",
        help_text="how the console names the worker: the platform id for researchers, else "
        "the export pseudonym",
    )
    provider = serializers.CharField(source="worker.provider")
    blocked = serializers.BooleanField(source="worker.blocked")
    block_scope = serializers.CharField(source="worker.block_scope")
    pool = serializers.CharField(help_text="the stage pool the worker belongs to in this run")
    assignments = serializers.IntegerField()
    states = serializers.DictField(child=serializers.IntegerField())
    gold_right = serializers.IntegerField()
    gold_total = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    agreement = serializers.FloatField(
        allow_null=True,
        help_text="share of the worker's answer pairs with another worker on the same item that "
        "agree (the run page's measure; held work left out)",
    )
    compared = serializers.IntegerField(help_text="answer pairs compared")
    gold_interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="95 % Wilson interval of gold_accuracy: [low, high]",
    )
    agreement_interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="95 % Wilson interval of agreement over `compared` answer pairs: [low, high]",
    )
    seconds_per_item = serializers.FloatField(allow_null=True)
    paid = serializers.DecimalField(max_digits=10, decimal_places=2)
    hours = serializers.FloatField()
    hourly = serializers.DecimalField(max_digits=10, decimal_places=2, allow_null=True)
    below_minimum = serializers.BooleanField()


def _run(view: ServiceAPIView, request: Request, run_id: int) -> Run:
    run = get_object_or_404(Run, pk=run_id)
    view.require(request, run=run)
    return run


def _worker(run: Run, worker_id: int) -> Worker:
    return get_object_or_404(workers_of_run(run=run), pk=worker_id)


class WorkerListApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(
        operation_id="runs_workers_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_of(WorkerOutput), **ERRORS},
    )
    def get(self, request: Request, run_id: int) -> Response:
        """The run's workers with their assignments, gold accuracy, agreement, speed and pay."""
        run = _run(self, request, run_id)
        rows = run_workers(run=run, platform_ids=sees_platform_ids(request.user, run=run))
        return paginated(WorkerOutput, rows, request, self)


class WorkerBlockApi(ServiceAPIView):
    """Block a worker of this run: `project` scope (this installation's runs) or `account`
    (MTurk: a blocking qualification on the account). Researchers only: it reaches the
    worker in every project."""

    required_action = Action.ACCOUNT_WIDE

    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=1000)
        scope = serializers.ChoiceField(choices=BLOCK_SCOPES, default="project")

    @extend_schema(request=InputSerializer, responses={200: WorkerOutput, **ERRORS})
    def post(self, request: Request, run_id: int, worker_id: int) -> Response:
        run = _run(self, request, run_id)
        data = WorkerBlockApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        worker_block(worker=_worker(run, worker_id), **data.validated_data)
        return Response(_row(run, worker_id))


class WorkerUnblockApi(ServiceAPIView):
    required_action = Action.ACCOUNT_WIDE

    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=1000)

    @extend_schema(request=InputSerializer, responses={200: WorkerOutput, **ERRORS})
    def post(self, request: Request, run_id: int, worker_id: int) -> Response:
        run = _run(self, request, run_id)
        data = WorkerUnblockApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        worker_unblock(worker=_worker(run, worker_id), **data.validated_data)
        return Response(_row(run, worker_id))


class WorkerBonusApi(ServiceAPIView):
    """Pay a worker a bonus for their work in this run (on their latest counted assignment)."""

    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        amount = serializers.DecimalField(max_digits=8, decimal_places=2, min_value=0)
        reason = serializers.CharField(max_length=1000)

    class OutputSerializer(serializers.Serializer):
        bonus = serializers.IntegerField(source="pk")
        amount = serializers.DecimalField(max_digits=8, decimal_places=2)
        assignment = serializers.IntegerField(source="assignment_id")

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, **ERRORS})
    def post(self, request: Request, run_id: int, worker_id: int) -> Response:
        run = _run(self, request, run_id)
        data = WorkerBonusApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        bonus = run_worker_bonus(run=run, worker=_worker(run, worker_id), **data.validated_data)
        return Response(WorkerBonusApi.OutputSerializer(bonus).data, status=201)


class WorkersNotifyApi(ServiceAPIView):
    """Send a message to some of the run's workers through their provider (MTurk: email)."""

    required_action = Action.ACCOUNT_WIDE

    class InputSerializer(serializers.Serializer):
        workers = serializers.ListField(
            child=serializers.IntegerField(), min_length=1, max_length=1000
        )
        subject = serializers.CharField(max_length=200)
        message = serializers.CharField(max_length=4096)

    class OutputSerializer(serializers.Serializer):
        sent = serializers.IntegerField()
        already = serializers.IntegerField(help_text="workers who had this message already")

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, run_id: int) -> Response:
        run = _run(self, request, run_id)
        data = WorkersNotifyApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ids = data.validated_data["workers"]
        workers = list(workers_of_run(run=run).filter(pk__in=ids))
        if len(workers) != len(set(ids)):
            raise InputError("not a worker of this run", field="workers")
        sent = workers_notify(
            workers=workers,
            subject=data.validated_data["subject"],
            message=data.validated_data["message"],
        )
        return Response({"sent": sent, "already": len(workers) - sent})


def _row(run: Run, worker_id: int) -> dict:
    # Block, unblock and bonus are researchers' actions: they see the platform's ids.
    row = next(r for r in run_workers(run=run, platform_ids=True) if r.worker.pk == worker_id)
    return dict(WorkerOutput(row).data)
