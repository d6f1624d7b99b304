"""The ECCV Caption flow's part of `manage.py demo`: proposals, judgments, export, metrics."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from annotation.encoders.models import EmbeddingSet
from annotation.encoders.selectors import embedding_set_readable_images
from annotation.errors import ServiceError
from annotation.extras import extra_missing
from annotation.flow_registry import DemoContext
from annotation.flows.eccv.models import Annotator, Proposal
from annotation.flows.eccv.quality import eccv_quality, exported_positives
from annotation.flows.eccv.services.annotators import eccv_annotator_add
from annotation.flows.eccv.services.cxc_positives import eccv_cxc_import
from annotation.flows.eccv.services.encoder_annotators import eccv_encoder_annotator_add
from annotation.flows.eccv.services.export import eccv_evaluate_annotator, eccv_export_start
from annotation.flows.eccv.services.proposal_job import eccv_propose_start
from annotation.flows.eccv.services.runs import eccv_run_create
from annotation.flows.eccv.settings import eccv_settings
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.management.arguments import whole
from annotation.models import GOLD_KINDS, Export, Question, Review, Run
from annotation.providers import simulated_crowd
from annotation.selectors.release.simulated_quality import QualityRow
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.gold import ESTABLISHED, gold_source
from annotation.services.work.reviews import (
    assignments_auto_approve,
    review_decide,
    reviews_hold_by_policy,
)
from pipeline.errors import InputError
from pipeline.simulate import Population, WorkerProfile, population_named, world_config

# Pairs of each round's calibration batch (its agreed pairs become the round's gold).
CALIBRATION_PAIRS = 60
# Simulated workers per batch. Nobody gets a HIT holding a gold copy of a pair they judged
# (or a copy they answered in another HIT), so a crowd of ten doing all of a run's batches
# runs out of HITs it may take (ECCV Caption had 970 workers, about 3 HITs each).
WORKERS = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--skip-eccv", action="store_true", help="run the BISON flow only")
    parser.add_argument(
        "--eccv-queries",
        type=whole(1, 100_000),
        default=60,
        help="ECCV image and caption queries each",
    )


@dataclass
class SimulatedEccv:
    run: Run
    team: dict[str, WorkerProfile] = field(default_factory=dict)


def eccv_simulated_run(
    ctx: DemoContext,
    *,
    population: Population,
    seed: int,
    name: str = "demo",
    config: dict[str, Any] | None = None,
) -> SimulatedEccv:
    """Proposals by two built-in annotators, the paper's two rounds answered by `population`
    with the demo's gold review, and approval; the export is the caller's."""
    cmd, dataset, opts = ctx.command, ctx.dataset, ctx.options
    n = opts["eccv_queries"]
    pool = _readable_images(ctx)
    run = eccv_run_create(
        dataset=dataset,
        name=name,
        config={
            "image_queries": n,
            "caption_queries": n,
            "k": 5,
            "models": 2,
            "seed": seed,
            **world_config(population),
            **(opts.get("eccv_config") or {}),
            **(config or {}),
        },
        image_query_pool=pool,
    )
    model = opts.get("encoder_set")
    cmd.step(
        f"ECCV run {run.pk}: {n} image and {n} caption queries, 2 built-in annotators"
        + (" and the image-text model" if model else "")
    )
    if pool is not None:
        cmd.stdout.write(
            f"    image queries drawn from the {len(pool)} images the image-text model could "
            "read (every model ranks every query)"
        )
    image_text = eccv_demo_annotators(ctx, run=run, seed=seed)
    job = cmd.wait_for_job(eccv_propose_start(run=run), poll=0.2)
    cmd.stdout.write(
        f"    {job.result['proposed']} proposals -> {job.result['candidates']} candidate pairs"
    )
    if image_text is not None:
        proposed = Proposal.objects.filter(annotator=image_text).count()
        cmd.stdout.write(f"    {image_text.name} (image-text model): {proposed} proposals")
        ctx.encoder_uses.append(
            f"ECCV run {run.pk}: annotator {image_text.name} (kind image_text) made "
            f"{proposed} of the run's proposals"
        )
    cxc = Path(settings.BASE_DIR) / "data" / "sample" / "cxc" / "sits_test.subset.csv"
    merged = eccv_cxc_import(run=run, path=str(cxc), skip_unknown=True)
    cmd.stdout.write(f"    {merged} CxC positives (agg_score >= 3) merged as a further source")

    made = SimulatedEccv(run=run)
    profile = WorkerProfile(seconds_per_answer=8.0)
    established = gold_source(run) == ESTABLISHED
    calibrate = eccv_settings(run).gold_min_answers if established else 0
    # The paper's two rounds: image-to-caption pairs with the rationale questions, then
    # caption-to-image pairs without them. With gold copied from the run's own agreed pairs,
    # each round starts with a calibration batch (no gold yet, several judges per pair).
    for number, direction, follow_ups in ((1, "i2t", True), (2, "t2i", False)):
        cmd.step(
            f"round {number}: {direction} pairs, "
            + (
                f"first {CALIBRATION_PAIRS} pairs x {calibrate} judgments (a calibration "
                "batch: gold only if earlier batches agreed on pairs of this direction), then "
                "20 per HIT (18 candidates + 2 gold copied from pairs the judges agreed on)"
                if calibrate
                else "20 per HIT (18 candidates + 2 gold: an original pair, a random pair)"
            )
            + f", {'with' if follow_ups else 'without'} rationale questions, simulated "
            f"workers ({population.name})"
        )
        # (pairs, judgments per pair) of each batch: the calibration batch, then the rest.
        sizes: list[tuple[int | None, int | None]] = (
            [(CALIBRATION_PAIRS, calibrate)] if calibrate else []
        )
        for part, (limit, judgments) in enumerate([*sizes, (None, None)]):
            try:
                batch = batch_create(
                    run=run,
                    stage=EccvStage.JUDGMENT,
                    provider=simulated_crowd().name,
                    seed=seed + number + 10 * part,
                    options={"direction": direction, "follow_ups": follow_ups},
                    limit=limit,
                    assignments_per_hit=judgments,
                )
            except (ServiceError, InputError) as exc:  # none of this direction is left
                cmd.stdout.write(f"    nothing to judge: {exc}")
                continue
            batch = batch_publish(batch=batch)
            report = simulated_crowd().simulate(
                batch=batch, workers=WORKERS, profile=profile, population=population, seed=seed
            )
            made.team.update(report.team)
            gold = Question.objects.filter(hit__batch=batch, item__kind__in=GOLD_KINDS).count()
            cmd.stdout.write(
                f"    batch {batch.pk}: {batch.hits.count()} HITs x {batch.assignments_per_hit} "
                f"judge(s), {gold} gold questions; {report.assignments} submitted"
            )
            made.team.update(
                _review(
                    cmd,
                    run=run,
                    batch=batch,
                    profile=profile,
                    population=population,
                    seed=seed + 7 * number + part,
                )
            )
            approved = assignments_auto_approve(
                now=timezone.now() + timedelta(days=365), batch=batch
            )
            cmd.stdout.write(f"    {approved} assignments approved after the approval delay")
    return made


def _readable_images(ctx: DemoContext) -> list[int] | None:
    """The images the demo's image-text model encoded, when it could not read them all."""
    set_id = ctx.options.get("encoder_set")
    if not set_id:
        return None
    return embedding_set_readable_images(embedding_set=EmbeddingSet.objects.get(pk=set_id))


def eccv_demo_annotators(ctx: DemoContext, *, run: Run, seed: int) -> Annotator | None:
    """The demo's two built-in annotators, and one of kind image_text from the stored set of
    `--encoder-checkpoint` when there is one (returned)."""
    eccv_annotator_add(
        run=run,
        name="fasttext-100d",
        kind="fasttext",
        params={"dim": 100, "seed": seed},
    )
    # MiniLM only where its extra is installed; otherwise the demo says what stands in for it.
    missing = extra_missing("minilm")
    if missing is None:
        try:
            eccv_annotator_add(run=run, name="minilm", kind="minilm")
        except InputError as exc:  # installed but broken (its torch does not import)
            missing = exc.message
    if missing is None:
        ctx.command.stdout.write(
            "    annotators: fasttext-100d (FastText, 100 dimensions) and minilm (all-MiniLM-L6-v2)"
        )
    else:
        eccv_annotator_add(
            run=run,
            name="fasttext-50d",
            kind="fasttext",
            params={"dim": 50, "seed": seed + 1},
        )
        ctx.command.stdout.write(
            "    annotators: fasttext-100d and fasttext-50d (FastText, 100 and 50 dimensions); "
            f"fasttext-50d stands in for MiniLM, {missing}"
        )
    set_id = ctx.options.get("encoder_set")
    if not set_id:
        return None
    return eccv_encoder_annotator_add(run=run, embedding_set=EmbeddingSet.objects.get(pk=set_id))


def _export_quality(
    ctx: DemoContext, made: SimulatedEccv, population: Population
) -> tuple[Export, dict[str, Any], list[QualityRow]]:
    job = ctx.command.wait_for_job(eccv_export_start(run=made.run), poll=0.2)
    export = Export.objects.get(pk=job.result["export"])
    rows = eccv_quality(
        run=made.run,
        called=exported_positives(Path(export.path)),
        team=made.team,
        population=population.name,
    )
    return export, job.result["counts"], rows


def eccv_quality_sweep(ctx: DemoContext, population: Population) -> list[QualityRow]:
    made = eccv_simulated_run(
        ctx, population=population, seed=ctx.options["seed"], name=f"quality {population.name}"
    )
    ctx.command.step("ECCV export")
    return _export_quality(ctx, made, population)[2]


def run_demo(ctx: DemoContext) -> None:
    cmd, opts = ctx.command, ctx.options
    if opts["skip_eccv"]:
        return
    population = population_named(opts["population"])
    made = eccv_simulated_run(ctx, population=population, seed=opts["seed"])
    run = made.run
    cmd.step("ECCV export and the built-in models' metrics on it")
    export, counts, rows = _export_quality(ctx, made, population)
    ctx.quality.extend(rows)
    for key in (
        "pairs_proposed",
        "pairs_after_merging_duplicates",
        "pairs_judged",
        "i2t_positive_links",
        "positives_per_image_query",
        "original_positives_per_image_query",
        "positives_per_caption_query",
        "original_positives_per_caption_query",
        "coco_links",
        "human_links",
        "cxc_links",
    ):
        cmd.stdout.write(f"    {key.ljust(38)} {counts[key]}")
    missing = counts["queries_without_positives"]
    cmd.stdout.write(
        f"    {'queries_without_positives'.ljust(38)} i2t {missing['i2t']}, t2i {missing['t2i']}"
    )
    # The paper's own warning: a model that proposed the candidates is favoured by them.
    cmd.stdout.write(
        "    note: the models below proposed the candidates, so their scores on this "
        "export are biased upwards (ECCV Caption, model bias)"
    )
    for annotator in run.annotators.order_by("name"):
        scores = eccv_evaluate_annotator(export=export, annotator=annotator)
        for direction, values in scores.items():
            cmd.stdout.write(
                f"    {annotator.name:<14} {direction}  "
                + "  ".join(f"{k} {v}" for k, v in values.items() if k != "queries")
            )
    cmd.stdout.write(f"    export: {export.path}")


def _review(
    cmd: Any,
    *,
    run: Any,
    batch: Any,
    profile: WorkerProfile,
    population: Population,
    seed: int,
) -> dict[str, WorkerProfile]:
    """Every gold failure is held for review, as in the paper, and so is the work of a worker
    who passes gold but disagrees with the crowd (the batch's approval policy, run here before
    the reviewer looks). The demo's reviewer rejects work that failed both gold items or
    disagrees with the crowd (its HIT goes to another worker) and approves the rest, until
    nothing is held."""
    team: dict[str, WorkerProfile] = {}
    for attempt in range(3):
        reviews_hold_by_policy(batch=batch)
        held = list(Review.objects.filter(assignment__hit__batch=batch, status="open"))
        if not held:
            return team
        rejected = 0
        for review in held:
            disagrees = any(r.get("policy") == "disagrees_with_crowd" for r in review.reasons)
            reject = (len(review.reasons) >= 2 or disagrees) and attempt < 2
            feedback = (
                "Your answers disagree with other workers' on most questions."
                if disagrees
                else "Both gold items were answered wrongly."
            )
            review_decide(review=review, approve=not reject, feedback=feedback if reject else "")
            rejected += reject
        cmd.stdout.write(
            f"    {len(held)} held for review (failed gold or disagreeing): {rejected} "
            f"rejected, {len(held) - rejected} approved"
        )
        if rejected:
            again = simulated_crowd().simulate(
                batch=batch,
                workers=4,
                profile=profile,
                population=population,
                seed=seed + attempt,
                id_prefix=f"sim-r{run.pk}-b{batch.pk}-redo{attempt}",
            )
            team.update(again.team)
            cmd.stdout.write(f"    rejected HITs judged again by others ({again.assignments})")
    return team
