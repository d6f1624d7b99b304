"""MTurk's pages: the task inside MTurk's frame (live HITs embed this path) and the staff's
money check."""

from django.urls import path

from annotation.crowd.mturk import views

urlpatterns = [
    path("mturk/hit/<int:hit_id>/", views.mturk_task, name="mturk-task"),
    path("mturk/reconcile/", views.mturk_reconcile_page, name="mturk-reconcile"),
]
