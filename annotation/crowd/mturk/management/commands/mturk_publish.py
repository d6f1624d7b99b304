from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.crowd.mturk.client import validate_batch
from annotation.crowd.mturk.publish import mturk_publish_start
from annotation.crowd.mturk.spend import mturk_cost_estimate
from annotation.errors import ServiceError
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Batch
from annotation.services.runs.batches import batch_warnings


class Command(ServiceCommand):
    help = "Publish a draft batch to MTurk (a Celery job). Shows the cost first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("--dry-run", action="store_true", help="only show the estimated cost")
        parser.add_argument("--no-wait", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = get_object_or_404(Batch, pk=opts["batch"])
        self.stdout.write(
            f"estimated cost: {mturk_cost_estimate(batch=batch, unpublished_only=True).describe()}"
        )
        for warning in batch_warnings(batch=batch):
            self.stdout.write(self.style.WARNING(f"Warning: {warning}"))
        if opts["dry_run"]:  # what publishing would refuse, first of all the closure (issue 46)
            try:
                validate_batch(batch)
            except ServiceError as exc:
                self.stdout.write(self.style.ERROR(f"Publishing would be refused: {exc}"))
            return
        job = mturk_publish_start(batch=batch)
        if opts["no_wait"]:
            self.stdout.write(f"job {job.pk} enqueued")
            return
        job = self.wait_for_job(job)
        self.stdout.write(f"published: {job.result}")
