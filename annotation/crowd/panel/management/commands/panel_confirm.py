from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.crowd.panel import options
from annotation.crowd.panel.approvals import panel_confirm, size_check, upload_limit
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Confirm a panel batch's work from the panel's CSV of approved participant ids: their "
        "waiting work counts from now; ids without work are reported. The file is checked "
        "whole first (an error names the file, the line and the field) and nothing is written "
        "unless it is good."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("file", help="the panel's CSV (or one id per line)")
        parser.add_argument(
            "--release-unlisted",
            action="store_true",
            help="the file is the panel's final list: waiting work of participants it does "
            "not list is rejected (never counts; its tasks go to others)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = self.batch_of(opts["batch"], provider=options.PROVIDER)
        path = Path(opts["file"])
        try:
            # Its size first, as the console and the API check an upload's (issue 47).
            size_check(path.stat().st_size, file=path.name, field="file")
            with path.open("rb") as handle:
                data = handle.read(upload_limit() + 1)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from None
        report = panel_confirm(
            batch=batch, data=data, file=path.name, release_unlisted=opts["release_unlisted"]
        )
        self.stdout.write(report.describe())
