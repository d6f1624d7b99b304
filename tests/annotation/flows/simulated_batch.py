"""A batch published to the simulated crowd, answered and approved: the step the adaptive
tests of every flow repeat between follow-up rounds."""

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.models import Batch, Review, Run
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import review_decide
from pipeline.simulate import POPULATIONS, WorkerProfile


def answered_batch(
    run: Run,
    stage: str,
    *,
    items_per_hit: int,
    workers: int,
    population: str,
    seed: int,
    more: bool,
    id_prefix: str,
) -> Batch:
    """Publish a batch of `stage` (a follow-up batch when `more`), have `workers` simulated
    people of `population` answer it, and approve every open review: the follow-up selectors
    count approved work only."""
    batch = batch_publish(
        batch=batch_create(
            run=run,
            stage=stage,
            provider="simulated",
            items_per_hit=items_per_hit,
            seed=seed,
            options={"more_judgments": True} if more else {},
        )
    )
    simulate_crowd(
        batch=batch,
        workers=workers,
        profile=WorkerProfile(seconds_per_answer=5.0),
        population=POPULATIONS[population],
        seed=seed,
        id_prefix=id_prefix,
    )
    for review in Review.objects.filter(assignment__hit__batch=batch, status="open"):
        review_decide(review=review, approve=True)
    return batch
