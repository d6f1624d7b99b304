from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import Run
from annotation.publish.publications import destination_for, publication_plan, publication_run
from annotation.services.release.release_bundle import export_bundle_create, export_version


class Command(ServiceCommand):
    help = (
        "Pack a run's export version (--export-version, default: the newest) into a .tar.gz "
        "with SHA256SUMS; with --to, publish it: `--to huggingface <owner>/<name>` (a dataset "
        "repository on the Hub, token HF_TOKEN) or `--to zenodo` (a published deposition, "
        "token ZENODO_TOKEN). --dry-run lists what would be uploaded and calls nothing; a "
        "publication cut off half-way resumes when run again."
    )

    options_of_fields = {"version": "--export-version"}

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument(
            "--export-version", dest="export_version", type=whole(1, 2**31 - 1), default=None
        )
        parser.add_argument(
            "--to",
            nargs="+",
            metavar=("DESTINATION", "REPO"),
            help="huggingface <owner>/<name>, or zenodo",
        )
        parser.add_argument("--dry-run", action="store_true", help="list, send nothing")
        parser.add_argument(
            "--endpoint",
            default=None,
            help="the destination's base URL (default: HF_ENDPOINT / ZENODO_URL settings)",
        )
        parser.add_argument(
            "--private", action="store_true", help="the Hub: make the repository private"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        run = get_object_or_404(Run, pk=opts["run"])
        if not opts["to"]:
            if opts["dry_run"]:
                raise CommandError("--dry-run goes with --to")
            path, sha = export_bundle_create(run=run, version=opts["export_version"])
            self.stdout.write(f"{path.name} sha256 {sha}")
            return
        name, *rest = opts["to"]
        if name == "huggingface" and len(rest) != 1:
            raise CommandError("--to huggingface takes the repository: <owner>/<name>")
        if name == "zenodo" and rest:
            raise CommandError("--to zenodo takes nothing more (set ZENODO_URL or --endpoint)")
        destination = destination_for(name, endpoint=opts["endpoint"])
        if opts["private"] and hasattr(destination, "private"):
            destination.private = True
        export = export_version(run=run, version=opts["export_version"])
        plan = publication_plan(
            export=export, destination=destination, target=rest[0] if rest else ""
        )
        if opts["dry_run"]:
            self.stdout.write(f"dry run, nothing sent: {export.format} v{export.version}")
            for line in plan.lines():
                self.stdout.write(line)
            return
        row = publication_run(export=export, plan=plan, say=self.stdout.write)
        self.stdout.write(f"publication {row.pk}: {row.status} {row.remote_url}")
