from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.shortcuts import get_object_or_404

from annotation.crowd.panel.approvals import MAX_BYTES, panel_confirm
from annotation.management.base import ServiceCommand
from annotation.models import Batch


class Command(ServiceCommand):
    help = (
        "Confirm a panel batch's work from the panel's CSV of approved participant ids: their "
        "waiting work counts from now; ids without work are reported. The file is checked "
        "whole first (an error names the file, the line and the field) and nothing is written "
        "unless it is good."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=int)
        parser.add_argument("file", help="the panel's CSV (or one id per line)")
        parser.add_argument(
            "--release-unlisted",
            action="store_true",
            help="the file is the panel's final list: waiting work of participants it does "
            "not list is rejected (never counts; its tasks go to others)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = get_object_or_404(Batch, pk=opts["batch"])
        path = Path(opts["file"])
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from None
        report = panel_confirm(
            batch=batch, data=data, file=path.name, release_unlisted=opts["release_unlisted"]
        )
        self.stdout.write(report.describe())
