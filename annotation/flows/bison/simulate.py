"""How simulated workers answer BISON stages 2 and 3.

In stage 2 they see each image only through its captions, a text stand-in for looking at it;
in stage 3 a careful verifier (probability `accuracy`) recognises the positive image, a
careless one answers at random.
"""

from __future__ import annotations

import random
from typing import Any

from annotation.models import Question
from pipeline.simulate import WorkerProfile, discriminative_choice, noisy
from pipeline.text import tokenize


def _tokens_of(image: Any) -> list[list[str]]:
    return [tokenize(c.text) for c in image.captions.all()]


def selection_answer(
    question: Question, choices: list[str], profile: WorkerProfile, rng: random.Random
) -> str:
    item = question.item
    captions = [
        (str(c.coco_id), tokenize(c.text))
        for c in sorted(item.positive.captions.all(), key=lambda c: c.coco_id)
    ]
    correct = discriminative_choice(captions, _tokens_of(item.negative))
    return noisy(correct, choices, accuracy=profile.accuracy, rng=rng)


def verification_answer(
    question: Question, choices: list[str], profile: WorkerProfile, rng: random.Random
) -> str:
    # A careful verifier sees which image the query describes: the positive's side.
    correct = "right" if question.swapped else "left"
    return noisy(correct, choices, accuracy=profile.accuracy, rng=rng)
