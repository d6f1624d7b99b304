"""ECCV-style binary judgments asked for by fixed or adaptive redundancy, simulated: the world
and crowd `benchmarks/adaptive_redundancy.py` measures policies on and `pipeline.adaptive_cost`
takes an ECCV run's expected spend from.

Each seed draws a world (pipeline/world.py: latent 4-level labels by proposal rank, calibrated
to ECCV Table B.2), a team of simulated workers from a population (pipeline/simulate.py) and
candidate pairs at ranks 1-5. Each worker answers one gold item per 9 judgments; its
reliability is its smoothed gold accuracy so far. Adaptive policies (pipeline/redundancy.py)
ask in rounds, deciding between rounds which pairs a follow-up batch takes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pipeline.redundancy import RedundancyPolicy, Vote, decide, needs_more, reliability
from pipeline.simulate import POPULATIONS, WorkerProfile, respond
from pipeline.world import ECCV_LEVELS, World

POSITIVE = {"yes", "partially_yes"}


@dataclass
class Worker:
    profile: WorkerProfile
    gold_right: int = 0
    gold_seen: int = 0
    judgments: int = 0

    @property
    def reliability(self) -> float:
        return reliability(self.gold_right, self.gold_seen)


@dataclass
class Crowd:
    world: World
    team: list[Worker]
    rng: random.Random
    truth: list[str] = field(default_factory=list)

    def judge(self, item: int, exclude: set[int]) -> tuple[int, bool]:
        """One judgment by a worker not yet on the item; a gold item every 9 judgments."""
        choices = [i for i in range(len(self.team)) if i not in exclude]
        index = self.rng.choice(choices)
        worker = self.team[index]
        worker.judgments += 1
        if worker.judgments % 9 == 0:
            gold_positive = self.rng.random() < 0.5
            truth = "yes" if gold_positive else "no"
            said = respond(
                worker.profile,
                {truth},
                ECCV_LEVELS,
                self.rng,
                gold=True,
                constant="yes",
                position=worker.judgments % 20,
            )
            worker.gold_right += (said in POSITIVE) == gold_positive
            worker.gold_seen += 1
        # The harder world (issue 30): the pair's difficulty, shared by every worker, and the
        # judgment's place in a HIT of 20 (fatigue); no effect on the older populations.
        said = respond(
            worker.profile,
            {self.truth[item]},
            ECCV_LEVELS,
            self.rng,
            constant="yes",
            difficulty=self.world.difficulty("eccv", item, item),
            position=worker.judgments % 20,
        )
        return index, said in POSITIVE


def new_crowd(population: str, seed: int, items: int, workers: int) -> Crowd:
    world = World(seed=seed)
    rng = random.Random(seed)
    team = [Worker(p) for p in POPULATIONS[population].profiles(workers)]
    crowd = Crowd(world=world, team=team, rng=rng)
    crowd.truth = [ECCV_LEVELS[world.eccv_label(i, i, rank=1 + i % 5)] for i in range(items)]
    return crowd


def adaptive_votes(crowd: Crowd, policy: RedundancyPolicy) -> tuple[list[bool], int]:
    """(each pair's reading, judgments spent) under `policy`, in rounds of follow-up batches."""
    votes: list[list[tuple[int, bool]]] = [[] for _ in crowd.truth]

    def as_votes(got: list[tuple[int, bool]]) -> list[Vote]:
        return [(s, crowd.team[w].reliability) for w, s in got]

    judgments = 0
    while True:
        # Decided between rounds, on the reliabilities known then: one follow-up batch.
        open_items = [i for i, got in enumerate(votes) if needs_more(as_votes(got), policy)]
        if not open_items:
            break
        for item in open_items:
            votes[item].append(crowd.judge(item, {w for w, _ in votes[item]}))
            judgments += 1
    return [decide(as_votes(got), policy) for got in votes], judgments
