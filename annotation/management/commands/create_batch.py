from typing import Any

from django.conf import settings
from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.flow_registry import flows
from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import Run
from annotation.providers import provider_for
from annotation.providers.base import ASSIGNMENT_DURATION_RANGE, AUTO_APPROVAL_RANGE, LIFETIME_RANGE
from annotation.selectors.datasets.image_availability import batch_images_check
from annotation.selectors.money.adaptive_cost import batch_adaptive_cost
from annotation.services.checks import FIRST_CLAIM_MIN, MAX_PER_HIT
from annotation.services.runs.batches import batch_create, batch_publish, batch_warnings


def stages() -> dict[str, str]:
    """Every registered flow's stages by their command-line names."""
    return {task.cli_name: task.stage for flow in flows() for task in flow.task_types}


class Command(ServiceCommand):
    help = "Package a stage's waiting items into HITs (with gold items where the task has them) and publish them."

    # The service's field names, as the options that give them.
    options_of_fields = {
        "stage": "--stage",
        "items_per_hit": "--items-per-hit",
        "assignments_per_hit": "--assignments",
        "limit": "--limit",
        "reward": "--reward",
        "seed": "--seed",
        "lifetime_seconds": "--lifetime",
        "assignment_duration_seconds": "--duration",
        "auto_approval_delay_seconds": "--approval-delay",
        "options.first_claim_seconds": "--first-claim-seconds",
        "provider": "--provider",
        "direction": "--direction",
    }

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument("--stage", choices=sorted(stages()), required=True)
        parser.add_argument("--provider", default=settings.CROWDVL_DEFAULT_PROVIDER)
        parser.add_argument("--items-per-hit", type=whole(1, MAX_PER_HIT))
        parser.add_argument("--assignments", type=whole(1, MAX_PER_HIT), help="workers per HIT")
        parser.add_argument(
            "--limit",
            type=whole(1, 2**31 - 1),
            help="at most this many waiting items (e.g. a stage's first, calibration batch)",
        )
        parser.add_argument(
            "--reward",
            help="dollars per HIT (default: the paper's, or the minimum hourly pay at the "
            "expected time)",
        )
        parser.add_argument(
            "--allow-low-pay",
            action="store_true",
            help="publish at MTurk below CROWDVL_MIN_HOURLY_PAY",
        )
        parser.add_argument("--seed", type=whole(-(2**31), 2**31 - 1), default=0)
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
            "--more-judgments",
            action="store_true",
            help="adaptive runs (ECCV, CxC, caption-quality ratings and preferences): a "
            "follow-up batch of the judged items still too uncertain",
        )
        parser.add_argument(
            "--relax-image-disjointness",
            action="store_true",
            help="BISON stage 3, a trusted pool only: a worker may see an image again in "
            "another HIT (see the batch page for the cheating risk)",
        )
        parser.add_argument(
            "--approval-delay",
            type=whole(*AUTO_APPROVAL_RANGE),
            help="seconds before unreviewed work is approved",
        )
        parser.add_argument(
            "--lifetime",
            type=whole(*LIFETIME_RANGE),
            default=7 * 24 * 3600,
            help="seconds the HITs stay open",
        )
        parser.add_argument(
            "--duration",
            type=whole(*ASSIGNMENT_DURATION_RANGE),
            default=3600,
            help="seconds a worker has for one HIT",
        )
        parser.add_argument(
            "--skip-pilot",
            action="store_true",
            help="MTurk production without a sandbox pilot of this stage first",
        )
        parser.add_argument(
            "--first-claim-seconds",
            type=whole(FIRST_CLAIM_MIN, ASSIGNMENT_DURATION_RANGE[1]),
            help="local: how long a HIT is held for a worker with nothing submitted yet",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        run = get_object_or_404(Run, pk=opts["run"])
        batch = batch_create(
            run=run,
            stage=stages()[opts["stage"]],
            provider=opts["provider"],
            items_per_hit=opts["items_per_hit"],
            assignments_per_hit=opts["assignments"],
            limit=opts["limit"],
            reward=opts["reward"],
            seed=opts["seed"],
            options={
                "follow_ups": not opts["no_follow_ups"],
                **({"direction": opts["direction"]} if opts["direction"] else {}),
                **({"skip_pilot": True} if opts["skip_pilot"] else {}),
                **({"more_judgments": True} if opts["more_judgments"] else {}),
                **({"allow_low_pay": True} if opts["allow_low_pay"] else {}),
                **({"relax_image_disjointness": True} if opts["relax_image_disjointness"] else {}),
                **(
                    {"first_claim_seconds": opts["first_claim_seconds"]}
                    if opts["first_claim_seconds"] is not None
                    else {}
                ),
            },
            lifetime_seconds=opts["lifetime"],
            assignment_duration_seconds=opts["duration"],
            auto_approval_delay_seconds=opts["approval_delay"],
        )
        if not opts["no_publish"]:
            batch_images_check(batch=batch)  # as the console and the API: no grey boxes
            batch = batch_publish(batch=batch)
        self.stdout.write(f"batch {batch.pk}: {batch.hits.count()} HITs, {batch.status}")
        adaptive = batch_adaptive_cost(batch=batch)
        if adaptive is not None:  # as the batch page: the whole adaptive run's range
            j, c = adaptive.judgments, adaptive.cost
            self.stdout.write(
                f"adaptive redundancy, {adaptive.items} items over all rounds: minimum "
                f"{j['minimum']} judgments ({c['minimum']}), expected {j['expected']} "
                f"({j['expected_low']}-{j['expected_high']}; {c['expected']}), maximum "
                f"{j['maximum']} ({c['maximum']}); expected: {adaptive.source}"
            )
        for warning in batch_warnings(batch=batch):
            self.stdout.write(self.style.WARNING(f"Warning: {warning}"))
        url = provider_for(batch.provider).worker_url(batch=batch)
        if url:
            self.stdout.write(f"workers start at {url}")
        hint = provider_for(batch.provider).launch_hint(batch=batch)
        if hint:
            self.stdout.write(hint)
