from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.flows.eccv.services.export import eccv_evaluate
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import Export
from pipeline.errors import InputError


def parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        raise InputError(
            f"must be whole numbers separated by commas, e.g. 1,5,10; got {text!r}", field="--ks"
        ) from None
    if not ks or any(k < 1 or k > 10_000 for k in ks):
        raise InputError(f"each K must be from 1 to 10000, got {text!r}", field="--ks")
    return ks


class Command(ServiceCommand):
    help = (
        "mAP@R, R-Precision and R@1/5/10 of a model's rankings (or embeddings) on an ECCV export."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("export", type=record_id, help="export id")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument(
            "--rankings", help='JSON {"i2t": {image: [captions]}, "t2i": {caption: [images]}}'
        )
        group.add_argument(
            "--embeddings",
            help=".npz with image_ids, image_embeddings, caption_ids, caption_embeddings",
        )
        parser.add_argument("--ks", default="1,5,10", help="the K of R@K, comma-separated")

    def handle(self, *args: Any, **opts: Any) -> None:
        ks = parse_ks(opts["ks"])  # checked before anything is read
        scores = eccv_evaluate(
            export=get_object_or_404(Export, pk=opts["export"]),
            rankings_path=opts["rankings"],
            embeddings_path=opts["embeddings"],
            ks=ks,
        )
        for direction, values in scores.items():
            self.stdout.write(direction + ": " + ", ".join(f"{k} {v}" for k, v in values.items()))
