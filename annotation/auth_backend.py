"""The only authentication backend: Django's, with the sign-in throttle (services/access/logins.py)
in front of it, so every password check a client can reach is throttled: the sign-in page, the
admin's and the API's HTTP basic auth alike."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from annotation.ratelimit import client_address
from annotation.services.access.logins import (
    login_attempt_refused,
    login_failure_record,
    login_success_record,
)


class ThrottledModelBackend(ModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if request is None:  # not a client's request (the shell, the test client's login)
            return super().authenticate(request, username, password, **kwargs)
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if username is None or password is None:
            return None
        address = client_address(request)
        if login_attempt_refused(username=username, address=address):
            # authenticate() stops here and answers "no user": the password is not even tried.
            raise PermissionDenied("too many failed sign-ins; try again later")
        user = super().authenticate(request, username, password, **kwargs)
        if user is None:
            login_failure_record(username=username, address=address)
        else:
            login_success_record(username=username, address=address)
        return user
