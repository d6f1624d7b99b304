from django.urls import path

from annotation.api.paging import by_method
from annotation.crowd.local import api

urlpatterns = [
    path(
        "runs/<int:run_id>/invitations/",
        by_method(get=api.InvitationListApi, post=api.InvitationCreateApi),
        name="api-run-invitations",
    ),
    path(
        "invitations/<int:invitation_id>/revoke/",
        api.InvitationRevokeApi.as_view(),
        name="api-invitation-revoke",
    ),
]
