"""The panel's pages: the participant's (the study link and what follows it) and the
researcher's (a batch's settings, confirmation upload, bonus CSV)."""

from django.urls import path

from annotation.crowd.panel import views

urlpatterns = [
    path("panel/<int:batch_id>/", views.panel_entry, name="panel-entry"),
    path("panel/<int:batch_id>/next/", views.panel_next, name="panel-next"),
    path("panel/<int:batch_id>/finish/", views.panel_finish, name="panel-finish"),
    path("panel/task/<int:assignment_id>/", views.panel_task, name="panel-task"),
]
