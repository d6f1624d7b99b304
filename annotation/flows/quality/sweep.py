"""Caption quality in `quality_sweep`, through the services: a run at the papers' fixed counts
(3 ratings per caption as Flickr8k-Expert, 48 preferences per pair as Pascal-50S) and one with
the default adaptive settings (ratings 3-7 ±0.5, preferences in rounds of 6 up to 48 ±0.15),
on the demo's two stand-in captioners, by the population's simulated workers; each scored
against the world's latent caption quality (`annotation/flows/quality/simulate.py`)."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.utils import timezone

from annotation.flow_registry import DemoContext
from annotation.flows.quality.demo import stand_in_models
from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_items_create,
    quality_run_create,
)
from annotation.flows.quality.simulate import candidate_quality
from annotation.flows.quality.vocabulary import QualityItemKind, QualityStage
from annotation.models import Answer, Question, Review, Run
from annotation.providers import simulated_crowd
from annotation.selectors.counting import counted_reviewed
from annotation.selectors.release.simulated_quality import QualityRow, run_world
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import assignments_auto_approve, review_decide
from pipeline.errors import InputError
from pipeline.scales import rating_model
from pipeline.simulate import Population, WorkerProfile, world_config

RATINGS = {"start": 3, "cap": 7, "half_width": 0.5}
PREFERENCES = {"start": 6, "cap": 48, "half_width": 0.15}
RULES = (("fixed 3 / 48", False), ("adaptive", True))
# Nobody takes two HITs showing one image: 48 judgments of every pair need a large crowd.
WORKERS: dict[str, int] = {QualityStage.RATING: 20, QualityStage.PREFERENCE: 150}


def _judge(run: Run, stage: str, population: Population, seed: int, *, more: bool) -> int:
    """One batch of `stage` by fresh simulated workers, held work approved; its HITs."""
    batch = batch_publish(
        batch=batch_create(
            run=run,
            stage=stage,
            provider=simulated_crowd().name,
            seed=seed,
            options={"more_judgments": True} if more else {},
        )
    )
    simulated_crowd().simulate(
        batch=batch,
        workers=WORKERS[stage],
        profile=WorkerProfile(seconds_per_answer=5.0),
        population=population,
        seed=seed,
        id_prefix=f"sim-r{run.pk}-b{batch.pk}",
    )
    for review in Review.objects.filter(assignment__hit__batch=batch, status="open"):
        review_decide(review=review, approve=True)
    assignments_auto_approve(now=timezone.now() + timedelta(days=365), batch=batch)
    return batch.hits.count()


def _spent(run: Run, kind: str) -> int:
    """Every answer paid for, counted or excluded by the review policies."""
    return Answer.objects.filter(question__item__run=run, question__item__kind=kind).count()


def _answers(run: Run, kind: str) -> tuple[list[tuple[int, int, str]], dict[int, Question]]:
    rows = list(
        Answer.objects.filter(counted_reviewed(), question__item__run=run)
        .filter(question__item__kind=kind)
        .values_list("question__item_id", "assignment__worker_id", "label")
    )
    questions = {
        q.item_id: q
        for q in Question.objects.filter(item__run=run, item__kind=kind).select_related(
            "item__candidate", "item__candidate2", "item__positive"
        )
    }
    return rows, questions


def quality_rows(*, run: Run, population: str, label: str) -> list[QualityRow]:
    """The run's ratings (1-4) and preferences against the latent caption quality."""
    world = run_world(run)

    def row(measure: str, hits: int, total: int, note: str = "") -> QualityRow:
        return QualityRow("quality", population, measure, hits, total, None, note)

    rows, questions = _answers(run, QualityItemKind.CANDIDATE_CAPTION)
    items, workers, labels = (np.array(c) for c in zip(*rows, strict=True))
    est = rating_model(items, workers, labels.astype(np.float64), low=1, high=4)
    latent = np.array([1 + 3 * candidate_quality(questions[int(i)], world) for i in est.items])
    n = int(est.items.size)
    out = [
        row(
            measure=f"{label}: rating model within ±0.5",
            hits=int((np.abs(est.value - latent) <= 0.5).sum()),
            total=n,
        ),
        row(
            measure=f"{label}: rating interval covers",
            hits=int(((est.low <= latent) & (latent <= est.high)).sum()),
            total=n,
        ),
        row(
            measure=f"{label}: ratings / cap of 7",
            hits=(ratings := _spent(run, QualityItemKind.CANDIDATE_CAPTION)),
            total=7 * n,
            note=f"{ratings / n:.2f} ratings per caption",
        ),
    ]
    rows, questions = _answers(run, QualityItemKind.CANDIDATE_PAIR)
    votes: dict[int, list[bool]] = defaultdict(list)
    for item, _, answer in rows:
        votes[item].append(answer == "first")
    right = 0
    for item, said in votes.items():
        question = questions[item]
        first_better = candidate_quality(question, world) >= candidate_quality(
            question, world, second=True
        )
        first = sum(said)
        right += 2 * first != len(said) and (2 * first > len(said)) == first_better
    spent = _spent(run, QualityItemKind.CANDIDATE_PAIR)
    return out + [
        row(
            measure=f"{label}: preference majority right",
            hits=right,
            total=len(votes),
            note="a tie counts as wrong",
        ),
        row(
            measure=f"{label}: preferences / 48 per pair",
            hits=spent,
            total=48 * len(votes),
            note=f"{spent / max(len(votes), 1):.2f} judgments per pair",
        ),
    ]


def caption_quality_sweep(ctx: DemoContext, population: Population) -> list[QualityRow]:
    seed = int(ctx.options["seed"])
    folder = Path(settings.MEDIA_ROOT) / "sweep-quality"
    folder.mkdir(parents=True, exist_ok=True)
    models = stand_in_models(ctx.dataset, folder, seed)
    out: list[QualityRow] = []
    for label, adaptive in RULES:
        config: dict = {"seed": seed, "pairs_per_image": 2, **world_config(population)}
        if adaptive:
            config.update(adaptive=RATINGS, adaptive_preference=PREFERENCES)
        run = quality_run_create(
            dataset=ctx.dataset, name=f"quality {population.name} {label}", config=config
        )
        for model, path in models.items():
            quality_candidates_import(run=run, model=model, path=str(path))
        quality_items_create(run=run)
        for stage in (QualityStage.RATING, QualityStage.PREFERENCE):
            rounds = [_judge(run, stage, population, seed, more=False)]
            while adaptive:
                try:
                    rounds.append(_judge(run, stage, population, seed + len(rounds), more=True))
                except InputError:  # nothing is still too uncertain
                    break
            ctx.command.stdout.write(
                f"    caption-quality run {run.pk} ({label}) {stage}: batches of "
                f"{', '.join(map(str, rounds))} HITs"
            )
        out += quality_rows(run=run, population=population.name, label=label)
    return out
