from django.urls import include, path

from annotation.api import views
from annotation.flows import flows

urlpatterns = [
    path("datasets/import/", views.DatasetImportApi.as_view(), name="api-dataset-import"),
    path("runs/", views.RunCreateApi.as_view(), name="api-run-create"),
    path("runs/<int:run_id>/batches/", views.BatchCreateApi.as_view(), name="api-batch-create"),
    path("jobs/<int:job_id>/", views.JobDetailApi.as_view(), name="api-job-detail"),
    path("jobs/<int:job_id>/resume/", views.JobResumeApi.as_view(), name="api-job-resume"),
    path("jobs/<int:job_id>/cancel/", views.JobCancelApi.as_view(), name="api-job-cancel"),
    path(
        "batches/<int:batch_id>/mturk/publish/",
        views.MTurkPublishApi.as_view(),
        name="api-mturk-publish",
    ),
]
# Each registered flow's operations, under the same prefix.
urlpatterns += [path("", include(flow.api_urls)) for flow in flows() if flow.api_urls]
