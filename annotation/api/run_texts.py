"""A run's texts for workers in the API, as on the console's texts page: the consent text and
each stage's instructions, read and set."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.models import Run
from annotation.permissions import Action
from annotation.selectors.work.run_texts import run_texts
from annotation.services.runs.run_texts import run_texts_set


def _run(view: ServiceAPIView, request: Request, run_id: int) -> Run:
    run = get_object_or_404(Run, pk=run_id)
    view.require(request, run=run)
    return run


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
