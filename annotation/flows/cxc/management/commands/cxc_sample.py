from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.cxc.services.sampling import cxc_sample_start
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = (
        "Indirect sampling of image-image and caption-caption pairs (a Celery job): image pairs "
        "by caption similarity, caption pairs by image similarity from your image embeddings."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument(
            "--image-embeddings", help=".npz with image_ids and image_embeddings (COCO ids)"
        )
        parser.add_argument(
            "--standin-image-embeddings",
            action="store_true",
            help="no image encoder: use the named seeded random stand-in (c2c_isim pairs random)",
        )
        parser.add_argument("--no-wait", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        run = self.run_of(opts["run"], kind=RunKind.CXC)
        job = cxc_sample_start(
            run=run,
            image_embeddings_path=opts["image_embeddings"],
            standin=opts["standin_image_embeddings"],
        )
        if opts["no_wait"]:
            self.stdout.write(f"job {job.pk} queued")
            return
        job = self.wait_for_job(job)
        self.stdout.write(job.message)
        if job.result.get("standin_note"):
            self.stdout.write(self.style.WARNING(f"Note: {job.result['standin_note']}"))
