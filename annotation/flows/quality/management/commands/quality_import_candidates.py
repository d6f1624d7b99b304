from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_items_create,
)
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = (
        "Import models' captions (COCO results format [{image_id, caption}]) as MODEL=FILE "
        "pairs, then make the items to judge (--make-items)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument("models", nargs="*", metavar="MODEL=FILE")
        parser.add_argument("--make-items", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        run = self.run_of(opts["run"], kind=RunKind.QUALITY)
        for spec in opts["models"]:
            model, _, path = spec.partition("=")
            n = quality_candidates_import(run=run, model=model, path=path)
            self.stdout.write(f"{model}: {n} captions")
        if opts["make_items"]:
            self.stdout.write(str(quality_items_create(run=run)))
