from django.urls import path

from annotation.api import views

urlpatterns = [
    path("datasets/import/", views.DatasetImportApi.as_view(), name="api-dataset-import"),
    path("runs/", views.RunCreateApi.as_view(), name="api-run-create"),
    path("runs/<int:run_id>/pairing/", views.PairingStartApi.as_view(), name="api-pairing-start"),
    path("runs/<int:run_id>/batches/", views.BatchCreateApi.as_view(), name="api-batch-create"),
    path("runs/<int:run_id>/summary/", views.RunSummaryApi.as_view(), name="api-run-summary"),
    path("runs/<int:run_id>/exports/", views.ExportStartApi.as_view(), name="api-export-start"),
    path("jobs/<int:job_id>/", views.JobDetailApi.as_view(), name="api-job-detail"),
    path("bison/evaluate/", views.BisonEvaluateApi.as_view(), name="api-bison-evaluate"),
    path("eccv/evaluate/", views.EccvEvaluateApi.as_view(), name="api-eccv-evaluate"),
    path(
        "batches/<int:batch_id>/mturk/publish/",
        views.MTurkPublishApi.as_view(),
        name="api-mturk-publish",
    ),
]
