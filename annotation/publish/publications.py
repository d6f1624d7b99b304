"""The publishing service: a `Publication` row is the intent, written before any call; the
destination resumes from what the archive holds (files with the same checksum are skipped, a
draft made before is looked up), and the row ends published or failed with the reason. A
version is never reported published unless every file's checksum matched at the archive."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.db import transaction

from annotation.errors import ServiceError
from annotation.models import EventAction, Export, Publication, PublicationStatus
from annotation.paths import paths_hidden
from annotation.publish.base import Destination, ReleaseFile, Say
from annotation.services.events import event_record


def destination_for(name: str, *, endpoint: str | None = None) -> Destination:
    """The destination called `name`, at `endpoint` (default: the setting)."""
    if name == "huggingface":
        from annotation.publish.huggingface import HubDestination

        return HubDestination(endpoint=endpoint)
    if name == "zenodo":
        from annotation.publish.zenodo import ZenodoDestination

        return ZenodoDestination(endpoint=endpoint)
    raise ServiceError(f"--to: unknown destination {name!r}; choose huggingface or zenodo")


@dataclass(frozen=True)
class Plan:
    destination: Destination
    target: str
    files: list[ReleaseFile]

    def lines(self) -> list[str]:
        """The dry run: where, then each file with its size and sha256."""
        total = sum(f.size for f in self.files)
        return [
            f"destination: {self.destination.location(self.target)}",
            *(f"  {f.name}  {f.size} bytes  sha256 {f.sha256}" for f in self.files),
            f"{len(self.files)} file(s), {total} bytes",
        ]


def publication_plan(*, export: Export, destination: Destination, target: str) -> Plan:
    """What `destination` would receive for `export`; nothing is sent. An unlicensed export
    is refused: its own card says it may not be published as is."""
    license_id = (export.manifest.get("release") or {}).get("license", "unlicensed")
    if license_id == "unlicensed":
        raise ServiceError(
            f"export {export.format} v{export.version} of run {export.run_id} has no license: "
            "set one for the run or the export, export again, then publish"
        )
    return Plan(
        destination=destination,
        target=destination.target(target),
        files=destination.files(export),
    )


def publication_run(*, export: Export, plan: Plan, say: Say) -> Publication:
    """Publish `plan`: the row first (found again on a second attempt), then the
    destination's calls; the row ends published, or failed with the reason (raised again)."""
    destination = plan.destination
    with transaction.atomic():
        row, made = Publication.objects.select_for_update().get_or_create(
            export=export,
            destination=destination.name,
            target=plan.target,
            defaults={"endpoint": destination.endpoint, "reference": secrets.token_hex(8)},
        )
    if row.status == PublicationStatus.PUBLISHED:
        say(f"already published: {row.remote_url or row.remote_id}")
        return row
    event_record(
        action=EventAction.PUBLICATION_STARTED if made else EventAction.PUBLICATION_RESUMED,
        run=export.run,
        data={"publication": row.pk, "destination": row.destination, "target": row.target},
    )
    if not made:
        say(f"resuming publication {row.pk} ({len(row.files_done)} file(s) done before)")
    try:
        destination.publish(publication=row, files=plan.files, say=say)
    except Exception as exc:
        error = paths_hidden(f"{type(exc).__name__}: {exc}")[:2000]
        Publication.objects.filter(pk=row.pk).update(
            status=PublicationStatus.FAILED,
            error=error,
            remote_id=row.remote_id,
            files_done=row.files_done,
        )
        event_record(action=EventAction.PUBLICATION_FAILED, run=export.run,
                     data={"publication": row.pk, "error": error})  # fmt: skip
        raise
    row.status, row.error = PublicationStatus.PUBLISHED, ""
    row.save()
    event_record(
        action=EventAction.PUBLICATION_PUBLISHED,
        run=export.run,
        data={"publication": row.pk, "remote_id": row.remote_id, "url": row.remote_url},
    )
    return row
