from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.eccv.models import AnnotatorKind
from annotation.flows.eccv.services.annotators import eccv_annotator_add
from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = (
        "Add a machine annotator to an ECCV run: built-in 'fasttext' or 'minilm' (optional extra), "
        "or imported 'embeddings' (.npz: image_ids, image_embeddings, caption_ids, caption_embeddings) "
        'or \'rankings\' (.json: {"i2t": {image: [captions]}, "t2i": {caption: [images]}}).'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument("name")
        parser.add_argument("--kind", choices=AnnotatorKind.values, required=True)
        parser.add_argument(
            "--file", default="", help="the .npz or .json file of an imported model"
        )
        parser.add_argument("--dim", type=whole(2, 2048), help="fasttext: vector dimension")

    def handle(self, *args: Any, **opts: Any) -> None:
        params = {"dim": opts["dim"]} if opts["dim"] else {}
        annotator = eccv_annotator_add(
            run=self.run_of(opts["run"], kind=RunKind.ECCV),
            name=opts["name"],
            kind=opts["kind"],
            source=opts["file"],
            params=params,
        )
        self.stdout.write(f"annotator {annotator.name} ({annotator.kind}) added")
