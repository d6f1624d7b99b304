from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.cxc.inputs import STAGES
from annotation.flows.cxc.services.sampling import cxc_gold_import, cxc_gold_note
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = (
        "Gold pairs with known ratings from a CxC CSV (pairs of this dataset only; shown as "
        "gold only in a run with gold_source 'paper')."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument("file")
        parser.add_argument("--stage", choices=sorted(STAGES), required=True)

    def handle(self, *args: Any, **opts: Any) -> None:
        run = self.run_of(opts["run"], kind=RunKind.CXC)
        n = cxc_gold_import(run=run, path=opts["file"], stage=STAGES[opts["stage"]])
        self.stdout.write(f"{n} gold pairs for {opts['stage']}{cxc_gold_note(run=run)}")
