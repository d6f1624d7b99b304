"""Adaptive against fixed redundancy on the simulated world: precision, recall and spend of
ECCV-style positives over many seeds.

Each seed draws a world (pipeline/world.py: latent 4-level labels by proposal rank, calibrated
to ECCV Table B.2), a team of simulated workers from a population (pipeline/simulate.py), and
`--items` candidate pairs at ranks 1-5. Judgments come in HITs of 18 candidates + 2 gold items,
so every judgment costs 20/18 of an answer and each worker answers one gold item per 9
judgments; a worker's reliability is its smoothed gold accuracy so far. Fixed strategies ask k
workers per pair; adaptive ones (pipeline/redundancy.py) ask one, then more while the
posterior is below the confidence, up to the cap, in rounds of follow-up HITs.

    python benchmarks/adaptive_redundancy.py [--seeds 30] [--items 2000] [--plot out.png]

Prints one table per population: mean over seeds with a 95 % interval (t over seeds).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import results_argument, results_tee  # noqa: E402
from pipeline.binary_redundancy import POSITIVE, Crowd, adaptive_votes, new_crowd  # noqa: E402
from pipeline.redundancy import RedundancyPolicy, decide  # noqa: E402
from pipeline.simulate import POPULATIONS  # noqa: E402

HIT_REWARD_WITH_FEE = 1.40 * 1.20  # ECCV round 1 reward plus MTurk's 20 % fee
CANDIDATES_PER_HIT = 18


def score(crowd: Crowd, called: list[bool], judgments: int) -> dict[str, float]:
    truth = [t in POSITIVE for t in crowd.truth]
    tp = sum(1 for c, t in zip(called, truth, strict=True) if c and t)
    positives, said = sum(truth), sum(called)
    items = len(truth)
    return {
        "precision": tp / said if said else 0.0,
        "recall": tp / positives if positives else 0.0,
        "judgments": judgments / items,
        "spend": judgments / CANDIDATES_PER_HIT * HIT_REWARD_WITH_FEE * 1000 / items,
    }


def fixed(crowd: Crowd, k: int, weighted: bool) -> dict[str, float]:
    policy = RedundancyPolicy(start=k, cap=k)
    votes: list[list[tuple[int, bool]]] = [[] for _ in crowd.truth]
    for _ in range(k):  # rounds, so gold estimates grow as in the app
        for item, got in enumerate(votes):
            got.append(crowd.judge(item, {w for w, _ in got}))
    called = []
    for got in votes:
        if weighted:
            called.append(decide([(s, crowd.team[w].reliability) for w, s in got], policy))
        else:  # the paper's reading: at least half say positive
            called.append(2 * sum(s for _, s in got) >= len(got))
    return score(crowd, called, k * len(votes))


def adaptive(crowd: Crowd, policy: RedundancyPolicy) -> dict[str, float]:
    called, judgments = adaptive_votes(crowd, policy)
    return score(crowd, called, judgments)


def interval(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    t = 2.045 if len(values) == 30 else 2.093 if len(values) == 20 else 1.96
    return mean, t * statistics.stdev(values) / math.sqrt(len(values))


STRATEGIES: list[tuple[str, object]] = [
    ("fixed 1", ("fixed", 1, False)),
    ("fixed 2 (majority, ties +)", ("fixed", 2, False)),
    ("fixed 3 (majority)", ("fixed", 3, False)),
    ("fixed 3 (gold-weighted)", ("fixed", 3, True)),
    ("fixed 5 (majority)", ("fixed", 5, False)),
    ("adaptive 2-3, conf 0.98", ("adaptive", RedundancyPolicy(start=2, cap=3, confidence=0.98))),
    ("adaptive 1-5, conf 0.99", ("adaptive", RedundancyPolicy(cap=5, confidence=0.99))),
    (
        "precision-first 1-5 .98/.75",
        ("adaptive", RedundancyPolicy(cap=5, confidence=0.98, confidence_negative=0.75)),
    ),
    (
        "precision-first 1-5 .98/.6",
        ("adaptive", RedundancyPolicy(cap=5, confidence=0.98, confidence_negative=0.6)),
    ),
]


def run(
    population: str, seeds: range, items: int, workers: int
) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {}
    for name, spec in STRATEGIES:
        for seed in seeds:
            crowd = new_crowd(population, seed, items, workers)
            if spec[0] == "fixed":  # type: ignore[index]
                _, k, weighted = spec  # type: ignore[misc]
                got = fixed(crowd, k, weighted)
            else:
                got = adaptive(crowd, spec[1])  # type: ignore[index]
            for key, value in got.items():
                results.setdefault(name, {}).setdefault(key, []).append(value)
    return results


def print_table(population: str, results: dict[str, dict[str, list[float]]]) -> None:
    base = statistics.fmean(results["fixed 3 (majority)"]["spend"])
    base_precision = statistics.fmean(results["fixed 3 (majority)"]["precision"])
    base_recall = statistics.fmean(results["fixed 3 (majority)"]["recall"])
    print(f"\npopulation {population}: {POPULATIONS[population].describe()}")
    print(
        f"{'strategy':<28} {'judgments/pair':>15} {'$ per 1000 pairs':>17} {'vs fixed 3':>10} "
        f"{'precision %':>15} {'recall %':>15}  goal"
    )
    for name, values in results.items():
        j, jh = interval(values["judgments"])
        s, sh = interval(values["spend"])
        p, ph = interval(values["precision"])
        r, rh = interval(values["recall"])
        goal = ""
        if not name.startswith("fixed"):
            ok = p >= base_precision - 0.005 and r >= base_recall - 0.01 and s <= 0.7 * base
            goal = "meets" if ok else "misses"
        print(
            f"{name:<28} {j:>8.3f}±{jh:<6.3f} {s:>10.2f}±{sh:<6.2f} {s / base:>9.2f}x "
            f"{100 * p:>8.2f}±{100 * ph:<5.2f} {100 * r:>8.2f}±{100 * rh:<5.2f}  {goal}"
        )


def plot(path: str, all_results: dict[str, dict[str, dict[str, list[float]]]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed (pip install -e '.[bench]'): no plot at {path}")
        return
    fig, axes = plt.subplots(1, len(all_results), figsize=(6 * len(all_results), 4.5))
    for ax, (population, results) in zip(
        axes if len(all_results) > 1 else [axes], all_results.items(), strict=True
    ):
        for name, values in results.items():
            s, sh = interval(values["spend"])
            p, ph = interval(values["precision"])
            marker = "o" if name.startswith("fixed") else "s"
            ax.errorbar(s, 100 * p, xerr=sh, yerr=100 * ph, fmt=marker, capsize=3, label=name)
        ax.set_title(f"{population}")
        ax.set_xlabel("spend, $ per 1000 pairs (reward + fee, gold included)")
        ax.set_ylabel("precision of positives, %")
        ax.grid(alpha=0.3)
    axes_list = axes if len(all_results) > 1 else [axes]
    axes_list[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    # The policies' thresholds were chosen on seeds 0-3; the table is measured on others.
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=60)
    parser.add_argument("--populations", default="realistic,mixed,uniform-0.9")
    parser.add_argument("--plot", default="benchmarks/results/adaptive_redundancy.png")
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)
    all_results = {}
    for population in args.populations.split(","):
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        all_results[population] = run(population, seeds, args.items, args.workers)
        print_table(population, all_results[population])
    print(
        f"\n{args.seeds} seeds (from {args.first_seed}) x {args.items} pairs, {args.workers} workers; ± is the 95 % "
        "interval over seeds; goal: precision within 0.5 points and recall within 1 point of "
        "fixed 3 (majority) for >= 30 % less spend"
    )
    if args.plot:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        plot(args.plot, all_results)


if __name__ == "__main__":
    main()
