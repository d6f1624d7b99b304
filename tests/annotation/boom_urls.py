"""The app's URLs plus one view that fails, for the server-error logging test."""

from django.urls import path

from config.urls import urlpatterns as app_urls


def boom(request):
    raise RuntimeError("a bug on the worker's path")


urlpatterns = [*app_urls, path("boom/", boom)]
