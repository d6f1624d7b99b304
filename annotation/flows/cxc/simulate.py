"""How simulated workers rate CxC pairs: from each pair's latent similarity in the run's world
(`pipeline.world`: a point of the 0-5 scale, and the same value on a continuous scale), never
from the words or the sampling similarity. A careful worker without a rating model gives the
point with probability `accuracy`, otherwise another point uniformly; one with `rating_noise`
rates the continuous value through its own leniency, central tendency and noise
(`pipeline.simulate.rate`). A published gold pair's truth is its known rating, a gold copy's
that of the pair it copies; gold is answered at the worker's gold accuracy."""

from __future__ import annotations

import random

from annotation.models import GoldItemKind, Item, Question
from pipeline.simulate import Asked, WorkerProfile, rate
from pipeline.world import World


def pair_key(item: Item) -> tuple[str, int, int]:
    if item.caption2 is not None and item.caption is not None:
        return "sts", item.caption.coco_id, item.caption2.coco_id
    if item.negative is not None:
        return "sis", item.positive.coco_id, item.negative.coco_id
    assert item.caption is not None
    return "sits", item.positive.coco_id, item.caption.coco_id


def latent_value(question: Question, world: World) -> float:
    """The pair's latent similarity on the continuous 0-5 scale."""
    item = question.item
    # A published gold pair's truth is its known rating; a copy of a rated pair (`source`)
    # is that pair and rated as it is.
    if item.kind == GoldItemKind.RATING and item.target is not None and item.source_id is None:
        return max(0.0, min(5.0, float(item.target)))
    return world.cxc_latent(*pair_key(item))


def latent_rating(question: Question, world: World) -> int:
    """The pair's latent point of the 0-5 scale."""
    item = question.item
    if item.kind == GoldItemKind.RATING and item.target is not None and item.source_id is None:
        return max(0, min(5, round(item.target)))
    return world.cxc_similarity(*pair_key(item))


def rating_answer(
    question: Question,
    choices: list[str],
    profile: WorkerProfile,
    rng: random.Random,
    world: World,
) -> str:
    gold = question.item.kind == GoldItemKind.RATING
    latent = (
        latent_value(question, world) if profile.rating_noise else latent_rating(question, world)
    )
    key = pair_key(question.item)
    asked = Asked(
        gold=gold,
        difficulty=world.difficulty("cxc", *key),
        position=question.position,
        top=world.cxc_top(key[0]),
    )
    value = rate(profile, latent, [int(c) for c in choices], rng, asked, constant=5)
    return str(value)
