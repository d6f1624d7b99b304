from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from annotation.management.base import ServiceCommand
from pipeline.bison import bison_accuracy, parse_bison_annotations, parse_bison_predictions
from pipeline.errors import InputError


def read_file(name: str) -> bytes:
    path = Path(name)
    if path.is_dir():
        raise InputError(
            "is a folder; give the BISON annotations file inside a BISON export "
            "(bison_annotations.coco<split>.json), not an export folder",
            file=name,
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None


class Command(ServiceCommand):
    help = "Score a BISON predictions file against a BISON annotations (export) file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--annotations", required=True)
        parser.add_argument("--predictions", required=True)

    def handle(self, *args: Any, **opts: Any) -> None:
        records = parse_bison_annotations(read_file(opts["annotations"]), file=opts["annotations"])
        predictions = parse_bison_predictions(
            read_file(opts["predictions"]), file=opts["predictions"]
        )
        score = bison_accuracy(records, predictions)
        if score.missing:
            self.stderr.write(
                self.style.WARNING(
                    f"{len(score.missing)} records have no prediction (counted wrong)"
                )
            )
        if score.unknown:
            self.stderr.write(
                self.style.WARNING(
                    f"{len(score.unknown)} predictions name unknown bison_ids (ignored)"
                )
            )
        self.stdout.write(
            f"BISON accuracy: {100 * score.accuracy:.2f}% ({score.correct}/{score.total})"
        )
