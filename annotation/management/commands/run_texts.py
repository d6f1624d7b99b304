import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Run
from annotation.selectors.work.run_texts import run_texts
from annotation.services.runs.run_texts import run_texts_set


class Command(ServiceCommand):
    help = (
        "Show a run's texts for workers (consent and each stage's instructions, with their "
        "versions) as JSON, or set them: --consent FILE (a new version: workers are asked "
        "again), --stage STAGE --instructions FILE; --default instead of a file goes back to "
        "the default text (the papers' instructions)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument("--consent", metavar="FILE", help="a UTF-8 text file")
        parser.add_argument("--stage", help="the stage whose --instructions are given")
        parser.add_argument("--instructions", metavar="FILE", help="a UTF-8 text file")
        parser.add_argument(
            "--default", action="store_true", help="with --consent - or --instructions -"
        )

    @staticmethod
    def _text(path: str, default: bool) -> str:
        if path == "-" and default:
            return ""
        try:
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: {exc}") from None

    def handle(self, *args: Any, **opts: Any) -> None:
        run = get_object_or_404(Run, pk=opts["run"])
        if opts["instructions"] and not opts["stage"]:
            raise CommandError("--instructions needs --stage")
        consent = self._text(opts["consent"], opts["default"]) if opts["consent"] else None
        instructions = (
            {opts["stage"]: self._text(opts["instructions"], opts["default"])}
            if opts["instructions"]
            else None
        )
        run_texts_set(run=run, consent=consent, instructions=instructions)
        self.stdout.write(json.dumps(run_texts(run), indent=2))
