"""How simulated workers rate CxC pairs: from each pair's latent similarity (0-5) in the run's
world (`pipeline.world`), never from the words or the sampling similarity. A careful worker
gives it with probability `accuracy`, otherwise another point of the scale uniformly; a
published gold pair's truth is its known rating, a gold copy's that of the pair it copies;
gold is answered at the worker's gold accuracy."""

from __future__ import annotations

import random

from annotation.models import ItemKind, Question
from pipeline.simulate import WorkerProfile, respond
from pipeline.world import World


def latent_rating(question: Question, world: World) -> int:
    item = question.item
    # A published gold pair's truth is its known rating; a copy of a rated pair (`source`)
    # is that pair and rated as it is.
    if item.kind == ItemKind.GOLD_RATING and item.target is not None and item.source_id is None:
        return max(0, min(5, round(item.target)))
    if item.caption2 is not None and item.caption is not None:
        return world.cxc_similarity("sts", item.caption.coco_id, item.caption2.coco_id)
    if item.negative is not None:
        return world.cxc_similarity("sis", item.positive.coco_id, item.negative.coco_id)
    assert item.caption is not None
    return world.cxc_similarity("sits", item.positive.coco_id, item.caption.coco_id)


def rating_answer(
    question: Question,
    choices: list[str],
    profile: WorkerProfile,
    rng: random.Random,
    world: World,
) -> str:
    gold = question.item.kind == ItemKind.GOLD_RATING
    truth = str(latent_rating(question, world))
    return respond(profile, {truth}, choices, rng, gold=gold, constant="5")
