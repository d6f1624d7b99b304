"""The ECCV paper's analyses of a run: benchmark precision/recall (Table 2), agreement between
annotators (Kendall tau-b, Table A.1) and model bias (Appendix E)."""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import combinations
from typing import Any

from annotation.flows.eccv.models import ExternalPositive, Proposal
from annotation.flows.eccv.selectors import (
    eccv_judged_pairs,
    eccv_original_positives,
    eccv_positives,
)
from annotation.flows.eccv.services.embeddings import annotator_embeddings
from annotation.flows.eccv.services.rankings import eccv_saved_ranking
from annotation.flows.eccv.settings import eccv_settings
from annotation.models import Run
from pipeline.eccv_analysis import (
    JudgedPair,
    benchmark_precision_recall,
    list_ranks,
    model_bias,
    ranking_agreement,
)
from pipeline.eccv_embeddings import item_ranks


def _round(value: float) -> float | None:
    return None if math.isnan(value) else round(100 * value, 2)


def _round_mean(*values: float | None) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 3) if known else None


def eccv_model_agreement(*, run: Run, depth: int = 25) -> dict[str, dict[str, dict[str, Any]]]:
    """The paper's Table A.1 for the run's annotators, per direction: for every ordered pair
    (A, B), Kendall tau-b between A's top-`depth` list and B's ranks of the same items over
    the whole gallery (mean over queries), and where B ranks A's first item on average.

    B's ranks are exact for annotators with vectors; for a ranked-list annotator they are its
    list positions, and items it does not list are left out (`exact` false)."""
    annotators = list(run.annotators.order_by("name"))
    rankings = {a.name: eccv_saved_ranking(annotator=a) for a in annotators}
    vectors = {a.name: annotator_embeddings(annotator=a) for a in annotators}
    names = [a.name for a in annotators if rankings[a.name] is not None]
    table: dict[str, dict[str, dict[str, Any]]] = {"i2t": {}, "t2i": {}}
    for direction in ("i2t", "t2i"):
        for a in names:
            table[direction][a] = {}
            tops = {
                q: list(ranked)[:depth] for q, ranked in getattr(rankings[a], direction).items()
            }
            for b in names:
                if a == b:
                    continue
                other = vectors[b]
                if other is not None:
                    ranks: dict[int, list[float]] = {
                        q: [float(r) for r in rs]
                        for q, rs in item_ranks(other, direction, tops).items()
                    }
                else:
                    lists = getattr(rankings[b], direction)
                    ranks = {q: list_ranks(lists.get(q, []), top) for q, top in tops.items()}
                result = ranking_agreement(tops, ranks, depth=depth)
                table[direction][a][b] = {
                    "tau": None if math.isnan(result.mean_tau) else round(result.mean_tau, 3),
                    "queries": result.n_defined,
                    "mean_rank_of_top1": None
                    if math.isnan(result.mean_rank_of_top1)
                    else round(result.mean_rank_of_top1, 2),
                    "exact": other is not None,
                }
    return table


def eccv_report(*, run: Run) -> dict[str, Any]:
    judged = list(
        eccv_judged_pairs(run=run).values_list(
            "pk", "positive__coco_id", "caption__coco_id", "n", "n_yes", "n_positive"
        )
    )
    proposers: dict[tuple[int, str], set[str]] = defaultdict(set)
    for item, name, direction in Proposal.objects.filter(item__run=run).values_list(
        "item_id", "annotator__name", "direction"
    ):
        proposers[(item, direction)].add(name)

    verified: dict[str, dict[int, set[int]]] = {"i2t": defaultdict(set), "t2i": defaultdict(set)}
    seen: dict[str, dict[int, set[int]]] = {"i2t": defaultdict(set), "t2i": defaultdict(set)}
    pairs: dict[str, list[JudgedPair]] = {"i2t": [], "t2i": []}
    settings = eccv_settings(run)
    queries = {"i2t": set(settings.query_images), "t2i": set(settings.query_captions)}
    for item, image, caption, n, n_yes, n_positive in judged:
        score = (n_yes + 0.5 * (n_positive - n_yes)) / n  # 1 YES, 0.5 Partially YES (App. E)
        for direction, query, target in (("i2t", image, caption), ("t2i", caption, image)):
            if query not in queries[direction]:
                continue
            seen[direction][query].add(target)
            if n_positive >= n - n_positive:
                verified[direction][query].add(target)
            models = proposers.get((item, direction))
            if models:
                pairs[direction].append(
                    JudgedPair(
                        query_id=query, item_id=target, proposers=frozenset(models), score=score
                    )
                )

    original = eccv_original_positives(run=run)
    cxc: dict[str, dict[int, set[int]]] = {"i2t": defaultdict(set), "t2i": defaultdict(set)}
    for image, caption in ExternalPositive.objects.filter(run=run, source="cxc").values_list(
        "image__coco_id", "caption__coco_id"
    ):
        cxc["i2t"][image].add(caption)
        cxc["t2i"][caption].add(image)
    table2: dict[str, dict[str, Any]] = {}
    for name, bench in (("coco", original), ("cxc", cxc)):
        table2[name] = {}
        for direction in ("i2t", "t2i"):
            pr = benchmark_precision_recall(
                {q: v for q, v in bench[direction].items() if q in queries[direction]},
                verified[direction],
                judged=seen[direction],
            )
            table2[name][direction] = {
                "precision": _round(pr.precision),
                "recall": _round(pr.recall),
                "queries": pr.n_queries,
            }

    saved = {a.name: eccv_saved_ranking(annotator=a) for a in run.annotators.order_by("name")}
    rankings = {name: r for name, r in saved.items() if r is not None}
    agreement = eccv_model_agreement(run=run)
    # Symmetric summary: the mean of A's top-25 against B's ranks and B's against A's.
    tau = {
        f"{a} vs {b}": {
            d: _round_mean(agreement[d][a][b]["tau"], agreement[d][b][a]["tau"])
            for d in ("i2t", "t2i")
        }
        for a, b in combinations(sorted(rankings), 2)
    }
    bias: dict[str, Any] = {}
    for direction in ("i2t", "t2i"):
        if not pairs[direction] or not rankings:
            continue
        result = model_bias(
            pairs[direction], {m: getattr(r, direction) for m, r in rankings.items()}
        )
        bias[direction] = {
            "models": list(result.models),
            "all": {
                "recall_at_1": {m: _round(v) for m, v in result.all.recall_at_1.items()},
                "r_precision": {m: _round(v) for m, v in result.all.r_precision.items()},
            },
            "subsets": [
                {
                    "subset": list(s.subset),
                    "pairs": s.n_pairs,
                    "recall_at_1": {m: _round(v) for m, v in s.recall_at_1.items()},
                    "r_precision": {m: _round(v) for m, v in s.r_precision.items()},
                    "B_recall_at_1": _round(s.recall_bias.total),
                    "B_r_precision": _round(s.precision_bias.total),
                }
                for s in result.subsets
            ],
        }
    return {
        "benchmark_precision_recall": table2,
        "kendall_tau_b": tau,
        "model_bias": bias,
        "queries_without_positives": eccv_positives(run=run)["queries_without_positives"],
    }
