"""How simulated workers answer BISON stages 2 and 3, from the run's latent world
(`pipeline.world`): never from the captions' words and never from the server's side flag
alone.

Stage 2: a careful worker picks one of the captions that describe the left image and not the
right one, or "none" when the pair has none. Stage 3: a careful verifier points at the image a
valid triple's caption describes (the positive's side) and answers "both" for an invalid one
(its caption describes the negative image too). In a calibrated world careful workers also
take confusable invalid captions for valid, together (`World.bison_apparent_captions`). Errors go to the other answers (a verifier
who leans favours the left image); how often a worker errs follows the pair's or triple's
difficulty in the world, shared by all workers, and the question's place in the HIT (fatigue).
"""

from __future__ import annotations

import random

from annotation.flows.bison.tasktypes import caption_values
from annotation.flows.bison.vocabulary import NONE
from annotation.models import Question
from pipeline.simulate import WorkerProfile, respond
from pipeline.world import World


def triple_apparent(question: Question, world: World) -> bool:
    """Whether careful workers take the triple's caption for valid (it is, or it is
    confusable in a calibrated world)."""
    item = question.item
    assert item.negative is not None and item.caption is not None
    captions = [c.coco_id for c in item.positive.captions.all()]
    apparent = world.bison_apparent_captions(item.positive.coco_id, item.negative.coco_id, captions)
    return item.caption.coco_id in apparent


def selection_answer(
    question: Question,
    choices: list[str],
    profile: WorkerProfile,
    rng: random.Random,
    world: World,
) -> str:
    item = question.item
    assert item.negative is not None
    values = caption_values(question)
    captions = [c.coco_id for c in values.values()]
    apparent = world.bison_apparent_captions(item.positive.coco_id, item.negative.coco_id, captions)
    shown = {v for v, c in values.items() if c.coco_id in apparent}
    return respond(
        profile,
        shown or {NONE},
        choices,
        rng,
        difficulty=world.difficulty("bison-pair", item.positive.coco_id, item.negative.coco_id),
        position=question.position,
    )


def verification_answer(
    question: Question,
    choices: list[str],
    profile: WorkerProfile,
    rng: random.Random,
    world: World,
) -> str:
    item = question.item
    assert item.negative is not None and item.caption is not None
    side = "right" if question.swapped else "left"
    correct = {side} if triple_apparent(question, world) else {"both"}
    hard = world.difficulty(
        "bison-triple", item.positive.coco_id, item.negative.coco_id, item.caption.coco_id
    )
    return respond(
        profile, correct, choices, rng, constant="left", difficulty=hard, position=question.position
    )
