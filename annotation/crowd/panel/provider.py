from __future__ import annotations

from typing import Any

from django.conf import settings

from annotation.crowd.base import ServerSideProvider
from annotation.crowd.panel import options
from annotation.errors import ServiceError
from annotation.models import Batch, Worker


class PanelProvider(ServerSideProvider):
    """A recruiter without an API (CloudResearch Connect, SONA, a university pool) sends
    participants to a study link; they consent and work on this server like local workers.
    Their work is stored unconfirmed (`claims_unconfirmed`: it holds its slot, it does not
    count) until the researcher uploads the panel's list of approved participant ids. The
    panel pays: bonuses are recorded here and exported as a CSV for the panel; blocks are our
    own flag; the panel has no messages we could send."""

    name = options.PROVIDER
    label = "Panel (CloudResearch Connect, SONA, participant pools: a study link)"
    urls = "annotation.crowd.panel.urls"
    api_urls = "annotation.crowd.panel.api_urls"
    claims_unconfirmed = True  # the confirmation is the researcher's upload, not our claim
    case_sensitive_ids = True  # ids go back to the panel (bonus CSV) as it spells them

    def batch_options(self, *, options: dict[str, Any]) -> dict[str, Any]:
        from annotation.crowd.panel.options import batch_options

        return batch_options(options)

    def worker_url(self, *, batch: Batch, base: str | None = None) -> str:
        return options.study_link(
            base or settings.CROWDVL_PUBLIC_URL, batch, options.settings_of(batch)
        )

    def launch_hint(self, *, batch: Batch) -> str:
        panel = options.settings_of(batch)
        code = panel["completion"][options.COMPLETED]
        end = (
            f"participants are sent to {panel['completion_url']} with their code"
            if panel["completion_url"]
            else f"participants see the completion code {code or '(none set)'}"
        )
        return (
            f"paste the study link into the panel, with the panel's participant-id "
            f"placeholder after it: {self.worker_url(batch=batch)}<panel's id placeholder>; "
            f"when they finish, {end} (change: manage.py panel_settings {batch.pk}). Their "
            f"work counts once you upload the panel's CSV of approved participant ids: "
            f"manage.py panel_confirm {batch.pk} approved.csv (or the batch's panel page)"
        )

    def notify(self, *, workers: list[Worker], subject: str, message: str) -> None:
        raise ServiceError(
            "a panel has no messaging API: write to participants through the panel's own "
            "messages (CloudResearch Connect, SONA); nothing was sent"
        )
