"""The ECCV Caption flow's API operations. The evaluation (numpy, pyarrow) is imported by the
operation that calls it: the API's URLs, which every command's checks load, import this module
(issue 46)."""

from __future__ import annotations

import json
import tempfile

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.models import Export
from annotation.permissions import Action


class EccvEvaluateApi(ServiceAPIView):
    """Score a model's ranked lists against an ECCV export (mAP@R, R-Precision, R@K); only
    scores come back, so viewing the export's run is enough."""

    required_action = Action.VIEW

    class InputSerializer(serializers.Serializer):
        export = serializers.PrimaryKeyRelatedField(queryset=Export.objects.all())
        rankings = serializers.JSONField(
            help_text='{"i2t": {image: [captions]}, "t2i": {caption: [images]}}'
        )
        ks = serializers.ListField(child=serializers.IntegerField(min_value=1), default=[1, 5, 10])

    @extend_schema(
        request=InputSerializer,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description="mAP@R, R-Precision and R@K per direction, and the numbers they count.",
    )
    def post(self, request: Request) -> Response:
        from annotation.flows.eccv.services.export import eccv_evaluate

        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        self.require(request, run=data.validated_data["export"].run)
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="rankings-") as fh:
            json.dump(data.validated_data["rankings"], fh)
            fh.flush()
            scores = eccv_evaluate(
                export=data.validated_data["export"],
                rankings_path=fh.name,
                ks=tuple(data.validated_data["ks"]),
            )
        return Response(scores)
