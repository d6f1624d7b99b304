"""Behaviour models of simulated crowd workers: seeded, pure, used by the `simulated` provider.

A worker has a behaviour: *careful* workers give the true answer (read off the latent world,
`pipeline.world`) with probability `accuracy` and otherwise one of the other allowed answers,
uniformly; *random* spammers pick uniformly among all answers; *constant* spammers always give
the same answer (YES where there is one: "always-YES"); *gold-aware* cheaters answer gold at
`gold_accuracy` and everything else at random, or by a shortcut (the constant answer) with
probability `lean`. Gold items are answered at `gold_accuracy`, which follows the worker's own
accuracy unless set. A `Population` mixes profiles in given shares (e.g. 70 % at 0.9, 20 % at
0.7, 10 % random spammers).

The harder world (issue 30): real crowds err together on hard items, lean to one side and use
a scale each in their own way. So a careful worker's chance of being right on one answer is
`accuracy` moved on the logit scale by the item's difficulty (a standard normal value the
world fixes per item, shared by every worker) times the worker's `sensitivity`, and by
`fatigue` per question already answered in the HIT; a share `lean` of its errors go to its
preferred answer (a side, YES) instead of spreading evenly. Ratings with `rating_noise` set
come from a continuous model: the latent value moved by `rating_shift` (lenient above 0,
harsh below), pulled to the middle of the scale by `central` (0..1), plus normal noise,
rounded. With the defaults every one of these is off and answers are independent, as the
closed forms of `pipeline.expectation` assume (`WorkerProfile.closed_form`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipeline.errors import InputError
from pipeline.world import World

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

BEHAVIOURS = ("careful", "random", "constant", "gold_aware")


@dataclass(frozen=True)
class WorkerProfile:
    accuracy: float = 0.9
    seconds_per_answer: float = 20.0
    gold_accuracy: float | None = None  # None: the worker's own accuracy
    behaviour: str = "careful"
    sensitivity: float = 0.0  # logits of accuracy lost per standard deviation of difficulty
    lean: float = 0.0  # share of errors (a cheater's answers) given to the preferred answer
    fatigue: float = 0.0  # logits of accuracy lost per question already answered in a HIT
    rating_noise: float | None = None  # None: ratings right at `accuracy`, like choices
    rating_shift: float = 0.0  # scale points added to the latent value (lenient > 0)
    central: float = 0.0  # pull of ratings towards the scale's middle (0..1)
    name: str = ""  # a label in reports (e.g. "fast careless")

    def __post_init__(self) -> None:
        for name in ("accuracy", "gold_accuracy", "lean", "central"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {value}")
        if self.seconds_per_answer <= 0:
            raise ValueError("seconds_per_answer must be positive")
        if self.behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {', '.join(BEHAVIOURS)}")
        if self.sensitivity < 0 or self.fatigue < 0 or (self.rating_noise or 0) < 0:
            raise ValueError("sensitivity, fatigue and rating_noise must not be negative")

    @property
    def gold(self) -> float:
        return self.accuracy if self.gold_accuracy is None else self.gold_accuracy

    @property
    def closed_form(self) -> bool:
        """Whether this worker's answers are independent draws at fixed accuracy (what the
        closed forms of `pipeline.expectation` assume)."""
        return (
            self.behaviour != "gold_aware"
            and self.sensitivity == self.lean == self.fatigue == 0
            and self.rating_noise is None
        )

    @property
    def cheater(self) -> bool:
        """Answers without looking (spammers and gold-aware cheaters)."""
        return self.behaviour != "careful"

    def label(self) -> str:
        if self.name:
            return self.name
        if self.behaviour == "careful":
            return f"accuracy {self.accuracy:g}"
        if self.behaviour == "gold_aware":
            return "gold-aware cheater"
        return "always-YES spammer" if self.behaviour == "constant" else "random spammer"


def answer_accuracy(
    profile: WorkerProfile, *, gold: bool = False, difficulty: float = 0.0, position: int = 0
) -> float:
    """P(right) of one careful answer: the profile's (gold) accuracy moved on the logit scale
    by the item's shared difficulty and the worker's fatigue."""
    base = profile.gold if gold else profile.accuracy
    shift = profile.sensitivity * difficulty + profile.fatigue * position
    if shift == 0 or base in (0.0, 1.0):
        return base
    logit = math.log(base / (1 - base)) - shift
    return 1 / (1 + math.exp(-logit))


def respond(
    profile: WorkerProfile,
    correct: Collection[str],
    choices: Sequence[str],
    rng: random.Random,
    *,
    gold: bool = False,
    constant: str | None = None,
    difficulty: float = 0.0,
    position: int = 0,
) -> str:
    """One answer among `choices` when any of `correct` is right (a careful worker picks one
    of them uniformly, or on an error one of the others: the preferred `constant` with
    probability `lean`, else uniformly)."""
    options = list(choices)
    preferred = constant if constant in options else options[0]
    if profile.behaviour == "random":
        return rng.choice(options)
    if profile.behaviour == "constant":
        return preferred
    if profile.behaviour == "gold_aware" and not gold:
        return preferred if rng.random() < profile.lean else rng.choice(options)
    right = [c for c in options if c in correct]
    wrong = [c for c in options if c not in correct]
    accuracy = answer_accuracy(profile, gold=gold, difficulty=difficulty, position=position)
    if right and (not wrong or rng.random() < accuracy):
        return rng.choice(right)
    if preferred in wrong and profile.lean and rng.random() < profile.lean:
        return preferred
    return rng.choice(wrong)


@dataclass(frozen=True)
class Asked:
    """Where a rating is asked: a gold item or not, the item's difficulty, the question's
    place in its HIT, and the highest point a careful rater gives on the task to an item whose
    latent value lies below it (`top`; None: the scale's top)."""

    gold: bool = False
    difficulty: float = 0.0
    position: int = 0
    top: int | None = None


def rate(
    profile: WorkerProfile,
    latent: float,
    points: Sequence[int],
    rng: random.Random,
    asked: Asked = Asked(),
    constant: int | None = None,
) -> int:
    """One rating among the integer `points` of a scale for an item whose latent value is
    `latent` (on the same scale). Without `rating_noise` a careful worker gives the rounded
    latent value at its accuracy, like a choice; with it, the continuous model of the module
    docstring (noise grows with difficulty and fatigue, as errors do for choices)."""
    gold, difficulty, position = asked.gold, asked.difficulty, asked.position
    lo, hi = min(points), max(points)
    truth = min(hi, max(lo, round(latent)))
    if profile.rating_noise is None or profile.behaviour != "careful":
        answer = respond(
            profile,
            {str(truth)},
            [str(p) for p in points],
            rng,
            gold=gold,
            constant=str(hi if constant is None else constant),
            difficulty=difficulty,
            position=position,
        )
        return int(answer)
    if gold and profile.gold_accuracy is not None and rng.random() < profile.gold_accuracy:
        return truth  # a worker who takes care on gold rates it as it is
    middle = (lo + hi) / 2
    value = middle + (latent + profile.rating_shift - middle) * (1 - profile.central)
    spread = profile.rating_noise * math.exp(
        0.5 * (profile.sensitivity * difficulty + profile.fatigue * position)
    )
    # Above `top` only for an item that is itself there (two near-identical pictures).
    top = hi if asked.top is None or latent >= asked.top + 0.5 else min(hi, asked.top)
    return min(top, max(lo, round(value + rng.gauss(0.0, spread))))


def answer_seconds(profile: WorkerProfile, rng: random.Random) -> float:
    """Time spent on one answer: log-normal around the profile's mean."""
    return profile.seconds_per_answer * rng.lognormvariate(0.0, 0.35) / 1.063


@dataclass(frozen=True)
class Population:
    """Worker profiles in shares; `profiles(n)` gives n workers in those shares (largest
    remainder), interleaved so that every prefix of the team is mixed too."""

    name: str
    groups: tuple[tuple[float, WorkerProfile], ...]
    # Settings of the `pipeline.world.World` this crowd was fitted with (the calibrated one).
    world: tuple[tuple[str, object], ...] = ()

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
        if seconds_per_answer is not None:  # a profile's speed relative to the default 20 s
            team = [
                replace(p, seconds_per_answer=seconds_per_answer * p.seconds_per_answer / 20.0)
                for p in team
            ]
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


# The "realistic" crowd (issue 30), calibrated by benchmarks/calibrate_world.py against BISON's
# stage conversions (91.56 %, 87.70 %), ECCV Table B.2's rank-1 shares and the agreement of
# Flickr8k-Expert's raters and Flickr8k-CrowdFlower's workers; the table in
# docs/quality.md says which figure each setting targets. Frozen before any policy or
# aggregation was tuned on it: change it only in a commit of its own, with the figures again.
_COLUMNS = (
    "name", "behaviour", "accuracy", "gold_accuracy", "sensitivity", "lean", "fatigue",
    "rating_noise", "rating_shift", "central", "seconds_per_answer",
)  # fmt: skip


def _table(name: str, rows: Sequence[tuple[float, tuple[object, ...]]]) -> Population:
    """A population from (share, profile settings in the order of `_COLUMNS`) rows."""
    return Population(
        name,
        tuple(
            (share, WorkerProfile(**dict(zip(_COLUMNS, values, strict=True))))  # type: ignore[arg-type]
            for share, values in rows
        ),
    )


REALISTIC = _table(
    "realistic",
    (
        # share    name                  behaviour   acc   gold  sens  lean  fatig noise shift cent  s
        (0.70, ("careful", "careful", 0.993, None, 1.5, 0.4, 0.005, 0.2, 0.0, 0.0, 20.0)),
        (0.13, ("lenient, leans left/YES", "careful", 0.993, None, 1.5, 0.7, 0.0, 0.25, 0.3, 0.0, 20.0)),
        (0.10, ("harsh, central", "careful", 0.993, None, 1.5, 0.2, 0.0, 0.25, -0.3, 0.2, 20.0)),
        (0.04, ("fast careless", "careful", 0.8, None, 0.6, 0.0, 0.03, 0.8, 0.0, 0.0, 7.0)),
        (0.03, ("gold-aware cheater", "gold_aware", 0.9, 0.95, 0.0, 0.5, 0.0, None, 0.0, 0.0, 5.0)),
    ),
)  # fmt: skip
# Other parameters, never used to tune anything: every figure is reported on it too.
HELD_OUT = _table(
    "held-out",
    (
        (0.65, ("careful", "careful", 0.985, None, 2.0, 0.5, 0.01, 0.3, 0.2, 0.0, 20.0)),
        (0.22, ("harsh, central", "careful", 0.97, None, 1.0, 0.0, 0.0, 0.35, -0.5, 0.35, 20.0)),
        (0.08, ("fast careless", "careful", 0.7, None, 0.4, 0.0, 0.05, 1.0, 0.0, 0.0, 6.0)),
        (0.05, ("gold-aware cheater", "gold_aware", 0.9, 0.9, 0.0, 0.8, 0.0, None, 0.0, 0.0, 4.0)),
    ),
)  # fmt: skip
POPULATIONS.update({REALISTIC.name: REALISTIC, HELD_OUT.name: HELD_OUT})


# The "calibrated" crowd and world (issue 48): the parameters `pipeline.calibration.fit` found
# (`python benchmarks/calibrate_world.py --fit`) against ECCV's HIT rejection after gold, Table
# B.2, BISON's funnel, CxC's bundled ratings and Flickr8k-Expert's agreement; Flickr8k-
# CrowdFlower's unanimity was held out. docs/quality.md "The calibrated world" has the table.
# Change it only in a commit of its own, with the table again.
CALIBRATED_FIT: dict[str, float] = {
    "spammers": 0.0,
    "careless": 0.0,
    "accuracy": 0.97,
    "sensitivity": 1.2,
    "fatigue": 0.02,
    "rating_noise": 0.5,
    "discriminable": 0.905,
    "bison_confusable": 0.05,
    "calibration_accuracy": 0.95,
    "eccv_own_doubtful": 0.2,
    "shift_bison": -0.6,
    "shift_eccv": 0.0,
    "shift_expert": -1.5,
}
# Which tasks' difficulty each fitted shift moves (the first part of a difficulty key).
SHIFTED = {
    "shift_bison": ("bison-pair", "bison-triple"),
    "shift_eccv": ("eccv", "eccv-gold"),
    "shift_expert": ("expert", "quality-rating"),
}
# Structure, not fitted: CxC's SIS raters almost never rated two different pictures 5 (0.1 %
# of pairs average 4.5 or more in the bundled files), so careful raters stop at 4 there
# unless the two pictures are near-identical (a latent 5).
CALIBRATED_TOP: tuple[tuple[str, int], ...] = (("sis", 4),)
CALIBRATED_CXC: tuple[tuple[str, tuple[float, ...]], ...] = (
    ("sis", (0.0519, 0.1499, 0.1445, 0.3199, 0.3328, 0.001)),
    ("sts", (0.2081, 0.2077, 0.2556, 0.2019, 0.1254, 0.0013)),
    ("sits", (0.0581, 0.0579, 0.0853, 0.1592, 0.0011, 0.6384)),
)


def calibrated_population(
    fit: dict[str, float], cxc: tuple[tuple[str, tuple[float, ...]], ...] = (), name: str = ""
) -> Population:
    """The calibrated crowd's structure with the fitted numbers of `fit` (the keys of
    `CALIBRATED_FIT`): careful, lenient and harsh raters as in "realistic", fast careless
    workers, random and always-YES spammers in equal shares, 3 % gold-aware cheaters."""
    a, sens, fat, noise = fit["accuracy"], fit["sensitivity"], fit["fatigue"], fit["rating_noise"]
    spam, careless = fit["spammers"], fit["careless"]
    careful = 1.0 - 0.13 - 0.10 - careless - spam - 0.03
    if careful <= 0:
        raise InputError("calibrated crowd: no careful workers left", field="population")
    rows = (
        (careful, ("careful", "careful", a, None, sens, 0.4, fat, noise, 0.0, 0.0, 20.0)),
        (0.13, ("lenient, leans YES", "careful", a, None, sens, 0.7, fat, noise, 0.3, 0.0, 20.0)),
        (0.10, ("harsh, central", "careful", a, None, sens, 0.2, fat, noise, -0.3, 0.2, 20.0)),
        (careless, ("fast careless", "careful", 0.75, None, 0.6, 0.0, 0.03, 1.0, 0.0, 0.0, 7.0)),
        (spam / 2, ("random spammer", "random", 0.9, None, 0.0, 0.0, 0.0, None, 0.0, 0.0, 5.0)),
        (spam / 2, ("always-YES spammer", "constant", 0.9, None, 0.0, 0.0, 0.0, None, 0.0, 0.0, 5.0)),
        (0.03, ("gold-aware cheater", "gold_aware", 0.9, 0.95, 0.0, 0.5, 0.0, None, 0.0, 0.0, 5.0)),
    )  # fmt: skip
    table = _table(name or "calibrated", [r for r in rows if r[0] > 0])
    world = (
        ("discriminable", fit["discriminable"]),
        ("bison_confusable", fit["bison_confusable"]),
        ("calibration_accuracy", fit["calibration_accuracy"]),
        ("eccv_own_doubtful", fit["eccv_own_doubtful"]),
        ("cxc_kind_shares", cxc),
        ("cxc_kind_top", CALIBRATED_TOP),
        ("difficulty_shift", tuple((t, fit[k]) for k, tasks in SHIFTED.items() for t in tasks)),
    )
    return replace(table, world=world)


CALIBRATED = calibrated_population(CALIBRATED_FIT, CALIBRATED_CXC)
POPULATIONS[CALIBRATED.name] = CALIBRATED


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


def world_config(population: Population) -> dict[str, Any]:
    """A run config's `world` entry for `population`'s fitted world ({} when it has none), so
    a Django run answered by that population lives in the same world as its Monte Carlo."""
    if not population.world:
        return {}
    return {"world": World(**dict(population.world)).settings()}  # type: ignore[arg-type]


def world_of(population: Population, seed: int) -> World:
    """The world a population is measured in: its fitted world settings, if any, at `seed`."""
    return World(seed=seed, **dict(population.world))  # type: ignore[arg-type]
