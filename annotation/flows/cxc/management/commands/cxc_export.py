from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.cxc.services.export import cxc_export_start
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.management.release_options import release_arguments, release_options
from annotation.models import RunKind


class Command(ServiceCommand):
    help = "Export sis/sts/sits CSVs (CxC's layout), ratings.jsonl and a manifest (a job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        release_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        job = self.wait_for_job(
            cxc_export_start(
                run=self.run_of(opts["run"], kind=RunKind.CXC), release=release_options(opts)
            )
        )
        self.stdout.write(job.message)
