from pathlib import Path

from annotation.management.base import ServiceCommand
from pipeline.bison import bison_accuracy, parse_bison_annotations, parse_bison_predictions


class Command(ServiceCommand):
    help = "Score a BISON predictions file against a BISON annotations (export) file."

    def add_arguments(self, parser):
        parser.add_argument("--annotations", required=True)
        parser.add_argument("--predictions", required=True)

    def handle(self, *args, **opts):
        records = parse_bison_annotations(
            Path(opts["annotations"]).read_bytes(), file=opts["annotations"]
        )
        predictions = parse_bison_predictions(
            Path(opts["predictions"]).read_bytes(), file=opts["predictions"]
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
