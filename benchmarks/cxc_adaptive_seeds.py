"""CxC's adaptive ratings (3, then one more while the pair's interval is wider than ±0.5, up
to 7) against fixed 5, over seeds: through the services (`manage.py quality_sweep --flows cxc
--model-seeds 0 --seed S` per seed and population, each in a throw-away embedded installation)
and by the simulation's rule at the same size (`pipeline.flow_quality.adaptive_ratings_seed`,
80 pairs, 20 raters). One run of the sample is one draw of 80 pairs: issue 30 read a single
seed's 3.08 ratings per pair as a discrepancy. Prints the mean over seeds with a 95 % t
interval of ratings per pair, the model within ±0.5 of the latent value, and the model's 95 %
interval covering it.

    python benchmarks/cxc_adaptive_seeds.py [--seeds 10] [--populations realistic,held-out]
    python benchmarks/cxc_adaptive_seeds.py --log runs.txt   # summarise a saved run's lines
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROW = re.compile(r"^\s+cxc\s+\S+\s+(fixed 5|adaptive 3-7 ±0.5): (.*?)\s{2,}([\d.]+)%")


def _interval(values: list[float]) -> str:
    from scipy.special import stdtrit

    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:8.3f}"
    half = float(stdtrit(len(values) - 1, 0.975)) * statistics.stdev(values) / len(values) ** 0.5
    return f"{mean:8.3f} ({mean - half:.3f}-{mean + half:.3f})"


def services(populations: list[str], seeds: int) -> str:
    """The sweep's CxC runs, one installation per seed; their lines, headed per seed."""
    lines = []
    for population in populations:
        for seed in range(seeds):
            with tempfile.TemporaryDirectory() as var:
                done = subprocess.run(
                    [sys.executable, "manage.py", "quality_sweep", "--populations", population]
                    + ["--flows", "cxc", "--model-seeds", "0", "--seed", str(seed)],
                    cwd=ROOT,
                    env={**os.environ, "CROWDVL_VAR_DIR": var},
                    capture_output=True,
                    text=True,
                    check=True,
                )
            lines.append(f"### {population} seed {seed}")
            lines += [x for x in done.stdout.splitlines() if "CxC run" in x or ROW.match(x)]
            print(lines[-1], flush=True)
    return "\n".join(lines)


def summary(log: str) -> list[str]:
    found: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    population = ""
    for line in log.splitlines():
        if line.startswith("### "):
            population = line.split()[1]
        elif match := ROW.match(line):
            rule, measure, share = match.groups()
            if measure.startswith("ratings"):
                per = re.search(r"([\d.]+) ratings per pair", line)
                assert per is not None, line
                found[(population, rule, "ratings per pair")].append(float(per.group(1)))
            elif measure != "mean within ±0.5":
                found[(population, rule, measure)].append(float(share) / 100)
    return [
        f"services   {p:<9} {r:<18} {m:<24} {_interval(v)}  seeds {len(v)}"
        for (p, r, m), v in sorted(found.items())
    ]


def simulation(populations: list[str], seeds: int) -> list[str]:
    import numpy as np

    import pipeline.flow_quality as fq
    from pipeline.redundancy_scales import RatingRedundancy
    from pipeline.simulate import population_named

    last = {}
    fit = fq.rating_model

    def keep(*args, **kwargs):  # the rule's last fit: the one its figures come from
        last["fit"] = fit(*args, **kwargs)
        return last["fit"]

    fq.rating_model = keep
    out = []
    rules = (("adaptive 3-7 ±0.5", RatingRedundancy()), ("fixed 5", RatingRedundancy(5, 5)))
    for name in populations:
        population = population_named(name)
        for label, policy in rules:
            columns = defaultdict(list)
            for seed in range(seeds):
                spent, _ = fq.adaptive_ratings_seed(population, seed, 80, 20, policy)
                world, _, _ = fq._seeded(f"cxc-adaptive:{seed}", population, 20, hit=10)
                est = last["fit"]
                latent = np.array([fq._cxc_latent(world, int(i)) for i in est.items])
                columns["ratings per pair"].append(spent)
                columns["model within ±0.5"].append(
                    float((np.abs(est.value - latent) <= 0.5).mean())
                )
                columns["model interval covers"].append(
                    float(((est.low <= latent) & (latent <= est.high)).mean())
                )
            out += [
                f"simulation {name:<9} {label:<18} {m:<24} {_interval(v)}  seeds {seeds}"
                for m, v in columns.items()
            ]
    fq.rating_model = fit
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--populations", default="realistic,held-out")
    parser.add_argument("--log", help="summarise this saved log instead of running the services")
    args = parser.parse_args()
    populations = args.populations.split(",")
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
    log = Path(args.log).read_text() if args.log else services(populations, args.seeds)
    print("\n".join(summary(log) + simulation(populations, args.seeds)))


if __name__ == "__main__":
    main()
