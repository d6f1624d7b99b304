from annotation.management.base import ServiceCommand
from annotation.models import ImageSource
from annotation.services.datasets import dataset_import


class Command(ServiceCommand):
    help = "Import an official COCO captions JSON file (validated completely before writing)."

    def add_arguments(self, parser):
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

    def handle(self, *args, **opts):
        result = dataset_import(
            path=opts["path"],
            name=opts["name"],
            image_source=opts["image_source"],
            image_location=opts["image_location"],
        )
        for warning in result.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        verb = "imported" if result.created else "already imported, nothing changed:"
        self.stdout.write(
            f"dataset {result.dataset.pk} '{result.dataset.name}' {verb} "
            f"{result.images} images, {result.captions} captions"
            + (
                f", {len(result.skipped_images)} images without captions skipped"
                if result.skipped_images
                else ""
            )
        )
