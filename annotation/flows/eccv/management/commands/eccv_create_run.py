from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.flows.eccv.services.runs import eccv_run_create
from annotation.flows.eccv.settings import SETTINGS, eccv_settings
from annotation.management.arguments import setting
from annotation.management.base import ServiceCommand
from annotation.models import Dataset


class Command(ServiceCommand):
    help = "Create an ECCV Caption run: a seeded sample of image and caption queries over the whole gallery."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", help="dataset name or id")
        parser.add_argument("--name", default="")
        parser.add_argument("--image-queries", type=setting(SETTINGS, "image_queries"), default=100)
        parser.add_argument(
            "--caption-queries", type=setting(SETTINGS, "caption_queries"), default=100
        )
        parser.add_argument(
            "--k",
            type=setting(SETTINGS, "k"),
            default=5,
            help="top-k proposals per model and query",
        )
        parser.add_argument(
            "--models",
            type=setting(SETTINGS, "models"),
            default=2,
            help="how many annotators the run needs",
        )
        parser.add_argument("--seed", type=setting(SETTINGS, "seed"), default=0)
        parser.add_argument(
            "--exclusions", help="JSON of excluded captions/images (default: the paper's list)"
        )
        parser.add_argument("--cxc-threshold", type=setting(SETTINGS, "cxc_threshold"), default=3.0)
        parser.add_argument(
            "--image-query-set",
            type=setting(SETTINGS, "image_query_set"),
            help="id of a stored embedding set: image queries only from the images it encoded",
        )
        parser.add_argument(
            "--split",
            help="JSON of image ids limiting queries and gallery (the paper: "
            "data/eccv/coco_5k_test_image_ids.json, the COCO 5k test split)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        key = opts["dataset"]
        dataset = Dataset.objects.filter(
            **({"pk": int(key)} if key.isdigit() else {"name": key})
        ).first()
        if dataset is None:
            raise CommandError(f"no dataset {key!r}; import one with import_coco")
        optional = {
            "exclusions": opts["exclusions"] or None,
            "split": opts["split"] or None,
            "image_query_set": opts["image_query_set"],
        }
        config = {
            "image_queries": opts["image_queries"],
            "caption_queries": opts["caption_queries"],
            "k": opts["k"],
            "models": opts["models"],
            "seed": opts["seed"],
            "cxc_threshold": opts["cxc_threshold"],
            **{key: value for key, value in optional.items() if value is not None},
        }
        run = eccv_run_create(dataset=dataset, name=opts["name"], config=config)
        settings = eccv_settings(run)
        self.stdout.write(
            f"run {run.pk}: {len(settings.query_images)} image and "
            f"{len(settings.query_captions)} caption queries"
            + (
                f" from a gallery of {len(settings.gallery_images)} split images"
                if settings.gallery_images is not None
                else ""
            )
        )
