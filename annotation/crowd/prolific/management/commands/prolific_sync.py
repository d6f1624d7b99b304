from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.crowd.prolific.provider import prolific_provider
from annotation.crowd.prolific.publish import prolific_sync_one
from annotation.crowd.prolific.sync import PROVIDER
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Batch


class Command(ServiceCommand):
    help = (
        "Bring Prolific submission statuses in and put participants with counted work in their "
        "stage's pool group (all published Prolific batches by default)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=record_id, action="append", help="only these batches")

    def handle(self, *args: Any, **opts: Any) -> None:
        batches = Batch.objects.filter(provider=PROVIDER, status="published")
        if opts["batch"]:
            batches = Batch.objects.filter(pk__in=opts["batch"], provider=PROVIDER)
            unknown = sorted(set(opts["batch"]) - set(batches.values_list("pk", flat=True)))
            if unknown:  # asked for by id: silence would look like "nothing changed"
                raise CommandError(f"--batch: no {PROVIDER} batch {', '.join(map(str, unknown))}")
        client = prolific_provider().client
        for batch in batches.order_by("pk"):
            report = prolific_sync_one(batch=batch, client=client)
            self.stdout.write(
                f"batch {batch.pk}: {report.submissions} submissions, {report.changed} changed"
                + (f", unknown statuses {sorted(set(report.unknown))}" if report.unknown else "")
            )
