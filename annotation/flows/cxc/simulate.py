"""How simulated workers rate CxC pairs: a similarity read off the words people used (the
captions on each side; an image stands for its own captions), put on the 0-5 scale, with the
worker's accuracy deciding between that rating (+/- 1) and a random one. Gold pairs are rated
near their known rating at the worker's gold accuracy. A stand-in for people, documented as
such; it never looks at the sampling similarity."""

from __future__ import annotations

import random

from annotation.models import ItemKind, Question
from pipeline.simulate import STOPWORDS, WorkerProfile
from pipeline.text import tokenize


def _words(texts: list[str]) -> set[str]:
    return {w for t in texts for w in tokenize(t) if w not in STOPWORDS}


def _side(item_image, caption) -> set[str]:  # type: ignore[no-untyped-def]
    if caption is not None:
        return _words([caption.text])
    return _words([c.text for c in item_image.captions.all()])


def rating_answer(
    question: Question, choices: list[str], profile: WorkerProfile, rng: random.Random
) -> str:
    item = question.item
    if item.kind == ItemKind.GOLD_RATING and item.target is not None:
        if rng.random() < profile.gold_accuracy:
            return str(max(0, min(5, round(item.target + rng.choice((-0.5, 0.0, 0.5))))))
        return rng.choice(choices)
    first = _side(item.positive, item.caption)
    if item.caption2 is not None:
        second = _words([item.caption2.text])
    elif item.negative is not None:
        second = _side(item.negative, None)
    else:  # image-caption: the image's own captions against the caption
        first = _words([c.text for c in item.positive.captions.all() if c.pk != item.caption_id])
        second = _words([item.caption.text]) if item.caption else set()
    overlap = len(first & second) / max(1, len(first | second))
    truth = min(5, round(overlap * 10))  # Jaccard 0.5 or more reads as "same meaning"
    if rng.random() < profile.accuracy:
        return str(max(0, min(5, truth + rng.choice((-1, 0, 0, 1)))))
    return rng.choice(choices)
