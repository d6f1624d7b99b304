from django.urls import path

from annotation.flows.bison import api

urlpatterns = [
    path("runs/<int:run_id>/pairing/", api.PairingStartApi.as_view(), name="api-pairing-start"),
    path("runs/<int:run_id>/summary/", api.RunSummaryApi.as_view(), name="api-run-summary"),
    path("bison/evaluate/", api.BisonEvaluateApi.as_view(), name="api-bison-evaluate"),
]
