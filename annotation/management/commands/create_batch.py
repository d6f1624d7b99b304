from django.shortcuts import get_object_or_404

from annotation.crowd import provider_for
from annotation.flows import flows
from annotation.management.base import ServiceCommand
from annotation.models import Batch, Run
from annotation.services.batches import batch_create, batch_publish, batch_warnings


def stages() -> dict[str, str]:
    """Every registered flow's stages by their command-line names."""
    return {task.cli_name: task.stage for flow in flows() for task in flow.task_types}


class Command(ServiceCommand):
    help = "Package a stage's waiting items into HITs (with gold items where the task has them) and publish them."

    def add_arguments(self, parser):
        parser.add_argument("run", type=int)
        parser.add_argument("--stage", choices=sorted(stages()), required=True)
        parser.add_argument("--provider", default="local")
        parser.add_argument("--items-per-hit", type=int)
        parser.add_argument("--assignments", type=int, help="workers per HIT")
        parser.add_argument("--reward", default="0.10")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--no-publish", action="store_true")
        parser.add_argument(
            "--no-follow-ups", action="store_true", help="ECCV: skip the rationale questions"
        )
        parser.add_argument(
            "--direction",
            choices=["i2t", "t2i"],
            help="ECCV: one round's direction (the paper: round 1 i2t, round 2 t2i)",
        )
        parser.add_argument(
            "--approval-delay", type=int, help="seconds before unreviewed work is approved"
        )

    def handle(self, *args, **opts):
        run = get_object_or_404(Run, pk=opts["run"])
        batch = batch_create(
            run=run,
            stage=stages()[opts["stage"]],
            provider=opts["provider"],
            items_per_hit=opts["items_per_hit"],
            assignments_per_hit=opts["assignments"],
            reward=opts["reward"],
            seed=opts["seed"],
            options={
                "follow_ups": not opts["no_follow_ups"],
                **({"direction": opts["direction"]} if opts["direction"] else {}),
            },
        )
        if opts["approval_delay"] is not None:
            Batch.objects.filter(pk=batch.pk).update(
                auto_approval_delay_seconds=opts["approval_delay"]
            )
        if not opts["no_publish"]:
            batch = batch_publish(batch=batch)
        self.stdout.write(f"batch {batch.pk}: {batch.hits.count()} HITs, {batch.status}")
        for warning in batch_warnings(batch=batch):
            self.stdout.write(self.style.WARNING(f"Warning: {warning}"))
        url = provider_for(batch.provider).worker_url(batch=batch)
        if url:
            self.stdout.write(f"workers start at {url}")
