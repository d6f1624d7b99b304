"""Behaviour models of simulated crowd workers: seeded, pure, used by the `simulated` provider.

A simulated worker answers the way a careful person would with probability `accuracy`, and
picks uniformly among the allowed answers otherwise.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "on",
        "in",
        "at",
        "to",
        "and",
        "with",
        "is",
        "are",
        "its",
        "it",
        "this",
        "that",
        "there",
        "some",
        "two",
        "one",
    ]
)


@dataclass(frozen=True)
class WorkerProfile:
    accuracy: float = 0.9
    seconds_per_answer: float = 20.0
    gold_accuracy: float = 0.95

    def __post_init__(self) -> None:
        for name in ("accuracy", "gold_accuracy"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {getattr(self, name)}")
        if self.seconds_per_answer <= 0:
            raise ValueError("seconds_per_answer must be positive")


def _content(tokens: Sequence[str]) -> set[str]:
    return {t for t in tokens if t not in STOPWORDS}


def discriminative_choice(
    captions: Sequence[tuple[str, Sequence[str]]],
    negative_tokens: Sequence[Sequence[str]],
    *,
    none_value: str = "none",
    max_overlap: float = 0.5,
) -> str:
    """The caption whose content words are least shared with the negative image's captions.

    When even the best caption shares more than `max_overlap` of its words, the images are
    taken to be near-identical and the answer is `none_value`.
    """
    negative_vocab: set[str] = set()
    for tokens in negative_tokens:
        negative_vocab |= _content(tokens)
    best_value, best_overlap = none_value, 2.0
    for value, tokens in captions:
        words = _content(tokens)
        overlap = len(words & negative_vocab) / len(words) if words else 1.0
        if overlap < best_overlap:
            best_value, best_overlap = value, overlap
    return best_value if best_overlap <= max_overlap else none_value


def noisy(correct: str, choices: Sequence[str], *, accuracy: float, rng: random.Random) -> str:
    """`correct` with probability `accuracy`, otherwise a uniformly drawn allowed choice."""
    if rng.random() < accuracy:
        return correct
    return rng.choice(list(choices))


def answer_seconds(profile: WorkerProfile, rng: random.Random) -> float:
    """Time spent on one answer: log-normal around the profile's mean."""
    return profile.seconds_per_answer * rng.lognormvariate(0.0, 0.35) / 1.063


def judgment_from_overlap(
    caption_tokens: Sequence[str],
    image_captions: Sequence[Sequence[str]],
    *,
    own: bool = False,
    thresholds: tuple[float, float, float] = (0.45, 0.3, 0.15),
) -> str:
    """ECCV's four answers from the caption's best word overlap (Jaccard of content words)
    with the image's other captions; a caption written for the image is a YES."""
    if own:
        return "yes"
    words = _content(caption_tokens)
    best = 0.0
    for tokens in image_captions:
        other = _content(tokens)
        union = words | other
        if union:
            best = max(best, len(words & other) / len(union))
    yes, partial, mostly_no = thresholds
    if best >= yes:
        return "yes"
    if best >= partial:
        return "partially_yes"
    if best >= mostly_no:
        return "mostly_no"
    return "no"
