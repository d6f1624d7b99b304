from django.shortcuts import get_object_or_404

from annotation.crowd import provider_for
from annotation.management.base import ServiceCommand
from annotation.models import Run, Stage
from annotation.services.batches import batch_create, batch_publish

STAGES = {"selection": Stage.BISON_SELECTION, "verification": Stage.BISON_VERIFICATION}


class Command(ServiceCommand):
    help = "Package a BISON stage's waiting items into HITs and publish them."

    def add_arguments(self, parser):
        parser.add_argument("run", type=int)
        parser.add_argument("--stage", choices=sorted(STAGES), required=True)
        parser.add_argument("--provider", default="local")
        parser.add_argument("--items-per-hit", type=int)
        parser.add_argument("--assignments", type=int, help="workers per HIT")
        parser.add_argument("--reward", default="0.10")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--no-publish", action="store_true")

    def handle(self, *args, **opts):
        run = get_object_or_404(Run, pk=opts["run"])
        batch = batch_create(
            run=run,
            stage=STAGES[opts["stage"]],
            provider=opts["provider"],
            items_per_hit=opts["items_per_hit"],
            assignments_per_hit=opts["assignments"],
            reward=opts["reward"],
            seed=opts["seed"],
        )
        if not opts["no_publish"]:
            batch = batch_publish(batch=batch)
        self.stdout.write(f"batch {batch.pk}: {batch.hits.count()} HITs, {batch.status}")
        url = provider_for(batch.provider).worker_url(batch=batch)
        if url:
            self.stdout.write(f"workers start at {url}")
