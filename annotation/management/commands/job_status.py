from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Job


class Command(ServiceCommand):
    help = "Show a background job's progress (or follow it with --wait)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job", type=record_id)
        parser.add_argument("--wait", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        job = get_object_or_404(Job, pk=opts["job"])
        if opts["wait"]:
            job = self.wait_for_job(job)
        self.stdout.write(f"job {job.pk} {job.name}: {job.state} {job.progress:.1f}% {job.message}")
        if job.error:
            self.stdout.write(f"error: {job.error}")
