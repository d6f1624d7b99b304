from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.eccv.services.proposal_job import eccv_propose_start
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = (
        "Every annotator proposes its top-k for each query; duplicates are merged (a Celery job)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)

    def handle(self, *args: Any, **opts: Any) -> None:
        job = self.wait_for_job(eccv_propose_start(run=self.run_of(opts["run"], kind=RunKind.ECCV)))
        self.stdout.write(
            f"{job.result['proposed']} proposals -> {job.result['candidates']} candidate pairs"
        )
