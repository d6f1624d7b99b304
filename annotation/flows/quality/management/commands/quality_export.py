from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.quality.services.export import quality_export_start
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.management.release_options import release_arguments, release_options
from annotation.models import RunKind


class Command(ServiceCommand):
    help = "Export judgments in the Flickr8k-Expert/CF layouts, a CSV per task, a manifest (a job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        release_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        job = self.wait_for_job(
            quality_export_start(
                run=self.run_of(opts["run"], kind=RunKind.QUALITY), release=release_options(opts)
            )
        )
        self.stdout.write(job.message)
