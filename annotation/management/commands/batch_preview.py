import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import Batch
from annotation.selectors.work.preview import batch_preview, preview_record


class Command(ServiceCommand):
    help = (
        "One task page of a batch (draft or published) as its workers get it, as JSON: the "
        "questions' view, the run's instructions for the stage and the console's preview (url)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument(
            "--number", type=whole(1, 2**31 - 1), default=1, help="the task (1 = the first)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = get_object_or_404(Batch.objects.select_related("run"), pk=opts["batch"])
        page = batch_preview(batch=batch, number=opts["number"])
        if page is None:
            raise CommandError(f"batch {batch.pk} has no task {opts['number']}")
        record = preview_record(batch=batch, page=page)
        self.stdout.write(json.dumps(record, indent=2))
