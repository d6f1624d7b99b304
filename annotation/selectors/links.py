"""The site's address for links shown to people: CROWDVL_PUBLIC_URL when it is set, otherwise
the host the page was requested from (so a console served at https://crowd.lab.org does not
print http://127.0.0.1:8000)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse

from annotation.models import Invitation


def public_base_url(request: HttpRequest | None = None) -> str:
    if settings.CROWDVL_PUBLIC_URL_SET or request is None:
        return str(settings.CROWDVL_PUBLIC_URL).rstrip("/")
    return request.build_absolute_uri("/").rstrip("/")


def invitation_link(request: HttpRequest | None, invitation: Invitation) -> str:
    """The link a local worker opens to join a run (consent, then the run's batches)."""
    return public_base_url(request) + reverse("work-join", args=[invitation.token])
