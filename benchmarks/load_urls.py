"""The app's URLs plus the baseline of `benchmarks/worker_load.py`: a bare DRF endpoint that
reads one row (no session, no authentication, no template)."""

from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Hit
from config.urls import urlpatterns as app_urlpatterns


class BareOneRow(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request: Request, pk: int) -> Response:
        return Response(Hit.objects.filter(pk=pk).values("pk", "status", "max_assignments").first())


urlpatterns = [path("bench/bare/<int:pk>/", BareOneRow.as_view()), *app_urlpatterns]
