from django.urls import path

from annotation.flows.eccv import api

urlpatterns = [
    path("eccv/evaluate/", api.EccvEvaluateApi.as_view(), name="api-eccv-evaluate"),
]
