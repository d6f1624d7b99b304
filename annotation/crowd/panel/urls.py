"""The panel's pages: the participant's (the study link and what follows it) and the
researcher's (a batch's study link, settings, confirmation upload, bonus CSV)."""

from django.urls import path

from annotation.crowd.panel import batch_views, views

urlpatterns = [
    path("panel/<int:batch_id>/", views.panel_entry, name="panel-entry"),
    path("panel/<int:batch_id>/next/", views.panel_next, name="panel-next"),
    path("panel/<int:batch_id>/finish/", views.panel_finish, name="panel-finish"),
    path("panel/task/<int:assignment_id>/", views.panel_task, name="panel-task"),
    path("panel/task/<int:assignment_id>/draft/", views.panel_task_draft, name="panel-task-draft"),
    path("panel/batches/<int:batch_id>/", batch_views.panel_batch_page, name="panel-batch"),
    path(
        "panel/batches/<int:batch_id>/settings/",
        batch_views.panel_batch_settings,
        name="panel-batch-settings",
    ),
    path(
        "panel/batches/<int:batch_id>/confirm/",
        batch_views.panel_batch_confirm,
        name="panel-batch-confirm",
    ),
    path(
        "panel/batches/<int:batch_id>/bonuses.csv",
        batch_views.panel_batch_bonuses,
        name="panel-batch-bonuses",
    ),
]
