from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.eccv.services.cxc_positives import eccv_cxc_import
from annotation.management.arguments import number, record_id
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = "Merge CxC caption-image positives (sits CSV, agg_score >= threshold) into an ECCV run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument("path")
        parser.add_argument("--threshold", type=number(0.0, 5.0))
        parser.add_argument(
            "--skip-unknown", action="store_true", help="skip rows naming ids the dataset lacks"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        n = eccv_cxc_import(
            run=self.run_of(opts["run"], kind=RunKind.ECCV),
            path=opts["path"],
            threshold=opts["threshold"],
            skip_unknown=opts["skip_unknown"],
        )
        self.stdout.write(f"{n} CxC positives imported")
