"""Each flow on the bundled sample, once per simulated worker population, scored against the
latent world with the closed-form expectation beside each measurement; then every flow's answer
rules and aggregations (BISON, ECCV Caption, CxC, caption quality) by Monte Carlo over seeds
(`pipeline/flow_quality.py`), with 95 % intervals over seeds."""

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import CommandError, call_command
from django.core.management.base import CommandParser

from annotation.flow_registry import DemoContext, flows
from annotation.management.arguments import seed, whole, writable_file
from annotation.management.base import ServiceCommand
from annotation.models import ImageSource
from annotation.selectors.release.simulated_quality import QualityRow, quality_lines
from annotation.services.datasets.datasets import dataset_import
from pipeline.flow_quality import figure_lines, flow_figures
from pipeline.simulate import POPULATIONS, population_named

SAMPLE = Path(settings.BASE_DIR) / "data" / "sample" / "coco_captions_val2014.subset.json"
DEFAULT = "realistic,held-out,uniform-0.9,mixed"


class Command(ServiceCommand):
    help = (
        "Run the simulated flows for a sweep of worker populations and print precision and "
        "recall of each export against the latent truth, with the closed-form expectation."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--populations",
            default=DEFAULT,
            help=f"comma-separated: {', '.join(POPULATIONS)}, uniform-<accuracy>",
        )
        parser.add_argument(
            "--flows", default="bison,eccv,cxc,quality", help="comma-separated flow names"
        )
        parser.add_argument("--captions", default=str(SAMPLE), help="COCO captions JSON")
        parser.add_argument("--seed", type=seed, default=0)
        parser.add_argument("--eccv-queries", type=whole(1, 100_000), default=60)
        parser.add_argument(
            "--json", dest="json_path", type=writable_file, help="also write the rows here"
        )
        parser.add_argument(
            "--bison-config",
            default="{}",
            help='settings for the BISON runs, e.g. \'{"aggregation": "majority", "verifiers": 3}\'',
        )
        parser.add_argument(
            "--eccv-config",
            default="{}",
            help='settings for the ECCV runs, e.g. \'{"aggregation": "dawid_skene", '
            '"judgments_per_pair": 3}\'',
        )
        parser.add_argument("--vectors", help="FastText .vec/.bin for BISON stage 1")
        parser.add_argument(
            "--model-seeds",
            type=whole(0, 10_000),
            default=10,
            help="seeds of the Monte Carlo of every flow's rules (0: leave it out)",
        )
        parser.add_argument(
            "--model-items",
            type=whole(1, 10_000_000),
            default=1500,
            help="BISON/ECCV items per seed (CxC, caption quality: a third)",
        )
        parser.add_argument(
            "--model-only", action="store_true", help="only the Monte Carlo, no run of the sample"
        )

    def step(self, text: str) -> None:
        self.stdout.write(self.style.MIGRATE_HEADING(f"==> {text}"))

    def handle(self, *args: Any, **opts: Any) -> None:
        started = time.monotonic()
        populations = [population_named(p.strip()) for p in opts["populations"].split(",")]
        for flow in ("bison", "eccv"):
            opts[f"{flow}_config"] = self.json_object(opts[f"{flow}_config"], f"--{flow}-config")
        by_name = {f.name: f.quality_sweep for f in flows() if f.quality_sweep}
        wanted = [n.strip() for n in opts["flows"].split(",")]
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            raise CommandError(
                f"no quality sweep for flow {unknown[0]!r} (known: {', '.join(by_name)})"
            )
        rows: list[QualityRow] = []
        if not opts["model_only"]:
            call_command("migrate", verbosity=0)
            imported = dataset_import(path=opts["captions"], image_source=ImageSource.COCO_URL)
            context = DemoContext(command=self, dataset=imported.dataset, options=opts)
            for population in populations:
                for name in wanted:
                    self.step(f"{name}: population {population.name} ({population.describe()})")
                    rows.extend(by_name[name](context, population))
            self.step("quality against the latent truth (95% Wilson interval; closed form)")
            for line in quality_lines(rows):
                self.stdout.write(f"    {line}")
        figures = []
        if opts["model_seeds"] > 0:
            for population in populations:
                figures += flow_figures(
                    population,
                    seeds=opts["model_seeds"],
                    first_seed=opts["seed"],
                    items=opts["model_items"],
                )
            self.step(
                f"every flow's rules by Monte Carlo ({opts['model_seeds']} seeds of "
                f"{opts['model_items']} items; mean and 95% t interval over seeds)"
            )
            for line in figure_lines(figures):
                self.stdout.write(f"    {line}")
        if opts["json_path"]:
            document = {
                "runs": [r.as_dict() for r in rows],
                "model": [asdict(f) for f in figures],
            }
            Path(opts["json_path"]).write_text(json.dumps(document, indent=1) + "\n")
        self.stdout.write(f"finished in {time.monotonic() - started:.1f} s")
