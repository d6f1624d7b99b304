"""The figures a named population is calibrated against, measured by Monte Carlo on the
answer rules of the simulated crowd (pipeline/simulate.py, pipeline/world.py), beside the
published or sampled figure each one targets.

    python benchmarks/calibrate_world.py [--population realistic] [--items 20000] [--seed 0]
    python benchmarks/calibrate_world.py --table [--population calibrated] [--cxc data/sample/cxc]
    python benchmarks/calibrate_world.py --fit [--rounds 2]

`--table` prints the calibration table of issue 48 (`pipeline.calibration`: each published
figure and its interval beside the simulated one with its interval over seeds, fitted or held
out); `--fit` runs the search that found `CALIBRATED_FIT` (pipeline/simulate.py) from those
values, prints the parameters to store and the table of the result.

Targets (what the paper or data gives; what is simulated):
- BISON stage 2, pairs -> triples, 91.56 % (BISON paper: 67,564 -> 61,861): share of stage-2
  answers that pick a caption rather than "none";
- BISON stage 3, triples -> verified, 87.70 % (61,861 -> 54,253): share of triples that both
  verifiers point at the positive image;
- ECCV Caption Table B.2, rank 1 (five models' mean): 46.4 / 33.1 / 10.5 / 4.6 %... shares of
  answers per level at rank 1 (the world is deconvolved at its calibration accuracy);
- Flickr8k-Expert, pairwise exact agreement of the three experts on the 4-point scale, with
  latent values the sample's own mean ratings, and Flickr8k-CrowdFlower, three yes/no judgments
  unanimous, with each item's truth the sample's majority: both measured on the bundled
  samples (tests/data/flickr8k, derived layout) by `sample_figures`.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline import calibration  # noqa: E402
from pipeline.flickr8k import load_derived  # noqa: E402
from pipeline.simulate import (  # noqa: E402
    CALIBRATED_CXC,
    CALIBRATED_FIT,
    Asked,
    Population,
    calibrated_population,
    population_named,
    rate,
    respond,
)
from pipeline.world import ECCV_LEVELS, World, table_b2_shares  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "flickr8k"
CXC = Path(__file__).resolve().parent.parent / "data" / "sample" / "cxc"
SIDES = ("left", "right", "both", "neither")


def bison(world: World, team, items: int, rng: random.Random) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    triples = verified = 0
    for i in range(items):
        captions = [10 * i + k for k in range(5)]
        valid = world.bison_valid_captions(i, i + 10**6, captions)
        choices = [str(c) for c in captions] + ["none"]
        worker = rng.choice(team)
        answer = respond(
            worker,
            {str(c) for c in valid} or {"none"},
            choices,
            rng,
            difficulty=world.difficulty("bison-pair", i, i + 10**6),
            position=rng.randrange(10),
        )
        if answer == "none":
            continue
        triples += 1
        side = rng.choice(["left", "right"])
        correct = {side} if int(answer) in valid else {"both"}
        hard = world.difficulty("bison-triple", i, i + 10**6, answer)
        votes = [
            respond(
                w, correct, SIDES, rng, constant="left", difficulty=hard, position=rng.randrange(10)
            )
            for w in rng.sample(team, 2)
        ]
        verified += all(v == side for v in votes)
    return triples / items, verified / max(1, triples)


def eccv_rank1(world: World, team, items: int, rng: random.Random) -> list[float]:  # type: ignore[no-untyped-def]
    counts = [0] * 4
    for i in range(items):
        truth = ECCV_LEVELS[world.eccv_label(i, i + 10**6, rank=1)]
        answer = respond(
            rng.choice(team),
            {truth},
            ECCV_LEVELS,
            rng,
            constant="yes",
            difficulty=world.difficulty("eccv", i, i + 10**6),
            position=rng.randrange(20),
        )
        counts[ECCV_LEVELS.index(answer)] += 1
    return [c / items for c in counts]


def _expert_triples() -> list[list[float]]:
    """The three experts' scores of each judged caption (the derived layout lists one
    judgement per score)."""
    scores: dict[tuple[str, str], list[float]] = {}
    for j in load_derived(DATA / "flickr8k_expert.sample.derived.json"):
        scores.setdefault((j.image_id, j.caption), []).append(j.rating)
    return [v for v in scores.values() if len(v) == 3]


def expert_agreement(world: World, team, rng: random.Random) -> float:  # type: ignore[no-untyped-def]
    same = []
    for n, scores in enumerate(_expert_triples() * 20):
        latent = statistics.mean(scores)
        hard = world.difficulty("expert", n)
        ratings = [
            rate(w, latent, (1, 2, 3, 4), rng, Asked(difficulty=hard, position=rng.randrange(10)))
            for w in rng.sample(team, 3)
        ]
        same += [a == b for a, b in itertools.combinations(ratings, 2)]
    return sum(same) / len(same)


def crowdflower_unanimity(world: World, team, rng: random.Random) -> float:  # type: ignore[no-untyped-def]
    shares = [j.rating for j in load_derived(DATA / "crowdflower_flickr8k.sample.derived.json")]
    unanimous = []
    for n, share in enumerate(shares * 5):
        truth = "yes" if share > 0.5 else "no"
        hard = world.difficulty("crowdflower", n)
        votes = {
            respond(w, {truth}, ("yes", "no"), rng, constant="yes", difficulty=hard)
            for w in rng.sample(team, 3)
        }
        unanimous.append(len(votes) == 1)
    return sum(unanimous) / len(unanimous)


def sample_figures() -> tuple[float, float]:
    """(experts' pairwise exact agreement, CrowdFlower's unanimous share) of the samples."""
    pairs = [a == b for s in _expert_triples() for a, b in itertools.combinations(s, 2)]
    shares = [j.rating for j in load_derived(DATA / "crowdflower_flickr8k.sample.derived.json")]
    return sum(pairs) / len(pairs), sum(s in (0.0, 1.0) for s in shares) / len(shares)


def _percent(value: float, unit: str) -> str:
    return "-" if value != value else f"{100 * value:.1f}" if unit == "%" else f"{value:.2f}"


def print_table(population: Population, settings: calibration.Settings, cxc: Path) -> None:
    rows = calibration.table(population, settings, calibration.targets(DATA, cxc))
    print(f"population {population.name}: {population.describe()}")
    print(f"world: {dict(population.world)}")
    print(f"{settings.seeds} seeds of {settings.items} BISON pairs (ECCV HITs a fifth, CxC pairs")
    print("a third per task); % unless a mean; 95 % intervals")
    print(
        f"| {'figure':<42} | {'published':>9} | {'interval':>11} | {'simulated':>9} | "
        f"{'interval':>11} | role | lands |"
    )
    print(f"|{'-' * 44}|{'-' * 11}:|{'-' * 13}:|{'-' * 11}:|{'-' * 13}:|------|-------|")
    for r in rows:
        u = r["unit"]
        pub = "-" if r["published"] != r["published"] else _percent(r["published"], u)
        pi = "-" if pub == "-" else "-".join(_percent(v, u) for v in r["published_interval"])
        si = "-".join(_percent(v, u) for v in r["simulated_interval"])
        role = "held out" if r["held_out"] else "fitted" if pub != "-" else "check"
        lands = {True: "yes", False: "NO", None: "-"}[r["lands"]]
        print(f"| {r['label']:<42} | {pub:>9} | {pi:>11} | {_percent(r['simulated'], u):>9} | "
              f"{si:>11} | {role} | {lands} |")  # fmt: skip


def run_fit(settings: calibration.Settings, cxc: Path, rounds: int) -> None:
    published = calibration.targets(DATA, cxc)
    scores = calibration.cxc_ratings(cxc)
    found, shares = calibration.fit(
        CALIBRATED_FIT, CALIBRATED_CXC, published, scores, settings, rounds=rounds, log=print
    )
    print("CALIBRATED_FIT =", {k: round(v, 4) for k, v in found.items()})
    print("CALIBRATED_CXC =", shares)
    check = calibration.Settings(DATA, items=settings.items, seeds=5, first_seed=100)
    print_table(calibrated_population(found, shares), check, cxc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--population", default=None, help="realistic (calibrated for --table)")
    parser.add_argument("--table", action="store_true", help="the calibration table")
    parser.add_argument("--fit", action="store_true", help="run the fit, then the table")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the fit's search")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the table")
    parser.add_argument("--cxc", type=Path, default=CXC, help="folder of CxC's CSV files")
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--calibration-accuracy",
        type=float,
        default=World.calibration_accuracy,
        help="the world's ECCV calibration (a run's world setting)",
    )
    args = parser.parse_args()
    if args.fit:
        run_fit(calibration.Settings(DATA, items=min(args.items, 3000)), args.cxc, args.rounds)
        return
    if args.table:
        settings = calibration.Settings(DATA, items=min(args.items, 6000), seeds=args.seeds)
        print_table(population_named(args.population or "calibrated"), settings, args.cxc)
        return
    population = population_named(args.population or "realistic")
    team = population.profiles(100)
    world = World(seed=args.seed, calibration_accuracy=args.calibration_accuracy)
    rng = random.Random(args.seed)
    stage2, stage3 = bison(world, team, args.items, rng)
    shares = eccv_rank1(world, team, args.items, rng)
    paper = table_b2_shares(1)
    expert, cf = sample_figures()
    print(f"population {population.name}: {population.describe()}")
    print(f"{'figure':<44} {'simulated':>10} {'target':>10}")
    rows = [
        ("BISON stage 2 pairs -> triples", stage2, 0.9156),
        ("BISON stage 3 triples -> verified", stage3, 0.8770),
        *(
            (f"ECCV rank-1 share {level}", share, target)
            for level, share, target in zip(ECCV_LEVELS, shares, paper, strict=True)
        ),
        ("Flickr8k-Expert pairwise exact agreement", expert_agreement(world, team, rng), expert),
        ("Flickr8k-CrowdFlower 3 votes unanimous", crowdflower_unanimity(world, team, rng), cf),
    ]
    for name, value, target in rows:
        print(f"{name:<44} {100 * value:>9.2f}% {100 * target:>9.2f}%")


if __name__ == "__main__":
    main()
