from __future__ import annotations

from django.conf import settings
from django.urls import reverse

from annotation.crowd.base import ServerSideProvider
from annotation.models import Batch


class LocalProvider(ServerSideProvider):
    """Workers open a link on this server, take their next HIT, answer and submit."""

    name = "local"

    def worker_url(self, *, batch: Batch, base: str | None = None) -> str:
        root = (base or settings.CROWDVL_PUBLIC_URL).rstrip("/")
        return root + reverse("work-start", args=[batch.pk])
