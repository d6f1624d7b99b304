"""The separate bare app of `benchmarks/worker_load.py` (settings: `bare_settings.py`): one DRF
view reading one HIT's row, the same row the in-app bare endpoint reads (`load_urls.py`)."""

from django.db import connection
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class BareAppOneRow(APIView):
    def get(self, request: Request, pk: int) -> Response:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, status, max_assignments FROM annotation_hit WHERE id = %s", [pk]
            )
            row = cursor.fetchone()
        return Response(
            dict(zip(("pk", "status", "max_assignments"), row, strict=True)) if row else None
        )


urlpatterns = [path("bench/bare/<int:pk>/", BareAppOneRow.as_view())]
