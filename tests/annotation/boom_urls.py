"""The app's URLs plus views that fail, for the server-error tests."""

from django.urls import path

from config.urls import handler400, handler403, handler404, handler500  # noqa: F401
from config.urls import urlpatterns as app_urls


def boom(request):
    raise RuntimeError("a bug on the worker's path /work/secret/file.json")


urlpatterns = [*app_urls, path("boom/", boom), path("api/boom/", boom)]
