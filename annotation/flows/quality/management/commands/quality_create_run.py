from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.flows.quality.services.candidates import quality_run_create
from annotation.flows.quality.settings import DEFAULTS
from annotation.management.base import ServiceCommand
from annotation.models import Dataset


class Command(ServiceCommand):
    help = (
        "Create a caption-quality run (settings JSON: "
        + ", ".join(f"{k} (default {v})" for k, v in DEFAULTS.items())
        + "; scale: expert 1-4 or composite 1-5)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", help="dataset name (the images and their references)")
        parser.add_argument("--name", default="")
        parser.add_argument("--config", default="{}")

    def handle(self, *args: Any, **opts: Any) -> None:
        dataset = get_object_or_404(Dataset, name=opts["dataset"])
        config = self.json_object(opts["config"], "--config")
        run = quality_run_create(dataset=dataset, name=opts["name"], config=config)
        self.stdout.write(f"run {run.pk} ({run.kind})")
