"""Prolific's pages: where the study's link lands, the task, and the webhook."""

from django.urls import path

from annotation.crowd.prolific import views

urlpatterns = [
    path("prolific/study/<int:batch_id>/", views.prolific_start, name="prolific-start"),
    path("prolific/assignment/<int:assignment_id>/", views.prolific_task, name="prolific-task"),
    path("prolific/hooks/", views.prolific_hook, name="prolific-hook"),
    path("prolific/reconcile/", views.prolific_reconcile_page, name="prolific-reconcile"),
]
