"""The crowd providers a batch may be offered to, with their declared capabilities."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.permissions import Action
from annotation.providers import provider_for, web_provider_names


class ProviderListApi(ServiceAPIView):
    """The crowds this server offers batches to (the simulated one only with DJANGO_DEBUG=1),
    so a script can check its choice before it imports or runs anything."""

    required_action = Action.VIEW

    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        label = serializers.CharField()  # type: ignore[assignment]

    @extend_schema(responses={200: OutputSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        offered = [provider_for(name) for name in web_provider_names()]
        rows = [{"name": p.name, "label": p.label or p.name} for p in offered]
        return Response(self.OutputSerializer(rows, many=True).data)
