from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.eccv.services.export import eccv_export_start
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.management.release_options import release_arguments, release_options
from annotation.models import Export, RunKind


class Command(ServiceCommand):
    help = "Export an ECCV run: eccv_image_to_caption.json, eccv_caption_to_image.json, judged pairs JSONL, manifest."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        release_arguments(parser)
        parser.add_argument(
            "--allow-open-reviews",
            action="store_true",
            help="export although some work waits for review (it is left out and listed)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        run = self.run_of(opts["run"], kind=RunKind.ECCV)
        job = self.wait_for_job(
            eccv_export_start(
                run=run,
                release=release_options(opts),
                allow_open_reviews=opts["allow_open_reviews"],
            )
        )
        export = Export.objects.get(pk=job.result["export"])  # the job's result names no path
        self.stdout.write(f"exported version {export.version} to {export.path}")
        for key, value in job.result["counts"].items():
            self.stdout.write(f"  {key}: {value}")
