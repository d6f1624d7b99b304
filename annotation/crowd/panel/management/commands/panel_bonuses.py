from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.crowd.panel.selectors import bonus_csv
from annotation.crowd.panel.services import panel_batch_check
from annotation.management.base import ServiceCommand
from annotation.models import Batch


class Command(ServiceCommand):
    help = (
        "A panel batch's bonuses as CSV (participant_id, amount, reason) for the panel to pay: "
        "it has no API, so bonuses are recorded here only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=int)
        parser.add_argument("--output", "-o", help="write to this file instead of the screen")

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = get_object_or_404(Batch, pk=opts["batch"])
        panel_batch_check(batch)
        text = bonus_csv(batch=batch)
        if opts["output"]:
            Path(opts["output"]).write_text(text, encoding="utf-8")
            rows = text.count("\n") - 1
            self.stdout.write(f"{rows} bonus(es) written to {opts['output']}")
        else:
            self.stdout.write(text, ending="")
