"""The sign-in page: Django's, saying clearly (HTTP 429) when the throttle refuses."""

from __future__ import annotations

import math
from typing import Any

from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.utils import timezone

from annotation.ratelimit import client_address
from annotation.services.access.logins import login_attempt_refused, login_refusal

LOCKED_MESSAGE = (
    "Too many failed sign-ins %(where)s: try again in %(minutes)s minutes, or ask a staff "
    "member to unlock it."
)
WHERE = {"pair": "for this account from this address", "address": "from this address"}
SLOWED_MESSAGE = (
    "Several recent sign-ins to this account failed: wait %(seconds)s seconds before trying "
    "again from this address."
)


class LoginForm(AuthenticationForm):
    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if username and self.request is not None:
            address = client_address(self.request)
            refusal = login_attempt_refused(username=username, address=address)
            if refusal is not None:  # refused before the password is tried
                seconds = max(1, math.ceil((refusal.until - timezone.now()).total_seconds()))
                if refusal.reason == "slowed":
                    raise ValidationError(
                        SLOWED_MESSAGE, code="locked", params={"seconds": seconds}
                    )
                minutes = max(1, -(-seconds // 60))
                where = WHERE[refusal.reason]
                raise ValidationError(
                    LOCKED_MESSAGE, code="locked", params={"minutes": minutes, "where": where}
                )
        return super().clean()


class LoginView(auth_views.LoginView):
    form_class = LoginForm
    template_name = "annotation/login.html"

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error("__all__", "locked"):
            response.status_code = 429
            refusal = login_refusal(
                username=form.data.get("username", ""), address=client_address(self.request)
            )
            if refusal is not None:  # the wait, for scripts and the API's clients
                wait = (refusal.until - timezone.now()).total_seconds()
                response["Retry-After"] = str(max(1, int(wait) + 1))
        return response
