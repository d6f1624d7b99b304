from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.crowd.mturk.sync import PROVIDER, mturk_sync_batch
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Batch


class Command(ServiceCommand):
    help = "Bring MTurk assignments into the app and reconcile states (all published MTurk batches by default)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=record_id, action="append", help="only these batches")

    def handle(self, *args: Any, **opts: Any) -> None:
        batches = Batch.objects.filter(provider=PROVIDER, status="published")
        if opts["batch"]:
            batches = Batch.objects.filter(pk__in=opts["batch"], provider=PROVIDER)
            unknown = sorted(set(opts["batch"]) - set(batches.values_list("pk", flat=True)))
            if unknown:  # asked for by id: silence would look like "nothing changed"
                raise CommandError(f"--batch: no {PROVIDER} batch {', '.join(map(str, unknown))}")
        for batch in batches.order_by("pk"):
            report = mturk_sync_batch(batch=batch)
            self.stdout.write(
                f"batch {batch.pk}: {report.hits} HITs, {report.ingested} assignments ingested, "
                f"{report.changed} changed, {len(report.unknown_hits)} unknown HITs"
            )
            for error in report.errors:
                self.stderr.write(self.style.WARNING(f"  {error}"))
