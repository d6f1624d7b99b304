"""How simulated workers judge ECCV Caption pairs: from each pair's latent 4-level label in
the run's world (`pipeline.world`; shares by best proposal rank calibrated to the paper's
Table B.2), never from the words or embeddings the proposers use. A gold copy of a candidate
is that candidate's pair; the paper's gold items' truth is their kind (an original pair: YES,
unless the world makes it doubtful; a pair no model proposed: NO). Gold is answered at the worker's gold accuracy (by default the
worker's own accuracy). Errors follow the pair's shared difficulty and the worker's fatigue; a
worker who leans says YES."""

from __future__ import annotations

import json
import random

from annotation.flows.eccv.tasktypes import UNCERTAIN
from annotation.models import Item, Question
from pipeline.simulate import WorkerProfile, respond
from pipeline.world import ECCV_LEVELS, World


def latent_level(item: Item, world: World) -> int:
    """The pair's latent level (index into ECCV_LEVELS); reads `item.proposals`. A gold copy
    of a candidate (`source`) is the candidate's pair: its level is the candidate's."""
    if item.source is not None:
        return latent_level(item.source, world)
    if item.kind == "gold_positive":
        # An original COCO pair; in a calibrated world some are doubtful (`eccv_own_doubtful`).
        if item.caption is None:
            return 0
        return world.eccv_label(item.positive.coco_id, item.caption.coco_id, rank=None, own=True)
    if item.kind == "gold_negative":
        return 3
    assert item.caption is not None
    ranks = [p.rank for p in item.proposals.all()]
    return world.eccv_label(
        item.positive.coco_id,
        item.caption.coco_id,
        rank=min(ranks) if ranks else None,
        own=item.caption.image_id == item.positive_id,
    )


def judgment_answer(
    question: Question,
    choices: list[str],
    profile: WorkerProfile,
    rng: random.Random,
    world: World,
) -> str:
    gold = question.item.kind in ("gold_positive", "gold_negative")
    item = question.item.source or question.item
    truth = ECCV_LEVELS[latent_level(item, world)]
    pair = (item.positive.coco_id, item.caption.coco_id if item.caption else None)
    answer = respond(
        profile,
        {truth},
        ECCV_LEVELS,
        rng,
        gold=gold,
        constant="yes",
        difficulty=world.difficulty("eccv", *pair),
        position=question.position,
    )
    if answer in UNCERTAIN and question.hit.batch.options.get("follow_ups", True):
        reasons = [
            rng.choice(["extra_concepts", "missing_concepts", "wrong_description", "grammar"])
        ]
        errors = (
            [rng.choice(["quantity", "color", "action", "location"])]
            if reasons == ["wrong_description"]
            else []
        )
        return json.dumps({"answer": answer, "reasons": reasons, "errors": errors})
    return answer
