"""The caption-quality flow's part of `manage.py demo`: two stand-in "models" caption the
sample images, simulated workers rate, judge and compare the captions, the export is written
in the Flickr8k layouts, and a reference metric (sentence BLEU, when sacrebleu is installed;
else word overlap) is correlated with the judgments. The judgments are simulated from a latent
quality that ignores the words (`annotation/flows/quality/simulate.py`): the demo prints that the
correlation is no evidence about the metric."""

from __future__ import annotations

import argparse
import csv
import json
import random
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from annotation.encoders.models import EmbeddingSet
from annotation.encoders.selectors import embedding_set_readable_images
from annotation.errors import ServiceError
from annotation.flow_registry import DemoContext
from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_items_create,
    quality_run_create,
)
from annotation.flows.quality.services.correlate import quality_correlate
from annotation.flows.quality.services.encoder_scores import quality_encoder_scores
from annotation.flows.quality.services.export import CF_FILE, EXPERT_FILE, quality_export_start
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import GOLD_KINDS, Caption, Export, Question, Review
from annotation.providers import simulated_crowd
from annotation.services.release.exports import export_scratch_folder
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.gold import ESTABLISHED, gold_source
from annotation.services.work.reviews import assignments_auto_approve, review_decide
from pipeline.errors import InputError
from pipeline.flickr8k import load_derived
from pipeline.simulate import WorkerProfile, population_named
from pipeline.text import tokenize

IMAGES = 30  # images of the sample the demo's models caption
CALIBRATION_ITEMS = 20  # each stage's first batch: its agreed items become gold


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--skip-quality", action="store_true", help="leave out caption judgments")


def stand_in_models(  # type: ignore[no-untyped-def]
    dataset, folder: Path, seed: int, among: list[int] | None = None
) -> dict[str, Path]:
    """Two stand-in captioners: "copycat" returns one of the image's own captions with a few
    words dropped; "shuffler" returns another image's caption half the time. `among` (COCO
    ids): the images to caption, e.g. those the demo's image-text model could read."""
    rng = random.Random(seed)
    images = list(dataset.images.order_by("coco_id"))
    if among is not None:
        readable = set(among)
        images = [image for image in images if image.coco_id in readable]
    images = images[:IMAGES]
    own = {i.pk: list(Caption.objects.filter(image=i).order_by("coco_id")) for i in images}
    out = {}
    for name in ("copycat", "shuffler"):
        rows = []
        for image in images:
            if name == "copycat":
                words = tokenize(rng.choice(own[image.pk]).text)
                kept = [w for w in words if rng.random() > 0.2] or words
                text = " ".join(kept)
            else:
                donor = image if rng.random() < 0.5 else rng.choice(images)
                text = rng.choice(own[donor.pk]).text
            rows.append({"image_id": image.coco_id, "caption": text})
        path = folder / f"{name}_results.json"
        path.write_text(json.dumps(rows))
        out[name] = path
    return out


def run_demo(ctx: DemoContext) -> None:
    cmd, dataset, opts = ctx.command, ctx.dataset, ctx.options
    if opts["skip_quality"]:
        return
    run = quality_run_create(dataset=dataset, name="demo", config={"seed": opts["seed"]})
    cmd.step(f"caption-quality run {run.pk}: two stand-in captioners on {IMAGES} images")
    folder = Path(settings.MEDIA_ROOT) / "demo-quality"
    folder.mkdir(parents=True, exist_ok=True)
    among = None
    if opts.get("encoder_set"):
        among = embedding_set_readable_images(
            embedding_set=EmbeddingSet.objects.get(pk=opts["encoder_set"])
        )
        if among is not None:
            cmd.stdout.write(
                f"    images drawn from the {len(among)} the image-text model could read, so it "
                "scores every candidate"
            )
    for model, path in stand_in_models(dataset, folder, opts["seed"], among).items():
        n = quality_candidates_import(run=run, model=model, path=str(path))
        cmd.stdout.write(f"    {n} {model} captions imported (COCO results format)")
    counts = quality_items_create(run=run)
    cmd.stdout.write(
        f"    {counts['candidates']} captions to rate; {counts['pairs']} preference pairs "
        f"(HC {counts['HC']}, HI {counts['HI']}, HM {counts['HM']}, MM {counts['MM']})"
    )
    profile = WorkerProfile(seconds_per_answer=5.0)
    population = population_named(opts["population"])
    established = gold_source(run) == ESTABLISHED
    if established:
        cmd.stdout.write(
            f"    gold: each stage's first {CALIBRATION_ITEMS} items are a calibration batch; "
            "those its workers judged alike are copied as one gold question per later HIT"
        )
    # The papers' counts: 3 experts, >= 3 yes/no votes, 48 preferences (the demo asks 9).
    for stage, workers, per_hit in (
        (QualityStage.RATING, 3, 3),
        (QualityStage.BINARY, 3, 3),
        (QualityStage.PREFERENCE, 9, 9),
    ):
        # Nobody meets a gold copy of an item they judged: the later batches need workers
        # beyond the calibration's.
        team = max(workers, per_hit) + 3 + (per_hit if established else 0)
        for limit in [CALIBRATION_ITEMS, None] if established else [None]:
            try:
                created = batch_create(
                    run=run,
                    stage=stage,
                    provider=simulated_crowd().name,
                    assignments_per_hit=per_hit,
                    limit=limit,
                )
            except ServiceError as exc:  # a few images: the calibration batch took them all
                cmd.stdout.write(f"    {stage}: nothing left to judge ({exc})")
                continue
            batch = batch_publish(batch=created)
            report = simulated_crowd().simulate(
                batch=batch, workers=team, profile=profile, population=population, seed=opts["seed"]
            )
            held = list(Review.objects.filter(assignment__hit__batch=batch, status="open"))
            for review in held:  # the demo's reviewer accepts every gold miss
                review_decide(review=review, approve=True)
            assignments_auto_approve(now=timezone.now() + timedelta(days=365), batch=batch)
            gold = Question.objects.filter(hit__batch=batch, item__kind__in=GOLD_KINDS).count()
            cmd.stdout.write(
                f"    {stage}: {batch.hits.count()} HITs x {per_hit} workers, {gold} gold "
                f"questions, {report.assignments} submitted, {len(held)} held for a gold miss "
                "(approved)"
            )
    job = cmd.wait_for_job(quality_export_start(run=run))
    export = Export.objects.get(pk=job.result["export"])
    for stage, values in export.manifest["agreement"].items():
        cmd.stdout.write(f"    {stage.ljust(19)} {values}")
    cmd.stdout.write(f"    export: {export.path}")
    cmd.step("a reference metric against the judgments (Kendall tau-b / tau-c)")
    base = Path(export.path)
    metric = export_scratch_folder(run) / "demo_metric.csv"
    rows = load_derived(base / EXPERT_FILE) + load_derived(base / CF_FILE)
    with metric.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image", "caption", "score"])
        for j in rows:
            writer.writerow([j.image_id, j.caption, _reference_score(j.caption, j.references)])
    result = quality_correlate(
        expert=str(base / EXPERT_FILE), cf=str(base / CF_FILE), metric=str(metric)
    )
    for layout, values in result.items():
        for name, taus in values["metrics"].items():
            cmd.stdout.write(
                f"    {layout:<24} {name}: tau-b {taus['tau_b']:+.3f}  tau-c {taus['tau_c']:+.3f}  ({values['judgements']} judgements)"
            )
    if opts.get("encoder_set"):
        scores = _encoder_scores(cmd, run, base, opts["encoder_set"])
        if scores:
            ctx.encoder_uses.append(
                f"caption quality run {run.pk}: {', '.join(scores)} per candidate caption, "
                "correlated with the judgments"
            )
    cmd.stdout.write(
        "    SIMULATED, NOT EVIDENCE: these judgments come from a latent quality drawn per "
        "candidate without reading its words (a caption written for the image drawn from the "
        "upper half), so a text metric's tau against them only shows that it recognises an "
        "image's own captions; only real judgments (Flickr8k-Expert, -CrowdFlower) measure a "
        "metric."
    )


def _encoder_scores(cmd, run, base: Path, set_id: int) -> list[str]:  # type: ignore[no-untyped-def]
    """The image-text model's scores (`manage.py demo --encoder-checkpoint`) against the
    same judgments; the names of the scores written."""
    embedding_set = EmbeddingSet.objects.get(pk=set_id)
    cmd.step(f"caption scores by {embedding_set.label} against the judgments")
    try:
        written = quality_encoder_scores(run=run, embedding_set=embedding_set)
    except InputError as exc:
        cmd.stdout.write(f"    not scored: {exc}")
        return []
    for path in written.values():
        result = quality_correlate(
            expert=str(base / EXPERT_FILE), cf=str(base / CF_FILE), metric=path
        )
        for layout, values in result.items():
            for metric, taus in values["metrics"].items():
                cmd.stdout.write(
                    f"    {layout:<24} {metric}: tau-b {taus['tau_b']:+.3f}  "
                    f"tau-c {taus['tau_c']:+.3f}"
                )
    return list(written)


def _reference_score(caption: str, references: tuple[str, ...]) -> float:
    try:
        import sacrebleu

        return float(sacrebleu.sentence_bleu(caption, list(references) or [""]).score)
    except ImportError:  # the demo's metric without the dev extra: unigram overlap
        words = set(tokenize(caption))
        refs = set(w for r in references for w in tokenize(r))
        return len(words & refs) / max(1, len(words))
