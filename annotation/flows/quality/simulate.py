"""How simulated workers judge candidate captions: from each candidate's latent quality in the
run's world (`pipeline.world.caption_quality`, drawn from the seed and the candidate alone,
never from its words: a caption written for the image, a reference or a model's copy of one
of the image's own captions, is drawn from the upper half). A yes/no judgment says
yes for a quality of one half or more, a rating reads the quality on the run's scale, a
preference picks the better of two; errors follow the worker's accuracy, the item's shared
difficulty (harder near the boundary: a quality close to one half, two close qualities) and
fatigue. Because the truth ignores the words, a text metric's correlation with these
judgments measures nothing about the metric: the demo says so."""

from __future__ import annotations

import random

from annotation.flows.quality.models import Candidate
from annotation.flows.quality.services.candidates import REFERENCE
from annotation.models import Question
from pipeline.simulate import Asked, WorkerProfile, rate, respond
from pipeline.world import World


def latent_quality(candidate: Candidate, image: int, own: set[str], world: World) -> float:
    """0..1; keyed by the image (COCO id) and the candidate's text (stable across databases),
    drawn by a hash of them: identity, not content. `own`: the image's captions, whitespace
    normalised (a candidate equal to one was written for the image)."""
    written = candidate.source == REFERENCE or " ".join(candidate.text.split()) in own
    return world.caption_quality(image, candidate.text, reference=written)


def candidate_quality(question: Question, world: World, *, second: bool = False) -> float:
    """The latent quality of the question's candidate (or of its second one)."""
    item = question.item
    candidate = item.candidate2 if second else item.candidate
    assert candidate is not None
    own = {" ".join(c.text.split()) for c in item.positive.captions.all()}
    return latent_quality(candidate, item.positive.coco_id, own, world)


def quality_answer(
    question: Question,
    choices: list[str],
    profile: WorkerProfile,
    rng: random.Random,
    world: World,
) -> str:
    item = question.item
    assert item.candidate is not None
    first = candidate_quality(question, world)
    other = item.candidate2.text if item.candidate2 is not None else ""
    # One difficulty key per kind of question, as the Monte Carlo draws them
    # (`pipeline.flow_quality`), so a world's shift of a task moves the same questions.
    kind = (
        "quality-pref"
        if item.candidate2 is not None
        else "quality-binary"
        if choices == ["yes", "no"]
        else "quality-rating"
    )
    hard = world.difficulty(kind, item.positive.coco_id, item.candidate.text, other)
    if item.candidate2 is not None:
        second = candidate_quality(question, world, second=True)
        shown_first = "b" if question.swapped else "a"
        truth = shown_first if first >= second else ({"a", "b"} - {shown_first}).pop()
        preferred, closeness = "a", 1 - 3 * abs(first - second)
    elif choices == ["yes", "no"]:
        truth = "yes" if first >= 0.5 else "no"
        preferred, closeness = "yes", 1 - 4 * abs(first - 0.5)
    else:
        points = sorted(int(c) for c in choices)  # "1".."4" or "1".."5"
        latent = points[0] + first * (points[-1] - points[0])
        asked = Asked(difficulty=hard, position=question.position)
        return str(rate(profile, latent, points, rng, asked))
    return respond(
        profile,
        {truth},
        choices,
        rng,
        constant=preferred,
        difficulty=hard + closeness,
        position=question.position,
    )
