"""The site's address for links shown to people: CROWDVL_PUBLIC_URL when it is set, otherwise
the host the page was requested from (so a console served at https://crowd.lab.org does not
print http://127.0.0.1:8000)."""

from __future__ import annotations

from urllib.parse import urlsplit

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


LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def loopback_warning(base: str) -> str | None:
    """Why links under `base` reach no one but this machine, or None."""
    if (urlsplit(base).hostname or "") not in LOOPBACK:
        return None
    return (
        f"These links point at {base}, which only this machine can open. For workers on other "
        "machines, serve on the network (`make serve ADDR=0.0.0.0:8000`), set CROWDVL_PUBLIC_URL "
        "to the address they use (e.g. http://lab-pc.example.org:8000) and add that host to "
        "DJANGO_ALLOWED_HOSTS."
    )
