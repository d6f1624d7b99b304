"""How simulated workers judge candidate captions: a quality read off the caption's word
overlap with the image's own captions (a stand-in for looking at the image), then the worker's
accuracy decides between that answer and a random one. Documented as a stand-in."""

from __future__ import annotations

import random

from annotation.models import Question
from pipeline.simulate import STOPWORDS, WorkerProfile
from pipeline.text import tokenize
from pipeline.world import World


def _quality(question: Question, text: str) -> float:
    """0..1: the share of the caption's content words found in the image's own captions."""
    item = question.item
    words = {w for w in tokenize(text) if w not in STOPWORDS}
    own = {
        w
        for c in item.positive.captions.all()
        if " ".join(c.text.split()) != text
        for w in tokenize(c.text)
        if w not in STOPWORDS
    }
    return len(words & own) / max(1, len(words))


def quality_answer(
    question: Question,
    choices: list[str],
    profile: WorkerProfile,
    rng: random.Random,
    world: World,
) -> str:
    """The caption-quality flow keeps its word-overlap stand-in (`world` unused): its scores
    are compared with metrics, not with a latent truth."""
    item = question.item
    if profile.behaviour == "constant":
        return "yes" if "yes" in choices else choices[-1]
    if profile.behaviour == "random" or rng.random() >= profile.accuracy:
        return rng.choice(choices)
    if item.candidate2 is not None:
        assert item.candidate is not None
        first = _quality(question, item.candidate.text)
        second = _quality(question, item.candidate2.text)
        better_first = first > second or (first == second and rng.random() < 0.5)
        return "a" if better_first != question.swapped else "b"
    assert item.candidate is not None
    q = _quality(question, item.candidate.text)
    if choices == ["yes", "no"]:
        return "yes" if q >= 0.4 else "no"
    values = sorted(choices, key=int)  # "1".."4" or "1".."5"
    return values[min(len(values) - 1, int(q * len(values)))]
