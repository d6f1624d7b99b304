from django.urls import path

from annotation.pages.batches import preview, views

urlpatterns = [
    path("runs/<int:run_id>/batches/new/", views.batch_new_page, name="batch-new"),
    path("batches/<int:batch_id>/", views.batch_launch_page, name="batch-launch"),
    # Before batches/<id>/<action>/ (the batch page's POST actions), which would take them.
    path("batches/<int:batch_id>/preview/", preview.batch_preview_page, name="batch-preview"),
    path(
        "batches/<int:batch_id>/preview/<int:number>/",
        preview.batch_preview_page,
        name="batch-preview-task",
    ),
    path(
        "batches/<int:batch_id>/<str:action>/",
        views.batch_launch_action,
        name="batch-launch-action",
    ),
]
