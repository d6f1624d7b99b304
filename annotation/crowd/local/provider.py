from __future__ import annotations

from django.conf import settings
from django.urls import reverse

from annotation.models import Batch
from annotation.providers.base import ServerSideProvider


class LocalProvider(ServerSideProvider):
    """Workers open a link on this server, take their next HIT, answer and submit."""

    name = "local"
    urls = "annotation.crowd.local.urls"
    api_urls = "annotation.crowd.local.api_urls"
    label = "Local workers (invitation links)"

    def worker_url(self, *, batch: Batch, base: str | None = None) -> str:
        root = (base or settings.CROWDVL_PUBLIC_URL).rstrip("/")
        return root + reverse("work-start", args=[batch.pk])

    def launch_hint(self, *, batch: Batch) -> str:
        return (
            f"local workers need an invitation: manage.py invite_workers {batch.run_id} "
            "alice@example.org ... (or the dashboard's 'Invite local workers')"
        )
