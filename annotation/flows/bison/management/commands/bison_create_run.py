from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.flows.bison.settings import SETTINGS
from annotation.management.arguments import setting
from annotation.management.base import ServiceCommand
from annotation.models import Dataset, RunKind
from annotation.services.runs.runs import run_create


class Command(ServiceCommand):
    help = "Create a COCO-BISON run on an imported dataset."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", help="dataset name or id")
        parser.add_argument("--name", default="")
        parser.add_argument("--seed", type=setting(SETTINGS, "seed"), default=0)
        parser.add_argument(
            "--verifiers",
            type=setting(SETTINGS, "verifiers"),
            default=2,
            help="stage-3 workers per triple",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        key = opts["dataset"]
        dataset = Dataset.objects.filter(
            **({"pk": int(key)} if key.isdigit() else {"name": key})
        ).first()
        if dataset is None:
            raise CommandError(f"no dataset {key!r}; import one with import_coco")
        run = run_create(
            dataset=dataset,
            kind=RunKind.BISON,
            name=opts["name"],
            config={"seed": opts["seed"], "verifiers": opts["verifiers"]},
        )
        self.stdout.write(f"run {run.pk} created on dataset '{dataset.name}'")
