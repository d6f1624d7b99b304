"""What researchers do with a running batch, in the API as in the console: its live status
(counts by state and the newest assignments), a preview of its task pages, the run's texts for
workers (consent and instructions: read and set) and the run's data browser."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, Page, filters, page_of
from annotation.flow_registry import stage_names
from annotation.models import Batch, Run
from annotation.permissions import Action
from annotation.selectors.data_browser import AGREEMENT, GOLD, HELD, item_rows, run_items
from annotation.selectors.live import LIVE_STATES, batch_live_status
from annotation.selectors.preview import batch_preview, preview_record
from annotation.selectors.run_texts import run_texts
from annotation.services.run_texts import run_texts_set


def _batch(view: ServiceAPIView, request: Request, batch_id: int) -> Batch:
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
    view.require(request, run=batch.run)
    return batch


def _run(view: ServiceAPIView, request: Request, run_id: int) -> Run:
    run = get_object_or_404(Run, pk=run_id)
    view.require(request, run=run)
    return run


class BatchStatusApi(ServiceAPIView):
    """A batch's assignments now: counts by live state (working, timed_out, returned,
    submitted, approved, rejected) and the newest 200 with the worker's pseudonym."""

    required_action = Action.VIEW

    class RowSerializer(serializers.Serializer):
        assignment = serializers.IntegerField()
        hit = serializers.IntegerField(help_text="the HIT's number in the batch (1-based)")
        worker = serializers.CharField(help_text="the worker's pseudonym, as in exports")
        state = serializers.ChoiceField(choices=LIVE_STATES)
        confirmed = serializers.BooleanField()
        accepted_at = serializers.DateTimeField()
        started_at = serializers.DateTimeField(allow_null=True)
        submitted_at = serializers.DateTimeField(allow_null=True)
        elapsed_seconds = serializers.IntegerField()

    class OutputSerializer(serializers.Serializer):
        batch = serializers.IntegerField()
        status = serializers.CharField()
        now = serializers.DateTimeField()
        counts = serializers.DictField(child=serializers.IntegerField())
        rows = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        operation_id="batches_status",
        responses={200: OutputSerializer, **ERRORS},
    )
    def get(self, request: Request, batch_id: int) -> Response:
        live = batch_live_status(batch=_batch(self, request, batch_id))
        rows = BatchStatusApi.RowSerializer([asdict(r) for r in live.rows], many=True).data
        data = {**asdict(live), "rows": rows}
        return Response(BatchStatusApi.OutputSerializer(data).data)


class BatchPreviewApi(ServiceAPIView):
    """One task page of a batch (draft or published) as its workers get it: the questions'
    view, the run's instructions for the stage ("" : the task page's own) and the console's
    preview page."""

    required_action = Action.VIEW

    class OutputSerializer(serializers.Serializer):
        number = serializers.IntegerField()
        total = serializers.IntegerField()
        title = serializers.CharField()
        instructions = serializers.CharField(allow_blank=True)
        questions = serializers.ListField(child=serializers.DictField())
        url = serializers.CharField(help_text="the console's preview of this page")

    @extend_schema(operation_id="batches_preview", responses={200: OutputSerializer, **ERRORS})
    def get(self, request: Request, batch_id: int, number: int) -> Response:
        batch = _batch(self, request, batch_id)
        page = batch_preview(batch=batch, number=number)
        if page is None:
            raise Http404("no such task in this batch")
        data = preview_record(batch=batch, page=page)
        return Response(BatchPreviewApi.OutputSerializer(data).data)


class TextsOutput(serializers.Serializer):
    class Consent(serializers.Serializer):
        text = serializers.CharField()
        version = serializers.CharField()
        own_text = serializers.BooleanField(help_text="false: the default text")

    class Instructions(serializers.Serializer):
        stage = serializers.CharField()
        title = serializers.CharField()
        text = serializers.CharField(allow_blank=True, help_text='"": the task page\'s own')
        version = serializers.CharField(help_text='"default": the task page\'s own')

    consent = Consent()
    instructions = Instructions(many=True)


class RunTextsApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(operation_id="runs_texts", responses={200: TextsOutput, **ERRORS})
    def get(self, request: Request, run_id: int) -> Response:
        """The run's texts for workers: the consent text and each stage's instructions, with
        their versions."""
        return Response(TextsOutput(run_texts(_run(self, request, run_id))).data)


class RunTextsSetApi(ServiceAPIView):
    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        consent = serializers.CharField(
            required=False,
            allow_blank=True,
            trim_whitespace=False,
            help_text='a new consent text (a new version: workers are asked again); "": default',
        )
        instructions = serializers.DictField(
            child=serializers.CharField(allow_blank=True, trim_whitespace=False),
            required=False,
            help_text="stage -> its instructions; \"\": the task page's own (the paper's)",
        )

    @extend_schema(
        operation_id="runs_texts_set",
        request=InputSerializer,
        responses={200: TextsOutput, **ERRORS},
    )
    def post(self, request: Request, run_id: int) -> Response:
        """Set the consent text and/or stages' instructions; answers the texts as saved."""
        run = _run(self, request, run_id)
        data = RunTextsSetApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        wanted: dict[str, Any] = dict(data.validated_data)
        run_texts_set(
            run=run, consent=wanted.get("consent"), instructions=wanted.get("instructions")
        )
        return Response(TextsOutput(run_texts(run)).data)


class ItemOutput(serializers.Serializer):
    class AnswerOutput(serializers.Serializer):
        worker = serializers.CharField(help_text="pseudonym")
        label = serializers.CharField()
        caption = serializers.CharField(allow_blank=True)
        counted = serializers.BooleanField()
        review = serializers.IntegerField(allow_null=True, help_text="the open review holding it")

    id = serializers.IntegerField(source="item.pk")
    kind = serializers.CharField(source="item.kind")
    gold = serializers.BooleanField()
    positive = serializers.IntegerField(source="item.positive_id")
    negative = serializers.IntegerField(source="item.negative_id", allow_null=True)
    caption = serializers.CharField(source="item.caption.text", allow_null=True, default=None)
    caption2 = serializers.CharField(source="item.caption2.text", allow_null=True, default=None)
    candidate = serializers.CharField(source="item.candidate.text", allow_null=True, default=None)
    candidate2 = serializers.CharField(source="item.candidate2.text", allow_null=True, default=None)
    answers = AnswerOutput(many=True)
    aggregate = serializers.CharField(help_text="majority label, or the mean rating")
    agreement = serializers.FloatField(allow_null=True, help_text="share giving the majority")
    workers = serializers.ListField(child=serializers.CharField())
    reviews = serializers.ListField(child=serializers.IntegerField())


class RunItemsApi(ServiceAPIView):
    required_action = Action.VIEW

    class FilterSerializer(serializers.Serializer):
        stage = serializers.ChoiceField(choices=stage_names())
        agreement = serializers.ChoiceField(choices=AGREEMENT, required=False)
        gold = serializers.ChoiceField(choices=GOLD, required=False)
        held = serializers.ChoiceField(choices=HELD, required=False)

    @extend_schema(
        operation_id="runs_items_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(ItemOutput), **ERRORS},
    )
    def get(self, request: Request, run_id: int) -> Response:
        """The data browser: the items a stage asked about, with their answers, aggregate,
        agreement and workers; filtered by agreement, gold and held for review."""
        run = _run(self, request, run_id)
        wanted = filters(RunItemsApi.FilterSerializer, request)
        pager = Page()
        items = pager.paginate_queryset(run_items(run=run, **wanted), request, view=self)
        rows = item_rows(items=list(items or []), stage=wanted["stage"])
        return pager.get_paginated_response(ItemOutput(rows, many=True).data)
