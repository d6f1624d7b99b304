from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse

from annotation.crowd.panel import options
from annotation.crowd.panel.options import KEY
from annotation.errors import ServiceError
from annotation.models import Batch, Worker
from annotation.providers.base import IdShapes, LaunchNote, ServerSideProvider


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
    # A worker is "<panel name>:<participant id>" (options.NAME, options.PARTICIPANT): panels
    # publish no id format, so the participant's part takes up to 64 characters.
    id_shapes = IdShapes(
        worker=options.NAME_LENGTH + 1 + options.PARTICIPANT_LENGTH,
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        reference="annotation/crowd/panel/options.py (no panel documents a format)",
    )

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

    def published_options(self, *, options: dict[str, Any]) -> dict[str, Any]:
        """Completion codes and the completion URL are the panel's keys to its payments:
        a datasheet says only whether they were set."""
        panel = options.get(KEY)
        if not isinstance(panel, dict):
            return options
        hidden = {
            **panel,
            "completion": {
                o: "(set)" if c else "" for o, c in (panel.get("completion") or {}).items()
            },
            "completion_url": "(set)" if panel.get("completion_url") else "",
        }
        return {**options, KEY: hidden}

    def launch_notes(self, *, batch: Batch, base: str) -> list[LaunchNote]:
        panel = options.settings_of(batch)
        codes = "; ".join(
            f"{options.OUTCOME_LABELS[o]}: {panel['completion'][o] or '(no code)'}"
            for o in options.OUTCOMES
        )
        end = f"redirect to {panel['completion_url']}" if panel["completion_url"] else "shown"
        return [
            LaunchNote(
                "Study link (paste into the panel, its participant-id placeholder after it)",
                options.study_link(base, batch, panel),
            ),
            LaunchNote("Participant id parameter", panel["id_param"]),
            LaunchNote(f"Completion codes ({end})", codes),
            LaunchNote(
                "Work counts once you upload the panel's CSV of approved participants",
                "Panel page: settings, confirmation, bonus CSV",
                link=reverse("panel-batch", args=[batch.pk]),
            ),
        ]

    def notify(self, *, workers: list[Worker], subject: str, message: str) -> None:
        raise ServiceError(
            "a panel has no messaging API: write to participants through the panel's own "
            "messages (CloudResearch Connect, SONA); nothing was sent"
        )
