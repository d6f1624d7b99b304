import json
from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.flows.eccv.services.report import eccv_report
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Run


class Command(ServiceCommand):
    help = (
        "Benchmark precision/recall (COCO, CxC), Kendall tau-b between annotators, and model bias."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)

    def handle(self, *args: Any, **opts: Any) -> None:
        self.stdout.write(
            json.dumps(eccv_report(run=get_object_or_404(Run, pk=opts["run"])), indent=2)
        )
