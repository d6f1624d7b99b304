from typing import Any

from django.core.management.base import CommandParser

from annotation.management.base import ServiceCommand
from annotation.models import ImageSource
from annotation.services.datasets.datasets import dataset_import_flickr8k


class Command(ServiceCommand):
    help = (
        "Import Flickr8k's token file (<image>#<n><TAB>caption) as a dataset: the references "
        "of caption-quality runs on Flickr8k images."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("token_file")
        parser.add_argument("--name", default="flickr8k")
        parser.add_argument(
            "--image-source",
            choices=[ImageSource.LOCAL_DIR, ImageSource.URL_PREFIX],
            default=ImageSource.LOCAL_DIR,
        )
        parser.add_argument("--image-location", required=True, help="folder or URL prefix")

    def handle(self, *args: Any, **opts: Any) -> None:
        result = dataset_import_flickr8k(
            path=opts["token_file"],
            name=opts["name"],
            image_source=opts["image_source"],
            image_location=opts["image_location"],
        )
        self.stdout.write(
            f"dataset {result.dataset.name!r}: {result.images} images, {result.captions} captions"
        )
