"""Closed-form expectations of what the pipeline exports, given the latent world's parameters
(`pipeline.world`) and the workers who answered (`pipeline.simulate`), to set beside what a
simulation measures.

Assumptions, stated so a reader can check them: each question's answer comes from a worker
drawn independently from the stage's mixture (the shares of answers each kind of worker gave);
a triple's verifiers are independent draws; review decisions and exclusions are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial

from pipeline.simulate import WorkerProfile
from pipeline.world import World

Mixture = Sequence[tuple[float, WorkerProfile]]


def wilson(successes: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion (95 % by default); (0, 1) when total is 0."""
    if total == 0:
        return 0.0, 1.0
    if not 0 <= successes <= total:
        raise ValueError(f"{successes} successes out of {total}")
    p = successes / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def _over(mixture: Mixture, fn) -> float:  # type: ignore[no-untyped-def]
    return sum(share * fn(profile) for share, profile in mixture)


def _binomial(n: int, k: int, p: float) -> float:
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


@dataclass(frozen=True)
class BisonExpectation:
    pairs: float
    triples_valid: float
    triples_invalid: float
    verified_valid: float
    verified_invalid: float

    @property
    def valid_share(self) -> float:
        """Of the triples stage 2 makes, the share that are valid."""
        total = self.triples_valid + self.triples_invalid
        return self.triples_valid / total if total else 0.0

    @property
    def precision(self) -> float:
        total = self.verified_valid + self.verified_invalid
        return self.verified_valid / total if total else 0.0

    @property
    def recall(self) -> float:
        """Of the valid triples stage 2 made, the share stage 3 keeps."""
        return self.verified_valid / self.triples_valid if self.triples_valid else 0.0


def _selection(profile: WorkerProfile, n: int, m: int) -> tuple[float, float]:
    """(P valid triple, P invalid triple) from one stage-2 answer on a pair whose positive has
    n captions, m of them valid (m = 0: the pair is not discriminable)."""
    if profile.behaviour == "random":
        return m / (n + 1), (n - m) / (n + 1)
    if profile.behaviour == "constant":  # always the first caption listed
        return m / n, (n - m) / n
    a = profile.accuracy
    if m == 0:
        return 0.0, 1 - a  # the right answer is "none"; errors pick a caption
    wrong = n - m + 1  # the invalid captions and "none"
    return a, (1 - a) * (n - m) / wrong


def _points_at_positive(profile: WorkerProfile, valid: bool, left: bool) -> float:
    """P(a verifier answers the positive's side), of four answers (left, right, both,
    neither), when the positive is shown on the left (`left`) or right; a careful verifier
    answers "both" for an invalid triple."""
    if profile.behaviour == "random":
        return 0.25
    if profile.behaviour == "constant":  # always "left"
        return 1.0 if left else 0.0
    a = profile.accuracy
    return a if valid else (1 - a) / 3


def all_of_distinct(mixture: Mixture, fn, draws: int, team: float | None) -> float:  # type: ignore[no-untyped-def]
    """P(all of `draws` distinct workers do something), worker w doing it with fn(w): the
    mean of the product over draws without replacement from a team of `team` workers in the
    mixture's shares (elementary symmetric polynomial by Newton's identities); independent
    draws when `team` is None."""
    if team is None:
        return _over(mixture, fn) ** draws
    power = [0.0] + [sum(s * team * fn(p) ** k for s, p in mixture) for k in range(1, draws + 1)]
    e = [1.0]
    for k in range(1, draws + 1):
        e.append(sum((-1) ** (i - 1) * e[k - i] * power[i] for i in range(1, k + 1)) / k)
    return e[draws] / math.comb(round(team), draws) if team >= draws else 0.0


def bison_expectation(
    caption_counts: Iterable[int],
    *,
    world: World,
    stage2: Mixture,
    stage3: Mixture,
    verifiers: int,
    stage3_team: float | None = None,
) -> BisonExpectation:
    """Expected triples and verified triples from stage-2 pairs whose positive images have
    `caption_counts` captions, under unanimity of `verifiers` distinct verifiers drawn from a
    team of `stage3_team` workers (None: an unlimited crowd)."""
    d, c = world.discriminable, world.caption_valid
    pairs = valid = invalid = 0.0
    for n in caption_counts:
        pairs += 1
        # m valid captions given discriminable: Binomial(n, c), at least one.
        for m in range(1, n + 1):
            pm = _binomial(n, m, c) + (_binomial(n, 0, c) if m == 1 else 0.0)
            for share, profile in stage2:
                v, i = _selection(profile, n, m)
                valid += d * pm * share * v
                invalid += d * pm * share * i
        for share, profile in stage2:
            invalid += (1 - d) * share * _selection(profile, n, 0)[1]
    # The side is drawn once per question, so verifiers who always answer "left" agree with
    # each other: average over the two sides.
    passes = {
        ok: sum(
            all_of_distinct(
                stage3, partial(_points_at_positive, valid=ok, left=side), verifiers, stage3_team
            )
            for side in (True, False)
        )
        / 2
        for ok in (True, False)
    }
    pass_valid, pass_invalid = passes[True], passes[False]
    return BisonExpectation(
        pairs=pairs,
        triples_valid=valid,
        triples_invalid=invalid,
        verified_valid=valid * pass_valid,
        verified_invalid=invalid * pass_invalid,
    )


@dataclass(frozen=True)
class EccvExpectation:
    candidates: float
    positive: float  # latent YES or Partially YES
    called_true: float  # latent positives the aggregated answers call positive
    called_false: float  # latent negatives called positive

    @property
    def precision(self) -> float:
        total = self.called_true + self.called_false
        return self.called_true / total if total else 0.0

    @property
    def recall(self) -> float:
        return self.called_true / self.positive if self.positive else 0.0


def _says_positive(profile: WorkerProfile, positive: bool) -> float:
    """P(YES or Partially YES) on a 4-level question whose truth is `positive` (errors
    uniform over the three other levels, one of which is on the same side)."""
    if profile.behaviour == "random":
        return 0.5
    if profile.behaviour == "constant":
        return 1.0
    a = profile.accuracy
    return a + (1 - a) / 3 if positive else 2 * (1 - a) / 3


def _majority_positive(p: float, judgments: int) -> float:
    """P(at least half of `judgments` independent answers are positive): ties count positive,
    as in the paper's reading."""
    need = math.ceil(judgments / 2)
    return sum(_binomial(judgments, k, p) for k in range(need, judgments + 1))


def eccv_expectation(
    ranks: Iterable[int | None],
    *,
    world: World,
    mixture: Mixture,
    judgments: int | Sequence[int] = 1,
) -> EccvExpectation:
    """Expected precision and recall of majority-vote positives over candidate pairs whose
    best proposal ranks are `ranks` (0: the image's own caption; None: no model's), each
    judged `judgments` times (one number for all, or one per pair, in the same order)."""
    says_true = _over(mixture, lambda p: _says_positive(p, True))
    says_false = _over(mixture, lambda p: _says_positive(p, False))
    ranks = list(ranks)
    counts = [judgments] * len(ranks) if isinstance(judgments, int) else list(judgments)
    if len(counts) != len(ranks):
        raise ValueError(f"{len(counts)} judgment counts for {len(ranks)} pairs")
    candidates = positive = called_true = called_false = 0.0
    for rank, k in zip(ranks, counts, strict=True):
        candidates += 1
        if rank is None:  # no model proposed it
            shares: tuple[float, ...] = (0.0, 0.0, 0.0, 1.0)
        elif rank == 0:  # the caption was written for the image
            shares = (1.0, 0.0, 0.0, 0.0)
        else:
            shares = world.eccv_shares(rank)
        share = shares[0] + shares[1]
        positive += share
        called_true += share * _majority_positive(says_true, k)
        called_false += (1 - share) * _majority_positive(says_false, k)
    return EccvExpectation(
        candidates=candidates,
        positive=positive,
        called_true=called_true,
        called_false=called_false,
    )
