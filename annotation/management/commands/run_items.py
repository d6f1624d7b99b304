import json
from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.flow_registry import stage_names
from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import Run
from annotation.selectors.datasets.data_browser import AGREEMENT, GOLD, HELD, item_rows, run_items
from annotation.services.checks import check_run_stage


class Command(ServiceCommand):
    help = (
        "The run's data browser as JSON lines: each item of a stage with its answers (worker "
        "pseudonym, label), aggregate, agreement and open reviews; filtered and paged."
    )

    options_of_fields = {"stage": "--stage"}

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument("--stage", required=True, choices=stage_names())
        parser.add_argument("--agreement", choices=AGREEMENT, default="")
        parser.add_argument("--gold", choices=GOLD, default="")
        parser.add_argument("--held", choices=HELD, default="")
        parser.add_argument("--limit", type=whole(1, 10_000), default=50)
        parser.add_argument("--offset", type=whole(0, 10**9), default=0)

    def handle(self, *args: Any, **opts: Any) -> None:
        run = get_object_or_404(Run, pk=opts["run"])
        check_run_stage(kind=run.kind, stage=opts["stage"])  # another flow's: no items at all
        items = run_items(
            run=run,
            stage=opts["stage"],
            agreement=opts["agreement"],
            gold=opts["gold"],
            held=opts["held"],
        )
        start = opts["offset"]
        page = list(items[start : start + opts["limit"]])
        for row in item_rows(items=page, stage=opts["stage"]):
            record = {
                "item": row.item.pk,
                "kind": row.item.kind,
                "gold": row.gold,
                "answers": [[a.worker, a.label, a.counted] for a in row.answers],
                "aggregate": row.aggregate,
                "agreement": row.agreement,
                "reviews": row.reviews,
            }
            self.stdout.write(json.dumps(record))
