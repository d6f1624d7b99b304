import json
from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.quality.services.correlate import quality_correlate
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Kendall tau-b/tau-c between a metric and human judgments (Flickr8k-Expert/CF layouts), "
        "accuracy per category on preferences; the metric from a CSV (image,caption,score) or "
        "computed from embeddings (CLIP-S w=2.5, PAC-S-style w=2.0, reference-based versions)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--expert", help="Flickr8k-Expert layout JSON")
        parser.add_argument("--cf", help="Flickr8k-CF layout JSON")
        parser.add_argument("--preferences", help="the export's quality_preference.csv")
        parser.add_argument("--metric", help="CSV image,caption,score")
        parser.add_argument(
            "--embeddings", help=".npz: image_keys, image_embeddings, texts, text_embeddings"
        )
        parser.add_argument(
            "--references",
            help="JSON image -> reference captions, for the preferences' reference-based "
            "metrics (Pascal-50S: 5 draws of 5 references, averaged)",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of the reference draws")

    def handle(self, *args: Any, **opts: Any) -> None:
        report = quality_correlate(
            expert=opts["expert"],
            cf=opts["cf"],
            preferences=opts["preferences"],
            metric=opts["metric"],
            embeddings=opts["embeddings"],
            references=opts["references"],
            seed=opts["seed"],
        )
        self.stdout.write(json.dumps(report, indent=2))
