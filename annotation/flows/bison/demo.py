"""The BISON flow's part of `manage.py demo`: stage 1 to export and evaluation on the sample."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command

from annotation.flow_registry import DemoContext
from annotation.flows.bison.quality import bison_quality, exported_triples
from annotation.flows.bison.selectors import bison_stage_counts
from annotation.flows.bison.services.export import bison_export_start
from annotation.flows.bison.services.pairing import pairing_start
from annotation.flows.bison.vocabulary import BisonStage
from annotation.management.arguments import whole
from annotation.models import Caption, Export, Run, RunKind
from annotation.providers import simulated_crowd
from annotation.selectors.release.simulated_quality import QualityRow
from annotation.services.release.exports import export_scratch_folder
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.runs import run_create
from pipeline.baselines import caption_overlap_predictions
from pipeline.bison import bison_accuracy, parse_bison_annotations
from pipeline.simulate import Population, WorkerProfile, population_named, world_config
from pipeline.text import tokenize

STAGE3_WORKERS = 62


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stage2-workers", type=whole(1, 10_000), default=12)
    # Nobody takes two stage-3 HITs showing one image (issue 25): a verifier gets a few HITs
    # of the sample's batch: its 128 slots took fifty verifiers (sixteen did before), and
    # sixty-two since each HIT carries two traps showing two more images each (issue 47).
    parser.add_argument("--stage3-workers", type=whole(1, 10_000), default=STAGE3_WORKERS)
    parser.add_argument("--vectors", help="FastText .vec/.bin (default: train on the captions)")


@dataclass
class SimulatedBison:
    run: Run
    pairing: dict[str, Any]
    path: Path
    team: dict[str, WorkerProfile] = field(default_factory=dict)


def bison_simulated_run(
    ctx: DemoContext, *, population: Population, seed: int, name: str = "demo"
) -> SimulatedBison:
    """Stage 1, stages 2 and 3 answered by `population`, and the export."""
    cmd, dataset, opts = ctx.command, ctx.dataset, ctx.options
    run = run_create(
        dataset=dataset,
        kind=RunKind.BISON,
        name=name,
        config={
            "seed": seed,
            "verifiers": 2,
            **world_config(population),
            **(opts.get("bison_config") or {}),
        },
    )
    cmd.step(f"run {run.pk} stage 1: FastText nearest-neighbour pairs")
    job = pairing_start(run=run, vectors_path=opts.get("vectors"), seed=seed, allow_new_dim=True)
    pairing = cmd.wait_for_job(job, poll=0.2).result
    team: dict[str, WorkerProfile] = {}
    stages = (
        (BisonStage.SELECTION, "stage 2: caption selection, 10 pairs per HIT", 25.9, "stage2"),
        (
            BisonStage.VERIFICATION,
            "stage 3: verification, 2 workers per triple from a disjoint pool",
            12.7,
            "stage3",
        ),
    )
    for offset, (stage, text, seconds, key) in enumerate(stages):
        cmd.step(f"{text}, simulated workers ({population.name}: {population.describe()})")
        batch = batch_publish(
            batch=batch_create(run=run, stage=stage, provider=simulated_crowd().name, seed=seed)
        )
        report = simulated_crowd().simulate(
            batch=batch,
            workers=opts.get(f"{key}_workers") or (12 if key == "stage2" else STAGE3_WORKERS),
            profile=WorkerProfile(seconds_per_answer=seconds),
            population=population,
            seed=seed + offset,
        )
        team.update(report.team)
        cmd.stdout.write(
            f"    {batch.hits.count()} HITs; {report.workers} workers submitted "
            f"{report.assignments} assignments"
        )
    cmd.step("export (COCO-BISON format)")
    job = cmd.wait_for_job(bison_export_start(run=run), poll=0.2)
    path = Path(Export.objects.get(pk=job.result["export"]).path)
    return SimulatedBison(run=run, pairing=pairing, path=path, team=team)


def bison_quality_sweep(ctx: DemoContext, population: Population) -> list[QualityRow]:
    made = bison_simulated_run(
        ctx, population=population, seed=ctx.options["seed"], name=f"quality {population.name}"
    )
    return bison_quality(
        run=made.run,
        triples=exported_triples(made.path),
        team=made.team,
        population=population.name,
    )


def run_demo(ctx: DemoContext) -> None:
    cmd, dataset, opts = ctx.command, ctx.dataset, ctx.options
    population = population_named(opts["population"])
    made = bison_simulated_run(ctx, population=population, seed=opts["seed"])
    run, pairing, path = made.run, made.pairing, made.path
    ctx.quality.extend(
        bison_quality(
            run=run, triples=exported_triples(path), team=made.team, population=population.name
        )
    )

    cmd.step("BISON evaluation of a text-only baseline on the export")
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
    pred_path = export_scratch_folder(run) / "predictions.text_overlap_baseline.json"
    pred_path.write_text(json.dumps(predictions))
    call_command(
        "bison_evaluate", annotations=str(path), predictions=str(pred_path), stdout=cmd.stdout
    )
    score = bison_accuracy(records, {p["bison_id"]: p["predicted_image_id"] for p in predictions})

    counts = bison_stage_counts(run=run)
    s1, s2, s3 = counts["stage1"], counts["stage2"], counts["stage3"]
    cmd.step("summary")
    rows = [
        ("images", s1["images"]),
        (
            "stage 1 pairs",
            f"{s1['pairs']} ordered pairs = both orders of {pairing['edges']} nearest-"
            f"neighbour edges ({pairing['mutual_edges']} mutual; paper 67,564 = 2 x 33,782)",
        ),
        (
            "stage 1 cosines",
            f"nearest neighbour median {pairing['cosines']['nn_median']}, random pairs "
            f"median {pairing['cosines']['random_median']}"
            + (" DEGENERATE" if pairing["cosines"]["degenerate"] else ""),
        ),
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
        cmd.stdout.write(f"    {key.ljust(width)}  {value}")
