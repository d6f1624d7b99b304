import csv
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.shortcuts import get_object_or_404
from django.urls import reverse

from annotation.crowd.local.invitations import (
    invitation_of,
    invitation_revoke,
    invitations_create,
    labels_from,
)
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Run
from annotation.spreadsheet import spreadsheet_cell


class Command(ServiceCommand):
    help = (
        "Create invitation links for local workers of a run (emails or ids as arguments or "
        "the first column of a CSV, header row allowed) and print them as CSV (label,link); "
        "--revoke stops links at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument("labels", nargs="*", help="emails or worker ids")
        parser.add_argument("--csv", help="a CSV file whose first column holds emails or ids")
        parser.add_argument("--revoke", nargs="+", metavar="LABEL", help="revoke these links")

    def handle(self, *args: Any, **opts: Any) -> None:
        run = get_object_or_404(Run, pk=opts["run"])
        if opts["revoke"]:
            found = {label: invitation_of(run=run, label=label) for label in opts["revoke"]}
            missing = [label for label, invitation in found.items() if invitation is None]
            if missing:
                raise CommandError(f"run {run.pk} has no invitation for {', '.join(missing)}")
            for label, invitation in found.items():
                assert invitation is not None  # every one was found above
                invitation_revoke(invitation=invitation)
                self.stdout.write(f"revoked {label}")
            return
        labels = list(opts["labels"])
        if opts["csv"]:
            try:
                with open(opts["csv"], newline="", encoding="utf-8-sig") as handle:
                    labels += labels_from(handle.read())
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"{opts['csv']}: cannot read the CSV file ({exc})") from exc
        base = settings.CROWDVL_PUBLIC_URL.rstrip("/")
        writer = csv.writer(self.stdout)
        writer.writerow(["label", "link"])
        for invitation in invitations_create(run=run, labels=labels):
            writer.writerow(
                [
                    spreadsheet_cell(invitation.label),
                    base + reverse("work-join", args=[invitation.token]),
                ]
            )
