"""A run's items in the API, as in the console's data browser: a stage's items with their
answers, agreement and workers, filtered and paged."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, Page, filters, page_of
from annotation.flow_registry import stage_names
from annotation.models import Run
from annotation.permissions import Action
from annotation.selectors.datasets.data_browser import AGREEMENT, GOLD, HELD, item_rows, run_items


def _run(view: ServiceAPIView, request: Request, run_id: int) -> Run:
    run = get_object_or_404(Run, pk=run_id)
    view.require(request, run=run)
    return run


class ItemOutput(serializers.Serializer):
    class AnswerOutput(serializers.Serializer):
        worker = serializers.CharField(help_text="pseudonym")
        label = serializers.CharField()  # type: ignore[assignment]
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
