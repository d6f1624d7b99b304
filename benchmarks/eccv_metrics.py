"""Benchmark ECCV Caption's metrics (mAP@R, R-Precision, R@1/5/10) of one model, both
directions, against the eccv-caption package on the same rankings and positives.

Inputs (benchmarks/eccv_proposal.py's synthetic model at COCO 5k-test scale): 5,000 image
queries and 25,000 caption queries, top-`--metric-depth` rankings from
`pipeline.eccv_metrics.rankings_from_embeddings`, positives 3-7 captions per image (mean 5).

(a) `retrieval_metrics` on what `rankings_from_embeddings` returns (RankedLists: the lists
    with the matrix they came from, scored whole);
(b) `retrieval_metrics` on the same lists as plain dicts (the path for lists read from files);
(c) eccv-caption 0.1.0 (`compute_eccv_metrics` + `compute_r_at_k` for K = 5, 10): the baseline.

Timed in one process, the three interleaved, `--repeats` rounds; medians and ratios to (c).

    .venv/bin/python benchmarks/eccv_metrics.py [--repeats 7] [--images 5000]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from eccv_proposal import metric_inputs  # noqa: E402
from harness import blas_name, results_argument, results_tee  # noqa: E402

from pipeline.eccv_metrics import retrieval_metrics  # noqa: E402

KS = (1, 5, 10)


def ours(positives: dict[str, Any], rankings: dict[str, Any]) -> dict[str, dict[str, float]]:
    out = {}
    for direction in ("i2t", "t2i"):
        scores = retrieval_metrics(positives[direction], rankings[direction], ks=KS)
        out[direction] = {
            "map_at_r": scores.map_at_r,
            "r_precision": scores.r_precision,
            **{f"r{k}": v for k, v in scores.recall_at_k.items()},
        }
    return out


def theirs(positives: dict[str, Any], rankings: dict[str, Any]) -> dict[str, dict[str, float]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from eccv_caption._metrics import compute_eccv_metrics, compute_r_at_k

    out = {}
    for direction in ("i2t", "t2i"):
        found = compute_eccv_metrics(rankings[direction], positives[direction])
        out[direction] = {
            "map_at_r": float(found["eccv_map_at_r"]),
            "r_precision": float(found["eccv_rprecision"]),
            "r1": float(found["eccv_r1"]),
            **{
                f"r{k}": float(compute_r_at_k(rankings[direction], positives[direction], K=k))
                for k in (5, 10)
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--images", type=int, default=5000, help="5 captions each")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--metric-depth", type=int, default=50, help="ranking length")
    parser.add_argument("--seed", type=int, default=0)
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)
    print(
        f"python {platform.python_version()}, numpy {np.__version__} ({blas_name()}), "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start"
    )
    positives, table = metric_inputs(args)
    lists = {d: dict(table[d]) for d in table}
    # eccv-caption's functions print a progress bar through tqdm when it is installed.
    os.environ.setdefault("TQDM_DISABLE", "1")
    runs: dict[str, list[float]] = {"a": [], "b": [], "c": []}
    values: dict[str, Any] = {}
    calls = {
        "a": lambda: ours(positives, table),
        "b": lambda: ours(positives, lists),
        "c": lambda: theirs(positives, lists),
    }
    for _ in range(args.repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            values[name] = call()
            runs[name].append(time.perf_counter() - start)
    base = statistics.median(runs["c"])
    print(
        f"Metrics of one model, both directions: {len(positives['i2t']):,} image queries, "
        f"{len(positives['t2i']):,} caption queries, top-{args.metric_depth} rankings; mAP@R, "
        f"R-P, R@1, R@5, R@10; median of {args.repeats} interleaved rounds; load average "
        f"{os.getloadavg()[0]:.1f} at the end"
    )
    labels = {
        "a": "(a) retrieval_metrics, ranked matrix (RankedLists)",
        "b": "(b) retrieval_metrics, plain dict lists",
        "c": "(c) eccv-caption 0.1.0 (_metrics functions)",
    }
    header = f"{'measurement':<54}{'median s':>10}{'min s':>9}{'speed-up vs (c)':>17}"
    print(header)
    print("-" * len(header))
    for name, label in labels.items():
        median = statistics.median(runs[name])
        print(f"{label:<54}{median:>10.4f}{min(runs[name]):>9.4f}{base / median:>16.1f}x")
    worst = max(
        abs(values[name][d][key] - values["c"][d][key])
        for name in ("a", "b")
        for d in ("i2t", "t2i")
        for key in values["c"][d]
    )
    print(f"{'direction':<10}" + "".join(f"{k:>12}" for k in values["a"]["i2t"]))
    for direction in ("i2t", "t2i"):
        print(f"{direction:<10}" + "".join(f"{v:>12.6f}" for v in values["a"][direction].values()))
    print(f"largest |(a) or (b) - (c)| over all 10 numbers: {worst:.2e}")


if __name__ == "__main__":
    main()
