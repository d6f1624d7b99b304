"""The CxC flow's part of `manage.py demo`: indirect sampling, ratings by simulated workers
(gold copied from pairs a first batch rated alike; with gold_source "paper", CxC's own ratings
of the sample images), export with agreement, and a model's correlation with the new ratings
and with CxC's."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.utils import timezone

from annotation.encoders.models import EmbeddingSet
from annotation.flow_registry import DemoContext
from annotation.flows.cxc.services.encoder_sampling import cxc_sample_from_encoder
from annotation.flows.cxc.services.evaluate import cxc_evaluate
from annotation.flows.cxc.services.export import cxc_export_start
from annotation.flows.cxc.services.sampling import cxc_gold_import, cxc_run_create, cxc_sample_start
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.models import Caption, Export, GoldItemKind, Job, Question, Review, Run
from annotation.providers import simulated_crowd
from annotation.services.release.exports import export_scratch_folder
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.gold import ESTABLISHED, gold_source
from annotation.services.work.reviews import assignments_auto_approve, review_decide
from pipeline.embeddings import image_embeddings, train_word_vectors
from pipeline.simulate import WorkerProfile, population_named
from pipeline.text import tokenize

SAMPLE_CXC = Path(settings.BASE_DIR) / "data" / "sample" / "cxc"
# The demo rates a slice of what a real run would (the defaults: 200 of each, all originals).
DEMO_CONFIG = {
    "sis_pairs": 60,
    "sts_pairs": 60,
    "cocaption_pairs": 20,
    "intrasim_pairs": 40,
    "original_pairs": 60,
}
# Pairs of each stage's first (calibration) batch: those its raters agree on become gold.
CALIBRATION_PAIRS = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--skip-cxc", action="store_true", help="leave out the CxC flow")


def _sample_start(ctx: DemoContext, run: Run) -> Job:
    """Sampling with the image-text model's stored set when the demo has one, else with the
    named stand-in for image embeddings."""
    set_id = ctx.options.get("encoder_set")
    if set_id:
        return cxc_sample_from_encoder(run=run, embedding_set=EmbeddingSet.objects.get(pk=set_id))
    return cxc_sample_start(run=run, image_embeddings_path=None, standin=True)


def run_demo(ctx: DemoContext) -> None:
    cmd, dataset, opts = ctx.command, ctx.dataset, ctx.options
    if opts["skip_cxc"]:
        return
    run = cxc_run_create(dataset=dataset, name="demo", config={**DEMO_CONFIG, "seed": opts["seed"]})
    cmd.step(f"CxC run {run.pk}: indirect sampling (demo scale: {DEMO_CONFIG})")
    established = gold_source(run) == ESTABLISHED
    if established:
        cmd.stdout.write(
            "    gold: copies of pairs the stage's first (calibration) batch rated alike; CxC's "
            "published ratings are not shown as gold (anyone could look them up), they only "
            "serve for evaluation below"
        )
    else:
        for stage, name in (
            (CxcStage.SIS, "sis_val"),
            (CxcStage.STS, "sts_val"),
            (CxcStage.SITS, "sits_val"),
        ):
            n = cxc_gold_import(run=run, path=str(SAMPLE_CXC / f"{name}.subset.csv"), stage=stage)
            cmd.stdout.write(f"    {n} gold pairs for {stage} from CxC's {name} ratings")
    job = cmd.wait_for_job(_sample_start(ctx, run))
    cmd.stdout.write(f"    {job.message}")
    similarity = job.result["similarity"]
    if job.result["standin_note"]:
        cmd.stdout.write(f"    note: {job.result['standin_note']}")
    else:
        cmd.stdout.write(
            f"    image similarity: {similarity['image']['model']}; caption similarity: "
            f"{similarity['caption']['model']} ({similarity['caption']['method']})"
        )
        # As CxC: the model gives the image similarity, another encoder the caption one.
        ctx.encoder_uses.append(
            f"CxC run {run.pk}: image similarity (c2c_isim pairs) for sampling; caption "
            f"similarity (i2i_csim pairs) from {similarity['caption']['model']}"
        )
    profile = WorkerProfile(seconds_per_answer=6.0)
    population = population_named(opts["population"])
    parts = [CALIBRATION_PAIRS, None] if established else [None]
    for number, stage in enumerate((CxcStage.SIS, CxcStage.STS, CxcStage.SITS), start=1):
        for part, limit in enumerate(parts):
            batch = batch_publish(
                batch=batch_create(
                    run=run,
                    stage=stage,
                    provider=simulated_crowd().name,
                    seed=opts["seed"] + number + 10 * part,
                    limit=limit,
                )
            )
            report = simulated_crowd().simulate(
                batch=batch, workers=12, profile=profile, population=population, seed=opts["seed"]
            )
            held = list(Review.objects.filter(assignment__hit__batch=batch, status="open"))
            for review in held:  # the demo's reviewer accepts gold misses of one point or two
                review_decide(review=review, approve=True)
            assignments_auto_approve(now=timezone.now() + timedelta(days=365), batch=batch)
            gold = Question.objects.filter(hit__batch=batch, item__kind=GoldItemKind.RATING)
            cmd.stdout.write(
                f"    {stage}: {batch.hits.count()} HITs x {batch.assignments_per_hit} raters, "
                f"{gold.count()} gold questions, {report.assignments} submitted, {len(held)} "
                "held for a gold miss (approved)"
            )
    cmd.step("CxC export: sis/sts/sits CSVs, every rating, agreement")
    job = cmd.wait_for_job(cxc_export_start(run=run))
    export = Export.objects.get(pk=job.result["export"])
    for method, count in export.manifest["pairs_per_sampling_method"].items():
        cmd.stdout.write(f"    {method.ljust(16)} {count} pairs")
    for stage, agreement in export.manifest["agreement"].items():
        cmd.stdout.write(
            f"    {stage.ljust(9)} alpha {agreement['krippendorff_alpha_interval']}  "
            f"mean pairwise Spearman {agreement['mean_pairwise_spearman']}  "
            f"raters/pair {agreement['raters_per_pair']['median']}"
        )
    cmd.stdout.write(f"    export: {export.path}")
    cmd.step("a FastText model (mean of caption vectors as the image) against the ratings")
    model = export_scratch_folder(run) / "demo_fasttext_model.npz"
    _fasttext_model(dataset, model, seed=opts["seed"])
    for label, folder, split in (
        ("this export", export.path, None),
        ("CxC's own val ratings", SAMPLE_CXC, "val"),
    ):
        try:
            result = cxc_evaluate(folder=str(folder), embeddings=str(model), draws=200, split=split)
        except Exception as exc:  # noqa: BLE001 - the demo reports and goes on
            cmd.stdout.write(f"    {label}: {exc}")
            continue
        for task, values in result["tasks"].items():
            low, high = values["spearman_95ci"]
            cmd.stdout.write(
                f"    {label:<22} {task:<4} rho {values['spearman']:+.3f} "
                f"[{low:+.3f}, {high:+.3f}]  tau-b {values['kendall_tau_b']:+.3f}  "
                f"({values['pairs']} pairs)"
            )


def _fasttext_model(dataset, path: Path, *, seed: int) -> None:  # type: ignore[no-untyped-def]
    rows = list(
        Caption.objects.filter(dataset=dataset)
        .order_by("coco_id")
        .values_list("coco_id", "image__coco_id", "text")
    )
    tokens = [tokenize(t) for _, _, t in rows]
    vectors = train_word_vectors(tokens, dim=100, epochs=50, seed=seed)
    caps, _ = image_embeddings(tokens, vectors)
    owners = np.asarray([o for _, o, _ in rows])
    images = np.unique(owners)
    means = np.stack([caps[owners == i].mean(axis=0) for i in images])
    np.savez(
        path,
        image_ids=images.astype(np.int64),
        image_embeddings=means.astype(np.float32),
        caption_ids=np.asarray([c for c, _, _ in rows], dtype=np.int64),
        caption_embeddings=caps.astype(np.float32),
    )
