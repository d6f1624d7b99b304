from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Run
from annotation.services.runs.batches import batches_stop


class Command(ServiceCommand):
    help = (
        "Kill switch: expire every HIT still on offer, of one run (--run) or of the whole "
        "installation, at every provider (MTurk included). Submitted work stays."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", type=record_id, help="only this run")
        parser.add_argument("--reason", required=True)
        parser.add_argument("--yes", action="store_true", help="confirm")

    def handle(self, *args: Any, **opts: Any) -> None:
        if not opts["yes"]:
            raise CommandError("this expires HITs workers may be doing: add --yes to confirm")
        run = get_object_or_404(Run, pk=opts["run"]) if opts["run"] else None
        result = batches_stop(run=run, reason=opts["reason"])
        self.stdout.write(f"stopped batches: {result['stopped'] or 'none'}")
        for pk, error in result["failed"].items():
            self.stderr.write(f"batch {pk} could not be stopped: {error}")
        if result["failed"]:
            raise CommandError("some batches could not be stopped: run the command again")
