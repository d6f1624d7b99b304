from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.bison.services.export import bison_export_start
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.management.release_options import release_arguments, release_options
from annotation.models import Export, RunKind


class Command(ServiceCommand):
    help = "Export a run's verified triples in the official COCO-BISON format (a Celery job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        release_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        job = self.wait_for_job(
            bison_export_start(
                run=self.run_of(opts["run"], kind=RunKind.BISON), release=release_options(opts)
            )
        )
        export = Export.objects.get(pk=job.result["export"])  # the job's result names no path
        self.stdout.write(
            f"exported {job.result['records']} records: version {export.version} in {export.path}"
        )
