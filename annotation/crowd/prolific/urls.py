"""Prolific's pages: where the study's link lands, the task, and the webhook."""

from django.urls import path

from annotation.crowd.prolific import pay_views, test_views, views

urlpatterns = [
    path("prolific/study/<int:batch_id>/", views.prolific_start, name="prolific-start"),
    path("prolific/assignment/<int:assignment_id>/", views.prolific_task, name="prolific-task"),
    path(
        "prolific/assignment/<int:assignment_id>/draft/",
        views.prolific_task_draft,
        name="prolific-task-draft",
    ),
    path("prolific/hooks/", views.prolific_hook, name="prolific-hook"),
    path("prolific/reconcile/", views.prolific_reconcile_page, name="prolific-reconcile"),
    path("prolific/batches/<int:batch_id>/pay/", pay_views.prolific_pay_page, name="prolific-pay"),
    path(
        "prolific/batches/<int:batch_id>/test/", test_views.prolific_test_page, name="prolific-test"
    ),
    path(
        "prolific/batches/<int:batch_id>/test/task/",
        test_views.prolific_test_task,
        name="prolific-test-task",
    ),
]
