"""The whole COCO-BISON pipeline on the bundled sample, with simulated workers."""

import json
import logging
import sys
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from annotation.crowd import provider_for
from annotation.management.base import ServiceCommand
from annotation.models import Caption, Export, ImageSource, RunKind, Stage
from annotation.selectors.bison import bison_stage_counts
from annotation.services.batches import batch_create, batch_publish
from annotation.services.datasets import dataset_import
from annotation.services.exports import bison_export_start
from annotation.services.pairing import pairing_start
from annotation.services.runs import run_create
from pipeline.baselines import caption_overlap_predictions
from pipeline.bison import bison_accuracy, parse_bison_annotations
from pipeline.errors import InputError
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
        parser.add_argument("--skip-eccv", action="store_true", help="run the BISON flow only")
        parser.add_argument(
            "--eccv-queries", type=int, default=60, help="ECCV image and caption queries each"
        )
        parser.add_argument(
            "--gold-accuracy",
            type=float,
            default=0.9,
            help="simulated workers' accuracy on gold items",
        )

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
            if not opts["skip_eccv"]:
                self._eccv_demo(opts)
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

    def _eccv_demo(self, opts):
        from annotation.models import Dataset, Review
        from annotation.services.eccv import (
            eccv_annotator_add,
            eccv_cxc_import,
            eccv_propose_start,
            eccv_run_create,
        )
        from annotation.services.eccv_export import eccv_evaluate_annotator, eccv_export_start
        from annotation.services.reviews import assignments_auto_approve, review_decide

        dataset = Dataset.objects.get(name=Path(opts["captions"]).stem)
        n = opts["eccv_queries"]
        run = eccv_run_create(
            dataset=dataset,
            name="demo",
            config={
                "image_queries": n,
                "caption_queries": n,
                "k": 5,
                "models": 2,
                "seed": opts["seed"],
            },
        )
        self.step(f"ECCV run {run.pk}: {n} image and {n} caption queries, 2 built-in annotators")
        eccv_annotator_add(
            run=run,
            name="fasttext-100d",
            kind="fasttext",
            params={"dim": 100, "seed": opts["seed"]},
        )
        try:
            eccv_annotator_add(run=run, name="minilm", kind="minilm")
        except InputError as exc:
            self.stdout.write(
                f"    MiniLM skipped ({exc}); using a second FastText annotator instead"
            )
            eccv_annotator_add(
                run=run,
                name="fasttext-50d",
                kind="fasttext",
                params={"dim": 50, "seed": opts["seed"] + 1},
            )
        job = self.wait_for_job(eccv_propose_start(run=run), poll=0.2)
        self.stdout.write(
            f"    {job.result['proposed']} proposals -> {job.result['candidates']} candidate pairs"
        )
        cxc = Path(settings.BASE_DIR) / "data" / "sample" / "cxc" / "sits_test.subset.csv"
        merged = eccv_cxc_import(run=run, path=str(cxc), skip_unknown=True)
        self.stdout.write(f"    {merged} CxC positives (agg_score >= 3) merged as a further source")

        self.step("judgments: 20 pairs per HIT (18 candidates + 2 gold), simulated workers")
        profile = WorkerProfile(
            accuracy=opts["accuracy"], gold_accuracy=opts["gold_accuracy"], seconds_per_answer=8.0
        )
        batch = batch_publish(
            batch=batch_create(
                run=run, stage=Stage.ECCV_JUDGMENT, provider="simulated", seed=opts["seed"]
            )
        )
        simulated = provider_for("simulated")
        report = simulated.work(batch=batch, workers=10, profile=profile, seed=opts["seed"])
        held = Review.objects.filter(assignment__hit__batch=batch, status="open")
        self.stdout.write(
            f"    {batch.hits.count()} HITs; {report.assignments} submitted; {held.count()} held for review (failed gold)"
        )
        # The demo's reviewer rejects work that failed both gold items and approves the rest.
        rejected = 0
        for review in held:
            reject = len(review.reasons) >= 2
            review_decide(
                review=review,
                approve=not reject,
                feedback="Both gold items were answered wrongly." if reject else "",
            )
            rejected += reject
        if rejected:
            again = simulated.work(
                batch=batch,
                workers=4,
                profile=profile,
                seed=opts["seed"] + 7,
                id_prefix=f"sim-r{run.pk}-redo",
            )
            self.stdout.write(
                f"    {rejected} rejected and judged again by other workers ({again.assignments} HITs)"
            )
        approved = assignments_auto_approve(now=timezone.now() + timedelta(days=365), batch=batch)
        self.stdout.write(f"    {approved} assignments approved after the approval delay")

        self.step("ECCV export and the built-in models' metrics on it")
        job = self.wait_for_job(eccv_export_start(run=run), poll=0.2)
        export = Export.objects.get(pk=job.result["export"])
        counts = job.result["counts"]
        for key in (
            "pairs_proposed",
            "pairs_after_merging_duplicates",
            "pairs_judged",
            "i2t_positive_links",
            "positives_per_image_query",
            "original_positives_per_image_query",
            "positives_per_caption_query",
            "original_positives_per_caption_query",
            "cxc_links",
        ):
            self.stdout.write(f"    {key.ljust(38)} {counts[key]}")
        for annotator in run.annotators.order_by("name"):
            scores = eccv_evaluate_annotator(export=export, annotator=annotator)
            for direction, values in scores.items():
                self.stdout.write(
                    f"    {annotator.name:<14} {direction}  "
                    + "  ".join(f"{k} {v}" for k, v in values.items() if k != "queries")
                )
        self.stdout.write(f"    export: {export.path}")
