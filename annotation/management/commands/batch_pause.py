from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Batch
from annotation.services.runs.batches import batch_pause, batch_resume


class Command(ServiceCommand):
    help = (
        "Pause a published batch (no new claims; a platform with a pause, such as Prolific, "
        "sends no new workers; work in progress may finish), or resume it with --resume."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("--resume", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = get_object_or_404(Batch, pk=opts["batch"])
        batch = batch_resume(batch=batch) if opts["resume"] else batch_pause(batch=batch)
        self.stdout.write(f"batch {batch.pk}: {batch.status}")
