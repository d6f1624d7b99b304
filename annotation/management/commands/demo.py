"""Every registered flow end to end on the bundled sample, with simulated workers."""

import logging
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandParser

from annotation.encoders.demo import (
    demo_image_source,
    encoder_demo,
    encoder_demo_arguments,
    encoder_demo_summary,
)
from annotation.flow_registry import DemoContext, flows
from annotation.management.arguments import seed
from annotation.management.base import ServiceCommand
from annotation.models import Run
from annotation.money import symbol
from annotation.selectors.money.pay import min_hourly_pay, run_pay_summary
from annotation.selectors.release.simulated_quality import quality_lines
from annotation.services.datasets.datasets import dataset_import
from annotation.services.runs.projects import DEFAULT_PROJECT, researcher_account_ensure
from pipeline.simulate import POPULATIONS, population_named

SAMPLE = Path(settings.BASE_DIR) / "data" / "sample" / "coco_captions_val2014.subset.json"


class Command(ServiceCommand):
    help = "Run the COCO-BISON pipeline end to end on the bundled sample with simulated workers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--captions", default=str(SAMPLE), help="COCO captions JSON")
        parser.add_argument("--seed", type=seed, default=0)
        parser.add_argument(
            "--population",
            default="uniform-0.9",
            help="simulated workers: " + ", ".join(POPULATIONS) + " or uniform-<accuracy>",
        )
        encoder_demo_arguments(parser)
        for flow in flows():
            if flow.demo_arguments:
                flow.demo_arguments(parser)

    def step(self, text: str) -> None:
        self.t = getattr(self, "t", time.monotonic())
        self.stdout.write(self.style.MIGRATE_HEADING(f"==> {text}"))

    def _pay(self, runs) -> None:  # type: ignore[no-untyped-def]
        """Expected and effective hourly pay of every batch the demo ran (simulated clock)."""
        self.step(
            f"pay per batch (minimum {symbol()}{min_hourly_pay()}/h; simulated workers' clock)"
        )
        for run in runs:
            for row in run_pay_summary(run=run):
                effective = row["effective"]["hourly"] or "-"
                self.stdout.write(
                    f"    run {run.pk} {row['stage']:<20} reward {symbol()}{row['reward']:<6} expected "
                    f"{symbol()}{row['expected']['hourly']}/h ({row['expected']['seconds_per_item']} s/item, "
                    f"{row['expected']['source'][:40]}), effective {symbol()}{effective}/h"
                )

    def handle(self, *args: Any, **opts: Any) -> None:
        started = time.monotonic()
        population_named(opts["population"])  # an unknown name fails before any work
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("    %(message)s"))
        jobs_log = logging.getLogger("annotation.jobs")
        jobs_log.addHandler(handler)
        jobs_log.setLevel(logging.INFO)
        jobs_log.propagate = False
        try:
            self.step("database: migrating")
            call_command("migrate", verbosity=0)
            self.step(f"importing {opts['captions']}")
            imported = dataset_import(
                path=opts["captions"],
                **demo_image_source(captions=opts["captions"], images=opts["images"]),
            )
            self.stdout.write(
                f"    dataset '{imported.dataset.name}': {imported.images} images, "
                f"{imported.captions} captions"
                + ("" if imported.created else " (already imported, unchanged)")
            )
            if imported.image_files is not None:
                self.stdout.write(
                    f"    images from the folder {opts['images']}: {imported.image_files} of "
                    f"{imported.images} files found"
                )
            context = DemoContext(command=self, dataset=imported.dataset, options=opts)
            encoder_demo(context)  # leaves the stored set for the flows, if a model is given
            runs_before = set(Run.objects.values_list("pk", flat=True))
            for flow in flows():
                if flow.demo:
                    flow.demo(context)
            self._pay(Run.objects.exclude(pk__in=runs_before).order_by("pk"))
            encoder_demo_summary(context)
            if context.quality:
                self.step(
                    "quality against the latent truth (pipeline/world.py): measured, its 95% "
                    "interval, and the closed-form expectation (pipeline/expectation.py)"
                )
                for line in quality_lines(context.quality):
                    self.stdout.write(f"    {line}")
            self.step("the console")
            password = researcher_account_ensure(username="demo", project=DEFAULT_PROJECT)
            self.stdout.write(
                "    `make serve`, open http://127.0.0.1:8000/ and sign in as demo with password "
                f"{password} (a new one each demo; a researcher of the {DEFAULT_PROJECT} project)"
            )
        finally:
            jobs_log.removeHandler(handler)
        self.stdout.write(f"finished in {time.monotonic() - started:.1f} s")
