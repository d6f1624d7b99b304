"""What an adaptive-redundancy setting is expected to spend, before launch: judgments per item
at the fixed minimum (`start` each), as expected and at the maximum (`cap` each).

The expectation is a simulation of the policy's own rule (`pipeline.flow_quality`'s
`adaptive_ratings_seed` and `adaptive_preferences_seed`, `pipeline.binary_redundancy` for
ECCV) on the frozen realistic population (`pipeline.simulate.REALISTIC`), over `SEEDS` seeds of
`ITEMS` items. It is cached per process and per setting: the simulation takes about 0.1 s for
ratings and 0.03 s for preferences or ECCV's judgments, but the first rating one in a process
also imports scipy (~1.5 s), so `annotation/selectors/money/adaptive_cost.py` computes it when a
draft is made and keeps it in the shared cache; the launch page only reads it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import lru_cache

from pipeline.redundancy import RedundancyPolicy
from pipeline.redundancy_scales import PreferenceRedundancy, RatingRedundancy, preference_maximum

SEEDS = 3
ITEMS = 120
TEAM = 40


@dataclass(frozen=True)
class ExpectedJudgments:
    per_item: float  # mean over seeds
    low: float  # the lowest and highest seed's mean
    high: float
    start: int
    cap: int
    source: str

    def totals(self, items: int) -> dict[str, float]:
        """Judgments for `items` items: the fixed minimum, the expectation, the maximum."""
        return {
            "minimum": items * self.start,
            "expected": round(items * self.per_item, 1),
            "expected_low": round(items * self.low, 1),
            "expected_high": round(items * self.high, 1),
            "maximum": items * self.cap,
        }


def _summary(values: list[float], start: int, cap: int, what: str) -> ExpectedJudgments:
    return ExpectedJudgments(
        per_item=statistics.fmean(values),
        low=min(values),
        high=max(values),
        start=start,
        cap=cap,
        source=(
            f"simulation of this setting's rule on the realistic population ({SEEDS} seeds of "
            f"{ITEMS} {what}, {TEAM} workers; pipeline/adaptive_cost.py)"
        ),
    )


@lru_cache(maxsize=64)
def expected_ratings(
    policy: RatingRedundancy, points: tuple[int, ...], *, latent: str = "uniform"
) -> ExpectedJudgments:
    """Ratings per item under `policy` on a scale of `points`; `latent`: "cxc" draws the
    items' values as the world draws CxC's pairs (`World.cxc_latent`), "uniform" spreads
    them evenly over the scale (the world's caption quality)."""
    from pipeline.flow_quality import adaptive_ratings_seed  # scipy, numpy: only when asked
    from pipeline.simulate import REALISTIC

    def spread(world, i):  # type: ignore[no-untyped-def]
        return points[0] + (points[-1] - points[0]) * world.caption_quality(i, "rating")

    def cxc(world, i):  # type: ignore[no-untyped-def]
        return world.cxc_latent("sts", i, i + 10**6)

    values = [
        adaptive_ratings_seed(
            REALISTIC,
            seed,
            ITEMS,
            TEAM,
            policy,
            points=points,
            latent=cxc if latent == "cxc" else spread,
            key=f"cost-{latent}",
        )[0]
        for seed in range(SEEDS)
    ]
    return _summary(values, policy.start, policy.cap, "items")


@lru_cache(maxsize=64)
def expected_preferences(policy: PreferenceRedundancy) -> ExpectedJudgments:
    """Judgments per caption pair under `policy`."""
    from pipeline.flow_quality import adaptive_preferences_seed
    from pipeline.simulate import REALISTIC

    most = preference_maximum(policy)
    values = [
        adaptive_preferences_seed(REALISTIC, seed, ITEMS, max(TEAM, most), policy)[0]
        for seed in range(SEEDS)
    ]
    return _summary(values, policy.start, most, "caption pairs")


@lru_cache(maxsize=64)
def expected_binary(policy: RedundancyPolicy) -> ExpectedJudgments:
    """ECCV judgments per candidate pair under its binary `policy`, with the crowd and world
    of `benchmarks/adaptive_redundancy.py` (`pipeline.binary_redundancy`)."""
    from pipeline.binary_redundancy import adaptive_votes, new_crowd

    values = []
    for seed in range(SEEDS):
        _, judgments = adaptive_votes(new_crowd("realistic", seed, ITEMS, TEAM), policy)
        values.append(judgments / ITEMS)
    return _summary(values, policy.start, policy.cap, "candidate pairs")
