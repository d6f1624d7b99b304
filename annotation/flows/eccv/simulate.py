"""How simulated workers judge ECCV Caption pairs."""

from __future__ import annotations

import json
import random

from annotation.flows.eccv.tasktypes import UNCERTAIN
from annotation.models import Question
from pipeline.simulate import WorkerProfile, judgment_from_overlap, noisy
from pipeline.text import tokenize


def judgment_answer(
    question: Question, choices: list[str], profile: WorkerProfile, rng: random.Random
) -> str:
    """Judge by the caption's word overlap with the image's own captions (the caption itself
    excluded); gold items are answered right with probability `gold_accuracy`. A gold item's
    right answer is its kind (an original pair: yes; a pair no model proposed: no), as a person
    looking at the image would see it; word overlap would sometimes miss a gold negative that
    happens to share words, failing workers at random."""
    item = question.item
    assert item.caption is not None
    gold = item.kind in ("gold_positive", "gold_negative")
    if gold:
        correct = "yes" if item.kind == "gold_positive" else "no"
    else:
        others = [c for c in item.positive.captions.all() if c.pk != item.caption_id]
        correct = judgment_from_overlap(
            tokenize(item.caption.text),
            [tokenize(c.text) for c in others],
            own=item.caption.image_id == item.positive_id,
        )
    accuracy = profile.gold_accuracy if gold else profile.accuracy
    answer = noisy(correct, ("yes", "partially_yes", "mostly_no", "no"), accuracy=accuracy, rng=rng)
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
