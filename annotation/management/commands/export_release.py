from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import Run
from annotation.services.release_bundle import export_bundle_create


class Command(ServiceCommand):
    help = (
        "Pack a run's export version (--export-version, default: the newest) into a .tar.gz with SHA256SUMS; "
        "upload it to the Hub with your own token (see the export's README.md)."
    )

    options_of_fields = {"version": "--export-version"}

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument(
            "--export-version", dest="export_version", type=whole(1, 2**31 - 1), default=None
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        run = get_object_or_404(Run, pk=opts["run"])
        path, sha = export_bundle_create(run=run, version=opts["export_version"])
        self.stdout.write(f"{path.name} sha256 {sha}")
