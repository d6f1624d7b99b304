"""The sign-in page: Django's, saying clearly (HTTP 429) when the throttle refuses."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.utils import timezone

from annotation.ratelimit import client_address
from annotation.services.logins import login_locked_until

LOCKED_MESSAGE = (
    "Too many failed sign-ins for this account or from this address: try again in %(minutes)s "
    "minutes, or ask a staff member to unlock it."
)


class LoginForm(AuthenticationForm):
    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if username and self.request is not None:
            until = login_locked_until(username=username, address=client_address(self.request))
            if until is not None:  # refused before the password is tried
                minutes = max(1, -(-int((until - timezone.now()).total_seconds()) // 60))
                raise ValidationError(LOCKED_MESSAGE, code="locked", params={"minutes": minutes})
        return super().clean()


class LoginView(auth_views.LoginView):
    form_class = LoginForm
    template_name = "annotation/login.html"

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error("__all__", "locked"):
            response.status_code = 429
        return response
