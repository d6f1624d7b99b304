"""The panel's API: a batch's settings and study link, confirming its work from the panel's
CSV of approved participants, and its bonuses as CSV for the panel to pay."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.parsers import BoundedJSONParser
from annotation.crowd.panel import options
from annotation.crowd.panel.approvals import (
    MAX_BYTES,
    panel_confirm,
    size_check,
    upload_limit,
    upload_read,
)
from annotation.crowd.panel.selectors import bonus_csv, panel_figures
from annotation.crowd.panel.services import panel_settings_set
from annotation.models import Batch
from annotation.permissions import Action
from annotation.selectors.links import public_base_url
from pipeline.errors import InputError


def _batch(batch_id: int) -> Batch:
    return get_object_or_404(
        Batch.objects.select_related("run"), pk=batch_id, provider=options.PROVIDER
    )


class CompletionCodes(serializers.Serializer):
    completed = serializers.CharField(required=False, allow_blank=True, max_length=64)
    screened_out = serializers.CharField(required=False, allow_blank=True, max_length=64)
    no_work = serializers.CharField(required=False, allow_blank=True, max_length=64)


class PanelSettingsOutput(serializers.Serializer):
    class Figures(serializers.Serializer):
        participants = serializers.IntegerField(help_text="participants with a task")
        waiting = serializers.IntegerField(help_text="tasks waiting for the panel's confirmation")
        confirmed = serializers.IntegerField()
        released = serializers.IntegerField(help_text="not on the panel's final list")
        finished = serializers.DictField(
            child=serializers.IntegerField(), help_text="participants shown each outcome"
        )

    batch = serializers.IntegerField()
    study_link = serializers.CharField(
        help_text="paste into the panel, followed by its participant-id placeholder"
    )
    id_param = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    completion = CompletionCodes()
    completion_url = serializers.CharField(allow_blank=True)
    figures = Figures()


def _settings_body(request: Request, batch: Batch) -> dict[str, Any]:
    settings = options.settings_of(batch)
    return {
        "batch": batch.pk,
        "study_link": options.study_link(public_base_url(request), batch, settings),
        **settings,
        "figures": asdict(panel_figures(batch=batch)),
    }


class PanelSettingsApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(
        operation_id="batches_panel_retrieve", responses={200: PanelSettingsOutput, **ERRORS}
    )
    def get(self, request: Request, batch_id: int) -> Response:
        """A panel batch's study link, settings and figures."""
        batch = _batch(batch_id)
        self.require(request, run=batch.run)
        return Response(PanelSettingsOutput(_settings_body(request, batch)).data)


class PanelSettingsUpdateApi(ServiceAPIView):
    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        id_param = serializers.CharField(required=False, max_length=40)
        name = serializers.CharField(required=False, allow_blank=True, max_length=20)
        completion = CompletionCodes(required=False)
        completion_url = serializers.CharField(required=False, allow_blank=True, max_length=500)

        def to_internal_value(self, data: Any) -> Any:
            # A serializer drops keys it does not know: an unknown outcome (a typo) would be
            # lost without a word, so it is refused, named.
            codes = data.get("completion") if isinstance(data, Mapping) else None
            if isinstance(codes, Mapping):
                known = CompletionCodes().fields
                for key in codes:
                    if key not in known:
                        raise serializers.ValidationError(
                            {
                                f"completion.{key}": [
                                    f"unknown outcome; the outcomes are {', '.join(known)}"
                                ]
                            }
                        )
            return super().to_internal_value(data)

    @extend_schema(
        operation_id="batches_panel_update",
        request=InputSerializer,
        responses={200: PanelSettingsOutput, **ERRORS},
    )
    def post(self, request: Request, batch_id: int) -> Response:
        """Change a panel batch's settings (the ones given; codes by outcome, '' for none).
        The panel's name is fixed once participants worked on the batch."""
        batch = _batch(batch_id)
        self.require(request, run=batch.run)
        data = PanelSettingsUpdateApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        panel_settings_set(batch=batch, changes=dict(data.validated_data))
        batch.refresh_from_db()
        return Response(PanelSettingsOutput(_settings_body(request, batch)).data)


class PanelConfirmApi(ServiceAPIView):
    """Confirm a panel batch's work from the panel's CSV of approved participants: a
    multipart upload (`file`) or the text (`csv`, with a `name` for messages). The file is
    checked whole first; a bad line answers 400 naming the file, the line (`record`) and the
    field, and nothing is written."""

    required_action = Action.ACT
    parser_classes = [BoundedJSONParser, MultiPartParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(required=False)
        csv = serializers.CharField(required=False, trim_whitespace=False, max_length=MAX_BYTES)
        name = serializers.CharField(required=False, max_length=200, default="approved.csv")
        release_unlisted = serializers.BooleanField(
            default=False,
            help_text="the panel's final list: waiting work of participants it does not list "
            "is rejected (never counts; its tasks go to others)",
        )

        def validate(self, attrs: dict) -> dict:
            if ("file" in attrs) == ("csv" in attrs):
                raise serializers.ValidationError("give exactly one of 'file' (upload) or 'csv'")
            return attrs

    class OutputSerializer(serializers.Serializer):
        class Refused(serializers.Serializer):
            participant = serializers.CharField()
            assignment = serializers.IntegerField()
            reason = serializers.CharField()

        file = serializers.CharField()
        listed = serializers.IntegerField(help_text="distinct approved ids in the file")
        confirmed = serializers.IntegerField(help_text="tasks confirmed now")
        participants = serializers.IntegerField(help_text="participants with tasks confirmed now")
        already = serializers.IntegerField(help_text="tasks confirmed by an earlier upload")
        not_found = serializers.ListField(
            child=serializers.CharField(), help_text="ids with no submitted work in the batch"
        )
        not_approved = serializers.ListField(
            child=serializers.CharField(), help_text="rows whose status is not approved"
        )
        refused = Refused(many=True)
        released = serializers.IntegerField()

    @extend_schema(
        operation_id="batches_panel_confirm",
        request={
            "multipart/form-data": InputSerializer,
            "application/json": InputSerializer,
        },
        responses={200: OutputSerializer, **ERRORS},
    )
    def post(self, request: Request, batch_id: int) -> Response:
        batch = _batch(batch_id)
        self.require(request, run=batch.run)
        # The body's size first, before it is parsed: a file's bytes, or the `csv` text in
        # JSON (twice its size at most once escaped, for text a panel exports), with room for
        # the other fields.
        length = request.META.get("CONTENT_LENGTH") or "0"
        if not length.isdigit() or int(length) > 2 * upload_limit() + 64 * 1024:
            raise InputError(
                f"the request's body ({length} bytes) is over the limit for a panel's list "
                f"({upload_limit():,} bytes)",
                file="upload",
                field="file",
            )
        data = PanelConfirmApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        upload = values.get("file")
        if upload is not None:
            name = upload.name or values["name"]
            raw = upload_read(upload, file=name)
        else:
            raw, name = values["csv"].encode(), values["name"]
            size_check(len(raw), file=name, field="csv")
        report = panel_confirm(
            batch=batch, data=raw, file=name, release_unlisted=values["release_unlisted"]
        )
        return Response(PanelConfirmApi.OutputSerializer(report).data)


class PanelBonusesApi(ServiceAPIView):
    required_action = Action.DOWNLOAD  # participant ids

    @extend_schema(
        operation_id="batches_panel_bonuses",
        responses={(200, "text/csv"): OpenApiTypes.STR, **ERRORS},
    )
    def get(self, request: Request, batch_id: int) -> HttpResponse:
        """A panel batch's bonuses for the panel to pay (it has no API): CSV with
        participant_id, amount, reason."""
        batch = _batch(batch_id)
        self.require(request, run=batch.run)
        response = HttpResponse(bonus_csv(batch=batch), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="batch-{batch.pk}-bonuses.csv"'
        return response
