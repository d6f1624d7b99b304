"""The local provider's pages: invitation links, the worker's pages (paths as they always were:
links already sent embed them)."""

from django.urls import path

from annotation.crowd.local import invitation_views, views

urlpatterns = [
    path("join/<str:token>/", views.work_join, name="work-join"),
    path("runs/<int:run_id>/invitations/", invitation_views.invitations_page, name="invitations"),
    path(
        "runs/<int:run_id>/invitations.csv",
        invitation_views.invitations_csv,
        name="invitations-csv",
    ),
    path(
        "invitations/<int:invitation_id>/revoke/",
        invitation_views.invitation_revoke_view,
        name="invitation-revoke",
    ),
    path("work/<int:batch_id>/", views.work_start, name="work-start"),
    path("work/<int:batch_id>/next/", views.work_next, name="work-next"),
    path("work/assignment/<int:assignment_id>/", views.work_assignment, name="work-assignment"),
    path(
        "work/assignment/<int:assignment_id>/draft/",
        views.work_assignment_draft,
        name="work-assignment-draft",
    ),
]
