from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.crowd.panel import options
from annotation.crowd.panel.selectors import bonus_csv
from annotation.crowd.panel.services import panel_batch_check
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.services.files import file_write_atomic


class Command(ServiceCommand):
    help = (
        "A panel batch's bonuses as CSV (participant_id, amount, reason) for the panel to pay: "
        "it has no API, so bonuses are recorded here only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("--output", "-o", help="write to this file instead of the screen")

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = self.batch_of(opts["batch"], provider=options.PROVIDER)
        panel_batch_check(batch)
        text = bonus_csv(batch=batch)
        if opts["output"]:
            try:  # whole or not at all: a temporary file renamed once written
                file_write_atomic(path=Path(opts["output"]), data=text.encode("utf-8"))
            except OSError as exc:
                raise CommandError(
                    f"--output {opts['output']}: cannot write there ({exc.strerror or exc})"
                ) from None
            rows = text.count("\n") - 1
            self.stdout.write(f"{rows} bonus(es) written to {opts['output']}")
        else:
            self.stdout.write(text, ending="")
