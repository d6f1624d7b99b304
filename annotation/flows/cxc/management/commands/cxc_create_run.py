from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.flows.cxc.services.sampling import cxc_run_create
from annotation.flows.cxc.settings import DEFAULTS
from annotation.management.base import ServiceCommand
from annotation.models import Dataset


class Command(ServiceCommand):
    help = (
        "Create a Crisscrossed Captions run on an imported dataset. Settings (JSON, --config): "
        + ", ".join(f"{k} (default {v})" for k, v in DEFAULTS.items())
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", help="dataset name")
        parser.add_argument("--name", default="")
        parser.add_argument("--config", default="{}", help='e.g. {"sis_pairs": 500}')

    def handle(self, *args: Any, **opts: Any) -> None:
        dataset = get_object_or_404(Dataset, name=opts["dataset"])
        config = self.json_object(opts["config"], "--config")
        run = cxc_run_create(dataset=dataset, name=opts["name"], config=config)
        self.stdout.write(f"run {run.pk} ({run.kind})")
