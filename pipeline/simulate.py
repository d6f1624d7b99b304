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

    def __post_init__(self) -> None:
        if not 0.0 <= self.accuracy <= 1.0:
            raise ValueError(f"accuracy must be within 0..1, got {self.accuracy}")
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
