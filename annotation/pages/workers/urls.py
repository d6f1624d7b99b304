from django.urls import path

from annotation.pages.workers import views

urlpatterns = [
    path("runs/<int:run_id>/workers/", views.run_workers_page, name="run-workers"),
    # Before runs/<id>/workers/<worker>/<action>/, so a reader sees both; the int keeps them apart.
    path("runs/<int:run_id>/workers/notify/", views.run_workers_notify, name="run-workers-notify"),
    path(
        "runs/<int:run_id>/workers/<int:worker_id>/<str:action>/",
        views.run_worker_action,
        name="run-worker-action",
    ),
]
