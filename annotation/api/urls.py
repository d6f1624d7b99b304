from django.urls import include, path

from annotation.api import actions, lists, operations, run_kinds, running, views, workers
from annotation.api.paging import by_method
from annotation.crowd import providers
from annotation.flow_registry import flows

urlpatterns = [
    path("datasets/", lists.DatasetListApi.as_view(), name="api-dataset-list"),
    path("datasets/import/", views.DatasetImportApi.as_view(), name="api-dataset-import"),
    path("runs/", by_method(get=lists.RunListApi, post=views.RunCreateApi), name="api-runs"),
    path("run-kinds/", run_kinds.RunKindListApi.as_view(), name="api-run-kinds"),
    path("runs/<int:run_id>/", lists.RunDetailApi.as_view(), name="api-run-detail"),
    path(
        "runs/<int:run_id>/batches/",
        by_method(get=lists.BatchListApi, post=views.BatchCreateApi),
        name="api-run-batches",
    ),
    path(
        "runs/<int:run_id>/exports/",
        by_method(get=lists.ExportListApi, post=actions.ExportStartApi),
        name="api-run-exports",
    ),
    path(
        "runs/<int:run_id>/inputs/<slug:name>/",
        actions.RunInputApi.as_view(),
        name="api-run-input",
    ),
    path(
        "runs/<int:run_id>/jobs/<slug:name>/",
        actions.RunJobStartApi.as_view(),
        name="api-run-job-start",
    ),
    path("runs/<int:run_id>/workers/", workers.WorkerListApi.as_view(), name="api-run-workers"),
    path(
        "runs/<int:run_id>/workers/notify/",
        workers.WorkersNotifyApi.as_view(),
        name="api-run-workers-notify",
    ),
    *[
        path(
            f"runs/<int:run_id>/workers/<int:worker_id>/{verb}/",
            view.as_view(),
            name=f"api-run-worker-{verb}",
        )
        for verb, view in (
            ("block", workers.WorkerBlockApi),
            ("unblock", workers.WorkerUnblockApi),
            ("bonus", workers.WorkerBonusApi),
        )
    ],
    path("batches/<int:batch_id>/", lists.BatchDetailApi.as_view(), name="api-batch-detail"),
    path(
        "batches/<int:batch_id>/status/",
        running.BatchStatusApi.as_view(),
        name="api-batch-status",
    ),
    path(
        "batches/<int:batch_id>/preview/<int:number>/",
        running.BatchPreviewApi.as_view(),
        name="api-batch-preview",
    ),
    path(
        "runs/<int:run_id>/texts/",
        by_method(get=running.RunTextsApi, post=running.RunTextsSetApi),
        name="api-run-texts",
    ),
    path("runs/<int:run_id>/items/", running.RunItemsApi.as_view(), name="api-run-items"),
    *[
        path(f"batches/<int:batch_id>/{verb}/", view.as_view(), name=f"api-batch-{verb}")
        for verb, view in (
            ("publish", actions.BatchPublishApi),
            ("discard", actions.BatchDiscardApi),
            ("expire", actions.BatchExpireApi),
            ("pause", actions.BatchPauseApi),
            ("resume", actions.BatchResumeApi),
            ("extend", actions.BatchExtendApi),
            ("add-assignments", actions.BatchAddAssignmentsApi),
            ("sync", actions.BatchSyncApi),
            ("simulate", actions.BatchSimulateApi),
        )
    ],
    path("providers/", views.ProviderListApi.as_view(), name="api-provider-list"),
    path("jobs/", lists.JobListApi.as_view(), name="api-job-list"),
    path("jobs/<int:job_id>/", views.JobDetailApi.as_view(), name="api-job-detail"),
    path("jobs/<int:job_id>/resume/", views.JobResumeApi.as_view(), name="api-job-resume"),
    path("jobs/<int:job_id>/cancel/", views.JobCancelApi.as_view(), name="api-job-cancel"),
    path(
        "exports/<int:export_id>/files/<str:name>",
        actions.ExportFileApi.as_view(),
        name="api-export-file",
    ),
    path("reviews/", lists.ReviewListApi.as_view(), name="api-review-list"),
    path("stop/", operations.StopApi.as_view(), name="api-stop"),
    path("reviews/decide/", actions.ReviewDecideApi.as_view(), name="api-review-decide"),
    path(
        "reviews/<int:review_id>/reverse/",
        actions.ReviewReverseApi.as_view(),
        name="api-review-reverse",
    ),
]
# Each registered crowd provider's and flow's operations, under the same prefix.
urlpatterns += [path("", include(p.api_urls)) for p in providers() if p.api_urls]
urlpatterns += [path("", include(flow.api_urls)) for flow in flows() if flow.api_urls]
