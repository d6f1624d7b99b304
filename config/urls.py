from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation import (
    batch_launch_views,
    batch_preview_views,
    dataset_import_views,
    export_views,
    health_views,
    image_views,
    login_views,
    project_views,
    researcher_views,
    run_data_views,
    run_input_views,
    run_new_views,
    run_page_views,
    run_texts_views,
    workers_views,
)
from annotation.crowd import providers

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", login_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("health/", health_views.health, name="health"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("annotation.api.urls")),
    path("img/<str:key>/<str:place>", image_views.question_image, name="question-image"),
    path("staff/images/<int:image_id>/", image_views.staff_image, name="staff-image"),
    path("", researcher_views.dashboard, name="dashboard"),
    path("projects/", project_views.projects_page, name="projects"),
    path("review/", researcher_views.review_queue, name="review-queue"),
    path("stop/", researcher_views.stop_hits, name="stop-hits"),
    path(
        "jobs/<int:job_id>/resume/",
        researcher_views.job_action,
        {"action": "resume"},
        name="job-resume",
    ),
    path(
        "jobs/<int:job_id>/cancel/",
        researcher_views.job_action,
        {"action": "cancel"},
        name="job-cancel",
    ),
    path("datasets/", run_new_views.datasets_page, name="datasets"),
    path("runs/new/", run_new_views.run_new_page, name="run-new"),
    path("runs/new/<str:kind>/", run_new_views.run_new_page, name="run-new-kind"),
    path("datasets/import/", dataset_import_views.dataset_import_page, name="dataset-import"),
    path(
        "datasets/import/jobs/<int:job_id>/",
        dataset_import_views.dataset_import_job_page,
        name="dataset-import-job",
    ),
    path("review/<int:review_id>/", researcher_views.review_detail, name="review-detail"),
    path("runs/<int:run_id>/", run_page_views.run_page, name="run-page"),
    path("runs/<int:run_id>/status.json", run_page_views.run_status, name="run-status"),
    path("runs/<int:run_id>/jobs/<str:name>/", run_page_views.run_job_start, name="run-job-start"),
    path("runs/<int:run_id>/workers/", workers_views.run_workers_page, name="run-workers"),
    path("runs/<int:run_id>/batches/new/", batch_launch_views.batch_new_page, name="batch-new"),
    path("batches/<int:batch_id>/", batch_launch_views.batch_launch_page, name="batch-launch"),
    # Before batches/<id>/<action>/ (the batch page's POST actions).
    path(
        "batches/<int:batch_id>/preview/",
        batch_preview_views.batch_preview_page,
        name="batch-preview",
    ),
    path(
        "batches/<int:batch_id>/preview/<int:number>/",
        batch_preview_views.batch_preview_page,
        name="batch-preview-task",
    ),
    path("runs/<int:run_id>/texts/", run_texts_views.run_texts_page, name="run-texts"),
    path("runs/<int:run_id>/data/", run_data_views.run_data_page, name="run-data"),
    path(
        "runs/<int:run_id>/inputs/<slug:name>/",
        run_input_views.run_input_page,
        name="run-input",
    ),
    path(
        "batches/<int:batch_id>/<str:action>/",
        batch_launch_views.batch_launch_action,
        name="batch-launch-action",
    ),
    path("runs/<int:run_id>/exports/", export_views.run_exports_page, name="run-exports"),
    path("runs/<int:run_id>/exports/new/", export_views.export_new, name="run-export-new"),
    path("exports/<int:export_id>/files/<str:name>", export_views.export_file, name="export-file"),
    path(
        "runs/<int:run_id>/workers/notify/",
        workers_views.run_workers_notify,
        name="run-workers-notify",
    ),
    path(
        "runs/<int:run_id>/workers/<int:worker_id>/<str:action>/",
        workers_views.run_worker_action,
        name="run-worker-action",
    ),
]
# Each registered crowd provider's pages (its worker entry, its own tools).
urlpatterns += [path("", include(p.urls)) for p in providers() if p.urls]

# Error pages: JSON with `error` under /api/, the HTML pages elsewhere.
handler400 = "annotation.api.errors.bad_request"
handler403 = "annotation.api.errors.permission_denied"
handler404 = "annotation.api.errors.not_found"
handler500 = "annotation.api.errors.server_error"
