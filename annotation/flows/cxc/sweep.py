"""CxC in `quality_sweep`, through the services: one run rated five times per pair (CxC's
setting) and one with the default adaptive setting (3, then follow-up batches while a pair's
interval is wider than ±0.5, up to 7), on the sample, by the population's simulated raters;
each scored against the world's latent similarities (`annotation/flows/cxc/simulate.py`)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from django.utils import timezone

from annotation.flow_registry import DemoContext
from annotation.flows.cxc.services.sampling import cxc_run_create, cxc_sample_start
from annotation.flows.cxc.simulate import pair_key
from annotation.flows.cxc.vocabulary import CxcItemKind, CxcStage
from annotation.models import Answer, Item, Review, Run
from annotation.providers import simulated_crowd
from annotation.selectors.counting import counted_reviewed
from annotation.selectors.release.simulated_quality import QualityRow, run_world
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import assignments_auto_approve, review_decide
from pipeline.errors import InputError
from pipeline.scales import rating_model
from pipeline.simulate import Population, WorkerProfile, world_config

# Caption-caption pairs only (the stage the Monte Carlo models): a sample-sized slice.
SWEEP_CONFIG = {
    "sis_pairs": 0,
    "sts_pairs": 60,
    "cocaption_pairs": 20,
    "intrasim_pairs": 0,
    "original_pairs": 0,
}
CAP = 7
ADAPTIVE = {"start": 3, "cap": CAP, "half_width": 0.5}
RULES = (("fixed 5", None), ("adaptive 3-7 ±0.5", ADAPTIVE))


def _rate(run: Run, population: Population, seed: int, *, more: bool) -> int:
    """One batch of the STS stage rated by simulated raters, held work approved; its HITs."""
    batch = batch_publish(
        batch=batch_create(
            run=run,
            stage=CxcStage.STS,
            provider=simulated_crowd().name,
            seed=seed,
            options={"more_judgments": True} if more else {},
        )
    )
    # Fresh raters each round: the claim does not keep a rater from a pair they rated in an
    # earlier batch (such a second rating is spent but counts once), which would charge the
    # adaptive rule for what the crowd platform decides.
    simulated_crowd().simulate(
        batch=batch,
        workers=20,
        profile=WorkerProfile(seconds_per_answer=6.0),
        population=population,
        seed=seed,
        id_prefix=f"sim-r{run.pk}-b{batch.pk}",
    )
    for review in Review.objects.filter(assignment__hit__batch=batch, status="open"):
        review_decide(review=review, approve=True)  # as the demo's reviewer: gold misses of 1-2
    assignments_auto_approve(now=timezone.now() + timedelta(days=365), batch=batch)
    return batch.hits.count()


def cxc_rating_rows(*, run: Run, population: str, label: str) -> list[QualityRow]:
    """The run's STS pairs against their latent similarity: the plain mean and the scale
    model within ±0.5, the model's interval covering it, and the ratings spent as a share of
    the adaptive rule's cap (7 per pair; fixed 5 spends 5/7)."""
    pairs = {
        item.pk: item
        for item in Item.objects.filter(run=run, kind=CxcItemKind.RATING_PAIR).select_related(
            "caption", "caption2", "positive", "negative"
        )
    }
    rows = (
        Answer.objects.filter(counted_reviewed(), question__item_id__in=list(pairs))
        .filter(question__hit__batch__stage=CxcStage.STS)
        .values_list("question__item_id", "assignment__worker_id", "label")
    )
    items, workers, labels = (np.array(c) for c in zip(*rows, strict=True))
    # Every rating paid for, counted or excluded by the review policies.
    spent = Answer.objects.filter(question__item_id__in=list(pairs)).count()
    est = rating_model(items, workers, labels.astype(np.float64), low=0, high=5)
    world = run_world(run)
    latent = np.array([world.cxc_latent(*pair_key(pairs[int(i)])) for i in est.items])
    n = int(est.items.size)

    def row(measure: str, hits: int, total: int, note: str = "") -> QualityRow:
        return QualityRow("cxc", population, measure, hits, total, None, note)

    def close(values: np.ndarray) -> int:
        return int((np.abs(values - latent) <= 0.5).sum())

    covers = int(((est.low <= latent) & (latent <= est.high)).sum())
    return [
        row(measure=f"{label}: mean within ±0.5", hits=close(est.mean), total=n),
        row(measure=f"{label}: model within ±0.5", hits=close(est.value), total=n),
        row(measure=f"{label}: model interval covers", hits=covers, total=n),
        row(
            measure=f"{label}: ratings / cap of 7",
            hits=int(spent),
            total=CAP * n,
            note=f"{spent / n:.2f} ratings per pair",
        ),
    ]


def cxc_quality_sweep(ctx: DemoContext, population: Population) -> list[QualityRow]:
    seed = int(ctx.options["seed"])
    out: list[QualityRow] = []
    for label, adaptive in RULES:
        config = {
            **SWEEP_CONFIG,
            "seed": seed,
            **world_config(population),
            **({"adaptive": adaptive} if adaptive else {}),
        }
        run = cxc_run_create(
            dataset=ctx.dataset, name=f"quality {population.name} {label}", config=config
        )
        ctx.command.wait_for_job(
            cxc_sample_start(run=run, image_embeddings_path=None, standin=True)
        )
        rounds = [_rate(run, population, seed, more=False)]
        while adaptive is not None:
            try:
                rounds.append(_rate(run, population, seed + len(rounds), more=True))
            except InputError:  # no pair is still too uncertain
                break
        ctx.command.stdout.write(
            f"    CxC run {run.pk} ({label}): STS batches of {', '.join(map(str, rounds))} HITs"
        )
        out += cxc_rating_rows(run=run, population=population.name, label=label)
    return out
