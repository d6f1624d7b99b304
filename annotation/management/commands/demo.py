"""The whole COCO-BISON pipeline on the bundled sample, with simulated workers."""

import json
import logging
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command

from annotation.crowd import provider_for
from annotation.management.base import ServiceCommand
from annotation.models import Caption, ImageSource, RunKind, Stage
from annotation.selectors.bison import bison_stage_counts
from annotation.services.batches import batch_create, batch_publish
from annotation.services.datasets import dataset_import
from annotation.services.exports import bison_export_start
from annotation.services.pairing import pairing_start
from annotation.services.runs import run_create
from pipeline.baselines import caption_overlap_predictions
from pipeline.bison import bison_accuracy, parse_bison_annotations
from pipeline.simulate import WorkerProfile
from pipeline.text import tokenize

SAMPLE = Path(settings.BASE_DIR) / "data" / "sample" / "coco_captions_val2014.subset.json"


class Command(ServiceCommand):
    help = "Run the COCO-BISON pipeline end to end on the bundled sample with simulated workers."

    def add_arguments(self, parser):
        parser.add_argument("--captions", default=str(SAMPLE), help="COCO captions JSON")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--stage2-workers", type=int, default=12)
        parser.add_argument("--stage3-workers", type=int, default=16)
        parser.add_argument(
            "--accuracy", type=float, default=0.92, help="simulated workers' accuracy"
        )
        parser.add_argument("--vectors", help="FastText .vec/.bin (default: train on the captions)")

    def step(self, text: str) -> None:
        self.t = getattr(self, "t", time.monotonic())
        self.stdout.write(self.style.MIGRATE_HEADING(f"==> {text}"))

    def handle(self, *args, **opts):
        started = time.monotonic()
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("    %(message)s"))
        jobs_log = logging.getLogger("annotation.jobs")
        jobs_log.addHandler(handler)
        jobs_log.setLevel(logging.INFO)
        jobs_log.propagate = False
        try:
            self._demo(opts)
        finally:
            jobs_log.removeHandler(handler)
        self.stdout.write(f"finished in {time.monotonic() - started:.1f} s")

    def _demo(self, opts):
        self.step("database: migrating")
        call_command("migrate", verbosity=0)
        self.step(f"importing {opts['captions']}")
        imported = dataset_import(path=opts["captions"], image_source=ImageSource.COCO_URL)
        dataset = imported.dataset
        self.stdout.write(
            f"    dataset '{dataset.name}': {imported.images} images, {imported.captions} captions"
            + ("" if imported.created else " (already imported, unchanged)")
        )
        run = run_create(
            dataset=dataset,
            kind=RunKind.BISON,
            name="demo",
            config={"seed": opts["seed"], "verifiers": 2},
        )
        self.step(f"run {run.pk} stage 1: FastText nearest-neighbour pairs")
        job = pairing_start(
            run=run, vectors_path=opts["vectors"], seed=opts["seed"], allow_new_dim=True
        )
        self.wait_for_job(job, poll=0.2)

        profile2 = WorkerProfile(accuracy=opts["accuracy"], seconds_per_answer=25.9)
        profile3 = WorkerProfile(accuracy=opts["accuracy"], seconds_per_answer=12.7)
        simulated = provider_for("simulated")

        self.step("stage 2: caption selection, 10 pairs per HIT, simulated workers")
        batch2 = batch_publish(
            batch=batch_create(
                run=run, stage=Stage.BISON_SELECTION, provider="simulated", seed=opts["seed"]
            )
        )
        report = simulated.work(
            batch=batch2, workers=opts["stage2_workers"], profile=profile2, seed=opts["seed"]
        )
        self.stdout.write(
            f"    {batch2.hits.count()} HITs; {report.workers} workers submitted {report.assignments} assignments"
        )

        self.step("stage 3: verification, 2 workers per triple from a disjoint pool")
        batch3 = batch_publish(
            batch=batch_create(
                run=run, stage=Stage.BISON_VERIFICATION, provider="simulated", seed=opts["seed"]
            )
        )
        report = simulated.work(
            batch=batch3, workers=opts["stage3_workers"], profile=profile3, seed=opts["seed"] + 1
        )
        self.stdout.write(
            f"    {batch3.hits.count()} HITs; {report.workers} workers submitted {report.assignments} assignments"
        )

        self.step("export (COCO-BISON format)")
        job = self.wait_for_job(bison_export_start(run=run), poll=0.2)
        path = Path(job.result["path"])

        self.step("BISON evaluation of a text-only baseline on the export")
        records = parse_bison_annotations(path.read_bytes(), file=str(path))
        captions: dict[int, list] = {}
        query_tokens = {}
        for image_id, caption_id, text in Caption.objects.filter(dataset=dataset).values_list(
            "image__coco_id", "coco_id", "text"
        ):
            tokens = tokenize(text)
            captions.setdefault(image_id, []).append((caption_id, tokens))
            query_tokens[caption_id] = tokens
        predictions = caption_overlap_predictions(records, query_tokens, captions)
        pred_path = path.parent / "predictions.text_overlap_baseline.json"
        pred_path.write_text(json.dumps(predictions))
        call_command(
            "bison_evaluate", annotations=str(path), predictions=str(pred_path), stdout=self.stdout
        )
        score = bison_accuracy(
            records, {p["bison_id"]: p["predicted_image_id"] for p in predictions}
        )

        counts = bison_stage_counts(run=run)
        s1, s2, s3 = counts["stage1"], counts["stage2"], counts["stage3"]
        self.step("summary")
        rows = [
            ("images", s1["images"]),
            ("stage 1 pairs", s1["pairs"]),
            (
                "stage 2 triples",
                f"{s2['triples']} ({s2['conversion_percent']}% of {s2['pairs_judged']} judged pairs; paper 91.56%)",
            ),
            (
                "stage 3 verified",
                f"{s3['verified']} ({s3['conversion_percent']}% of {s3['triples_judged']} triples; paper 87.70%)",
            ),
            ("workers stage 2 / 3", f"{s2['workers']} / {s3['workers']} (disjoint)"),
            (
                "median s/annotation",
                f"{s2['median_seconds_per_annotation']} / {s3['median_seconds_per_annotation']} (simulated clock)",
            ),
            ("baseline accuracy", f"{100 * score.accuracy:.2f}% (text overlap, {pred_path.name})"),
            ("export", str(path)),
            ("manifest", str(path.parent / "manifest.json")),
            ("database", str(settings.DATABASES["default"]["NAME"])),
        ]
        width = max(len(k) for k, _ in rows)
        for key, value in rows:
            self.stdout.write(f"    {key.ljust(width)}  {value}")
