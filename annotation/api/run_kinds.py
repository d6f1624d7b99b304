"""The kinds of run a user may create and what each setting of theirs means (the flows'
described settings, as the new-run form shows them)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.flow_registry import flows
from annotation.models import RunKind
from annotation.permissions import Action


class SettingOutput(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    help = serializers.CharField()
    kind = serializers.ChoiceField(
        choices=["int", "number", "choice", "text", "bool", "list", "object", "int_or_all"]
    )
    default = serializers.JSONField(allow_null=True, help_text="null: optional, no default")
    unit = serializers.CharField(allow_blank=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    choices = serializers.ListField(child=serializers.CharField())


class RunKindOutput(serializers.Serializer):
    kind = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    settings = SettingOutput(many=True)


class RunKindListApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(
        operation_id="run_kinds_list", responses={200: RunKindOutput(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        """Every kind of run with its settings: label, unit, range, default and help, as the
        new-run form shows them; `POST /api/runs/` takes them in `config`."""
        out = [
            {
                "kind": flow.run_kind,
                "label": RunKind(flow.run_kind).label,
                "settings": [setting.as_dict() for setting in flow.settings],
            }
            for flow in flows()
        ]
        return Response(RunKindOutput(out, many=True).data)
