from django.urls import include, path

from annotation.api import (
    batch_actions,
    batches,
    datasets,
    embeddings,
    exports,
    items,
    jobs,
    operations,
    projects,
    providers,
    reviews,
    run_kinds,
    run_texts,
    runs,
    workers,
)
from annotation.api.paging import by_method
from annotation.flow_registry import flows
from annotation.providers import providers as crowd_providers

urlpatterns = [
    path("datasets/", datasets.DatasetListApi.as_view(), name="api-dataset-list"),
    path("datasets/import/", datasets.DatasetImportApi.as_view(), name="api-dataset-import"),
    path(
        "datasets/<int:dataset_id>/embeddings/",
        by_method(get=embeddings.EmbeddingSetListApi, post=embeddings.EmbeddingSetStartApi),
        name="api-dataset-embeddings",
    ),
    path(
        "embeddings/<int:set_id>/",
        by_method(get=embeddings.EmbeddingSetDetailApi, delete=embeddings.EmbeddingSetDeleteApi),
        name="api-embedding-detail",
    ),
    path("projects/", projects.ProjectListApi.as_view(), name="api-project-list"),
    path("runs/", by_method(get=runs.RunListApi, post=runs.RunCreateApi), name="api-runs"),
    path("run-kinds/", run_kinds.RunKindListApi.as_view(), name="api-run-kinds"),
    path("runs/<int:run_id>/", runs.RunDetailApi.as_view(), name="api-run-detail"),
    path(
        "runs/<int:run_id>/batches/",
        by_method(get=batches.BatchListApi, post=batches.BatchCreateApi),
        name="api-run-batches",
    ),
    path(
        "runs/<int:run_id>/exports/",
        by_method(get=exports.ExportListApi, post=exports.ExportStartApi),
        name="api-run-exports",
    ),
    path(
        "runs/<int:run_id>/inputs/<slug:name>/",
        runs.RunInputApi.as_view(),
        name="api-run-input",
    ),
    path(
        "runs/<int:run_id>/jobs/<slug:name>/",
        runs.RunJobStartApi.as_view(),
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
    path("batches/<int:batch_id>/", batches.BatchDetailApi.as_view(), name="api-batch-detail"),
    path(
        "batches/<int:batch_id>/status/",
        batches.BatchStatusApi.as_view(),
        name="api-batch-status",
    ),
    path(
        "batches/<int:batch_id>/preview/<int:number>/",
        batches.BatchPreviewApi.as_view(),
        name="api-batch-preview",
    ),
    path(
        "runs/<int:run_id>/texts/",
        by_method(get=run_texts.RunTextsApi, post=run_texts.RunTextsSetApi),
        name="api-run-texts",
    ),
    path("runs/<int:run_id>/items/", items.RunItemsApi.as_view(), name="api-run-items"),
    *[
        path(f"batches/<int:batch_id>/{verb}/", view.as_view(), name=f"api-batch-{verb}")
        for verb, view in (
            ("publish", batch_actions.BatchPublishApi),
            ("discard", batch_actions.BatchDiscardApi),
            ("expire", batch_actions.BatchExpireApi),
            ("pause", batch_actions.BatchPauseApi),
            ("resume", batch_actions.BatchResumeApi),
            ("extend", batch_actions.BatchExtendApi),
            ("add-assignments", batch_actions.BatchAddAssignmentsApi),
            ("sync", batch_actions.BatchSyncApi),
            ("simulate", batch_actions.BatchSimulateApi),
        )
    ],
    path("providers/", providers.ProviderListApi.as_view(), name="api-provider-list"),
    path("jobs/", jobs.JobListApi.as_view(), name="api-job-list"),
    path("jobs/<int:job_id>/", jobs.JobDetailApi.as_view(), name="api-job-detail"),
    path("jobs/<int:job_id>/resume/", jobs.JobResumeApi.as_view(), name="api-job-resume"),
    path("jobs/<int:job_id>/cancel/", jobs.JobCancelApi.as_view(), name="api-job-cancel"),
    path(
        "exports/<int:export_id>/files/<str:name>",
        exports.ExportFileNameApi.as_view(),
        name="api-export-file",
    ),
    path(
        "exports/<int:export_id>/files/<path:name>",
        exports.ExportFileApi.as_view(),
        name="api-export-file-path",
    ),
    path(
        "exports/<int:export_id>/bundle/",
        by_method(get=exports.ExportBundleApi, post=exports.ExportBundleStartApi),
        name="api-export-bundle",
    ),
    path("reviews/", reviews.ReviewListApi.as_view(), name="api-review-list"),
    path("stop/", operations.StopApi.as_view(), name="api-stop"),
    path("reviews/decide/", reviews.ReviewDecideApi.as_view(), name="api-review-decide"),
    path(
        "reviews/<int:review_id>/reverse/",
        reviews.ReviewReverseApi.as_view(),
        name="api-review-reverse",
    ),
]
# Each registered crowd provider's and flow's operations, under the same prefix.
urlpatterns += [path("", include(p.api_urls)) for p in crowd_providers() if p.api_urls]
urlpatterns += [path("", include(flow.api_urls)) for flow in flows() if flow.api_urls]
