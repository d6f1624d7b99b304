"""The separate bare app with a session (settings: `bare_session_settings.py`): the bare app's
one-row view (`bare_urls.py`), answering only a session that names a worker, with a CSRF token
as a page's form carries it."""

from django.middleware.csrf import get_token
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

from benchmarks.bare_urls import BareAppOneRow

# The app's session key for a local worker (annotation/crowd/local/views.py), written here:
# this app does not load the project's code.
SESSION_WORKER = "crowdvl_worker"


class BareAppWithSession(BareAppOneRow):
    def get(self, request: Request, pk: int) -> Response:
        if not isinstance(request.session.get(SESSION_WORKER), int):
            return Response(None, status=403)
        response = super().get(request, pk)
        response.data = {**response.data, "csrf": get_token(request)}
        return response


urlpatterns = [path("bench/bare/<int:pk>/", BareAppWithSession.as_view())]
