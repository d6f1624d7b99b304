from typing import Any

from django.core.management.base import CommandParser

from annotation.management.base import ServiceCommand
from annotation.models import ImageSource
from annotation.services.datasets.dataset_jobs import import_summary
from annotation.services.datasets.datasets import dataset_import


class Command(ServiceCommand):
    help = "Import an official COCO captions JSON file (validated completely before writing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--name", help="dataset name (default: the file name without .json)")
        parser.add_argument(
            "--image-source",
            choices=ImageSource.values,
            default=ImageSource.COCO_URL,
            help="coco_url: each image's coco_url; url_prefix: --image-location + file_name; "
            "local_dir: files in the folder --image-location (under CROWDVL_IMPORT_DIR or "
            "CROWDVL_IMAGE_DIRS), served by this app",
        )
        parser.add_argument("--image-location", default="")
        parser.add_argument(
            "--update-image-source",
            action="store_true",
            help="a dataset imported before from this file takes the image source given here "
            "(refused once one of its batches is published)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        result = dataset_import(
            path=opts["path"],
            name=opts["name"],
            image_source=opts["image_source"],
            image_location=opts["image_location"],
            update_image_source=opts["update_image_source"],
        )
        for warning in result.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        self.stdout.write(
            f"dataset {result.dataset.pk} '{result.dataset.name}' {import_summary(result)}"
            + (
                f", {len(result.skipped_images)} images without captions skipped"
                if result.skipped_images
                else ""
            )
        )
