from typing import Any

from django.core.management.base import CommandParser

from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.providers import provider_for
from annotation.services.runs.batches import batch_warnings


class Command(ServiceCommand):
    help = (
        "Publish a draft batch as a Prolific study (a Celery job): shows the cost with "
        "Prolific's fees and who may take it, and refuses what the checks refuse."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("--dry-run", action="store_true", help="only show cost and checks")
        parser.add_argument("--no-wait", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = self.batch_of(opts["batch"], provider="prolific")
        provider = provider_for("prolific")
        self.stdout.write(f"estimated cost: {provider.cost_estimate(batch=batch).describe()}")
        for line in provider.requirements(batch=batch):
            self.stdout.write(f"  {line}")
        for warning in batch_warnings(batch=batch):
            self.stdout.write(self.style.WARNING(f"Warning: {warning}"))
        if opts["dry_run"]:
            provider.publish_check(batch=batch)
            self.stdout.write("the checks pass")
            return
        job = provider.publish_start(batch=batch)
        assert job is not None
        if opts["no_wait"]:
            self.stdout.write(f"job {job.pk} enqueued")
            return
        job = self.wait_for_job(job)
        self.stdout.write(f"published: {job.result}")
