"""The app's URLs plus views that fail, for the server-error tests."""

from django.db import InterfaceError, OperationalError
from django.urls import path

from config.urls import handler400, handler403, handler404, handler500  # noqa: F401
from config.urls import urlpatterns as app_urls


def boom(request):
    raise RuntimeError("a bug on the worker's path /work/secret/file.json")


def database_down(request):
    raise OperationalError("connection to server at 10.0.0.5, port 5432 failed: refused")


def connection_closed(request):
    raise InterfaceError("connection already closed")


urlpatterns = [
    *app_urls,
    path("boom/", boom),
    path("api/boom/", boom),
    path("down/", database_down),
    path("closed/", connection_closed),
    path("api/down/", database_down),
]
