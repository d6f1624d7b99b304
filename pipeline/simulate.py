"""Behaviour models of simulated crowd workers: seeded, pure, used by the `simulated` provider.

A worker has a behaviour: *careful* workers give the true answer (read off the latent world,
`pipeline.world`) with probability `accuracy` and otherwise one of the other allowed answers,
uniformly; *random* spammers pick uniformly among all answers; *constant* spammers always give
the same answer (YES where there is one: "always-YES"). Gold items are answered at
`gold_accuracy`, which follows the worker's own accuracy unless set. A `Population` mixes
profiles in given shares (e.g. 70 % at 0.9, 20 % at 0.7, 10 % random spammers).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from pipeline.errors import InputError

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

BEHAVIOURS = ("careful", "random", "constant")


@dataclass(frozen=True)
class WorkerProfile:
    accuracy: float = 0.9
    seconds_per_answer: float = 20.0
    gold_accuracy: float | None = None  # None: the worker's own accuracy
    behaviour: str = "careful"

    def __post_init__(self) -> None:
        for name in ("accuracy", "gold_accuracy"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {value}")
        if self.seconds_per_answer <= 0:
            raise ValueError("seconds_per_answer must be positive")
        if self.behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {', '.join(BEHAVIOURS)}")

    @property
    def gold(self) -> float:
        return self.accuracy if self.gold_accuracy is None else self.gold_accuracy

    def label(self) -> str:
        if self.behaviour == "careful":
            return f"accuracy {self.accuracy:g}"
        return "always-YES spammer" if self.behaviour == "constant" else "random spammer"


def respond(
    profile: WorkerProfile,
    correct: Collection[str],
    choices: Sequence[str],
    rng: random.Random,
    *,
    gold: bool = False,
    constant: str | None = None,
) -> str:
    """One answer among `choices` when any of `correct` is right (a careful worker picks one
    of them uniformly, or on an error one of the others uniformly)."""
    options = list(choices)
    if profile.behaviour == "random":
        return rng.choice(options)
    if profile.behaviour == "constant":
        return constant if constant in options else options[0]
    right = [c for c in options if c in correct]
    wrong = [c for c in options if c not in correct]
    accuracy = profile.gold if gold else profile.accuracy
    if right and (not wrong or rng.random() < accuracy):
        return rng.choice(right)
    return rng.choice(wrong)


def answer_seconds(profile: WorkerProfile, rng: random.Random) -> float:
    """Time spent on one answer: log-normal around the profile's mean."""
    return profile.seconds_per_answer * rng.lognormvariate(0.0, 0.35) / 1.063


@dataclass(frozen=True)
class Population:
    """Worker profiles in shares; `profiles(n)` gives n workers in those shares (largest
    remainder), interleaved so that every prefix of the team is mixed too."""

    name: str
    groups: tuple[tuple[float, WorkerProfile], ...]

    def __post_init__(self) -> None:
        if not self.groups or abs(sum(s for s, _ in self.groups) - 1.0) > 1e-6:
            raise InputError(f"population {self.name!r}: shares must sum to 1", field="population")

    def counts(self, n: int) -> list[int]:
        exact = [share * n for share, _ in self.groups]
        counts = [int(x) for x in exact]
        by_remainder = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
        for i in by_remainder[: n - sum(counts)]:
            counts[i] += 1
        return counts

    def profiles(self, n: int, *, seconds_per_answer: float | None = None) -> list[WorkerProfile]:
        queues = [
            [profile] * count
            for (_, profile), count in zip(self.groups, self.counts(n), strict=True)
        ]
        team: list[WorkerProfile] = []
        while any(queues):  # round robin over the groups, largest first
            for queue in sorted(queues, key=len, reverse=True):
                if queue:
                    team.append(queue.pop())
        if seconds_per_answer is not None:
            team = [replace(p, seconds_per_answer=seconds_per_answer) for p in team]
        return team

    def describe(self) -> str:
        return ", ".join(f"{share:.0%} {profile.label()}" for share, profile in self.groups)


def uniform(accuracy: float) -> Population:
    return Population(f"uniform-{accuracy:g}", ((1.0, WorkerProfile(accuracy=accuracy)),))


POPULATIONS: dict[str, Population] = {
    p.name: p
    for p in (
        uniform(0.9),
        Population(
            "mixed",
            (
                (0.7, WorkerProfile(accuracy=0.9)),
                (0.2, WorkerProfile(accuracy=0.7)),
                (0.1, WorkerProfile(behaviour="random")),
            ),
        ),
        uniform(0.7),
        Population(
            "yes-spammers",
            (
                (0.8, WorkerProfile(accuracy=0.9)),
                (0.2, WorkerProfile(behaviour="constant")),
            ),
        ),
    )
}


def population_named(name: str) -> Population:
    """A preset by name, or `uniform-<accuracy>`."""
    if name in POPULATIONS:
        return POPULATIONS[name]
    if name.startswith("uniform-"):
        try:
            accuracy = float(name.removeprefix("uniform-"))
        except ValueError:
            accuracy = -1.0
        if 0.0 <= accuracy <= 1.0:
            return uniform(accuracy)
    raise InputError(
        f"unknown population {name!r} (known: {', '.join(POPULATIONS)}, uniform-<accuracy>)",
        field="population",
    )
