import json
from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.eccv.services.report import eccv_report
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = (
        "Benchmark precision/recall (COCO, CxC), Kendall tau-b between annotators, and model bias."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)

    def handle(self, *args: Any, **opts: Any) -> None:
        self.stdout.write(
            json.dumps(eccv_report(run=self.run_of(opts["run"], kind=RunKind.ECCV)), indent=2)
        )
