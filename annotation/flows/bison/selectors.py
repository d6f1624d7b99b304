"""BISON reads: agreement and per-stage counts, aggregated in the database."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from django.db.models import Count, F, Q, QuerySet

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import NONE, BisonItemKind, BisonStage
from annotation.models import Answer, Assignment, Item, Run, RunStatus, Worker
from annotation.run_settings import settings_check
from annotation.selectors.counting import counted
from annotation.selectors.id_sets import ids_in
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.services.checks import check_int
from annotation.services.speed_policy import SPEED_DEFAULTS
from pipeline.aggregation import dawid_skene
from pipeline.errors import InputError

if TYPE_CHECKING:  # django-stubs' helper for querysets with annotations (not needed at run time)
    from django_stubs_ext import WithAnnotations

# How stage-3 answers verify a triple: "unanimity" (the paper: every verifier picks the
# positive), "majority" (more than half do) or "dawid_skene" (EM over each verifier's
# confusion of positive/negative/both/neither; verified when "positive" is most likely).
AGGREGATIONS = ("unanimity", "majority", "dawid_skene")
VERIFICATION_LABELS = ("positive", "negative", "both", "neither")


def bison_check_config(config: dict[str, Any]) -> dict[str, Any]:
    """A BISON run's settings: `verifiers` per triple (the paper: 2), the public `seed` and
    the stage-3 `aggregation`."""
    from annotation.flows.bison.settings import SETTINGS  # it reads AGGREGATIONS from here

    config = {"verifiers": 2, "seed": 0, **SPEED_DEFAULTS, **config}
    settings_check(SETTINGS, config)  # each declared setting's range or choices
    return config


def bison_required_verifiers(run: Run) -> int:
    try:
        return check_int({"verifiers": 2, **run.config}, "verifiers", low=1, high=10)
    except InputError as exc:  # stored before settings were checked
        raise ServiceError(f"run {run.pk} has a bad setting: {exc}") from None


def _answers_in(stage: str, prefix: str = "questions__") -> Q:
    return Q(**{f"{prefix}hit__batch__stage": stage}) & counted(f"{prefix}answers__assignment__")


class TripleVotes(TypedDict):
    votes: int
    positive_votes: int


def bison_triples_with_votes(*, run: Run) -> QuerySet[WithAnnotations[Item, TripleVotes]]:
    """Triples annotated with their number of verification answers and positive answers."""
    done = _answers_in(BisonStage.VERIFICATION)
    return Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE).annotate(
        votes=Count("questions__answers", filter=done),
        positive_votes=Count(
            "questions__answers", filter=done & Q(questions__answers__label="positive")
        ),
    )


def bison_verified_triples(*, run: Run) -> QuerySet[WithAnnotations[Item, TripleVotes]]:
    """Triples with at least the required number of verifiers that the run's aggregation
    verifies (by default every verifier matched them to their positive image)."""
    judged = bison_triples_with_votes(run=run).filter(votes__gte=bison_required_verifiers(run))
    aggregation = run.config.get("aggregation", "unanimity")
    if aggregation == "unanimity":
        return judged.filter(positive_votes=F("votes")).order_by("pk")
    if aggregation == "majority":
        return judged.filter(positive_votes__gt=F("votes") / 2.0).order_by("pk")
    rows = list(
        Answer.objects.filter(
            counted("assignment__"),
            question__item__in=judged,
            question__hit__batch__stage=BisonStage.VERIFICATION,
        ).values_list("question__item_id", "assignment__worker_id", "label")
    )
    if not rows:
        return judged.none()
    code = {label: n for n, label in enumerate(VERIFICATION_LABELS)}
    result = dawid_skene(
        np.array([r[0] for r in rows]),
        np.array([r[1] for r in rows]),
        np.array([code.get(r[2], 1) for r in rows]),
        k=len(VERIFICATION_LABELS),
    )
    chosen = [int(i) for i, label in zip(result.items, result.labels, strict=True) if label == 0]
    return judged.filter(ids_in("pk", chosen)).order_by("pk")


def _caption_selections(run: Run) -> QuerySet[Answer]:
    """Counted stage-2 answers that chose a caption (each makes a triple)."""
    return Answer.objects.filter(
        counted("assignment__"),
        question__hit__batch__run=run,
        question__hit__batch__stage=BisonStage.SELECTION,
    ).exclude(label=NONE)


def bison_selection_outcomes(*, run: Run) -> dict[int, dict[str, Any]]:
    """Per stage-2 worker (by Worker pk): how many of their caption selections stage 3 has
    judged (the required number of verifiers answered), and how many it rejected (no verifier
    matched the caption to its positive image: "bad caption selections will not be rewarded").
    Two reads (the triples' votes, aggregated once; the selections) matched by their pair and
    caption: a subquery per selection took seconds at 40,000 pairs."""
    required = bison_required_verifiers(run)
    votes = {
        (source, caption): (count, positive)
        for source, caption, count, positive in bison_triples_with_votes(run=run)
        .order_by()
        .values_list("source_id", "caption_id", "votes", "positive_votes")
    }
    tally: dict[int, list[int]] = {}
    for worker, pair, caption in _caption_selections(run).values_list(
        "assignment__worker_id", "question__item_id", "caption_id"
    ):
        count, positive = votes.get((pair, caption), (0, 0))
        if caption is None or count < required:
            continue
        entry = tally.setdefault(worker, [0, 0])
        entry[0] += 1
        entry[1] += positive == 0
    return {
        worker: {
            "judged": judged,
            "rejected": rejected,
            "rejected_share": round(rejected / judged, 4),
        }
        for worker, (judged, rejected) in sorted(tally.items())
    }


def bison_selector_report(
    *, run: Run, outcomes: dict[int, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Each stage-2 worker's judged and rejected selections, workers pseudonymised (for
    manifests and staff pages); `outcomes`: `bison_selection_outcomes`' if already read."""
    if outcomes is None:
        outcomes = bison_selection_outcomes(run=run)
    workers = Worker.objects.in_bulk(list(outcomes))
    return [
        {
            "worker": worker_pseudonym(
                provider=workers[pk].provider, external_id=workers[pk].external_id
            ),
            **outcome,
        }
        for pk, outcome in sorted(outcomes.items(), key=lambda kv: -kv[1]["rejected_share"])
    ]


def _workers(run: Run, stage: str) -> int:
    return (
        Assignment.objects.filter(counted(), hit__batch__run=run, hit__batch__stage=stage)
        .values("worker")
        .distinct()
        .count()
    )


def _median_seconds_per_answer(run: Run, stage: str) -> float | None:
    rows = (
        Assignment.objects.filter(
            counted(), hit__batch__run=run, hit__batch__stage=stage, submitted_at__isnull=False
        )
        .annotate(n=Count("answers"))
        .values_list("accepted_at", "submitted_at", "n")
    )
    per_answer = [(s - a).total_seconds() / n for a, s, n in rows if n and a and s]
    return round(statistics.median(per_answer), 2) if per_answer else None


def _rate(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def bison_stage_counts(
    *, run: Run, outcomes: dict[int, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Counts and conversion rates per stage, as the paper reports them; `outcomes`:
    `bison_selection_outcomes`' if already read."""
    selection = _answers_in(BisonStage.SELECTION)
    pair_counts = Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR).aggregate(
        pairs=Count("pk", distinct=True),
        judged=Count("pk", filter=selection, distinct=True),
    )
    triples = Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE)
    pairs_with_triple = triples.values("source").distinct().count()
    required = bison_required_verifiers(run)
    if outcomes is None:
        outcomes = bison_selection_outcomes(run=run)
    triple_counts = bison_triples_with_votes(run=run).aggregate(
        triples=Count("pk"),
        judged=Count("pk", filter=Q(votes__gte=required)),
    )
    verified = bison_verified_triples(run=run).count()
    return {
        "stage1": {"images": run.dataset.images.count(), "pairs": pair_counts["pairs"]},
        "stage2": {
            "pairs_judged": pair_counts["judged"],
            "pairs_with_triple": pairs_with_triple,
            "pairs_none": pair_counts["judged"] - pairs_with_triple,
            "triples": triple_counts["triples"],
            "conversion_percent": _rate(pairs_with_triple, pair_counts["judged"]),
            "workers": _workers(run, BisonStage.SELECTION),
            "median_seconds_per_annotation": _median_seconds_per_answer(run, BisonStage.SELECTION),
            # Selections stage 3 has judged, and those no verifier matched to the positive.
            "selections_judged": sum(o["judged"] for o in outcomes.values()),
            "selections_rejected": sum(o["rejected"] for o in outcomes.values()),
        },
        "stage3": {
            "verifiers_per_triple": required,
            "triples_judged": triple_counts["judged"],
            "verified": verified,
            "aggregation": run.config.get("aggregation", "unanimity"),
            "conversion_percent": _rate(verified, triple_counts["judged"]),
            "workers": _workers(run, BisonStage.VERIFICATION),
            "median_seconds_per_annotation": _median_seconds_per_answer(
                run, BisonStage.VERIFICATION
            ),
        },
    }


def bison_funnel(run: Run) -> list[tuple[str, int | None]]:
    """Pairs from stage 1, triples from stage 2 (counted from its answers, as stage 3's batch
    will make them), triples verified in stage 3; a stage with no batch yet is not started."""
    stages = set(run.batches.exclude(status="draft").values_list("stage", flat=True))
    pairs = Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR).count()
    selected = _caption_selections(run).values("question__item_id", "caption_id").distinct().count()
    return [
        ("image pairs", pairs if pairs or run.status != RunStatus.CREATED else None),
        ("triples", selected if BisonStage.SELECTION in stages else None),
        (
            "verified",
            bison_verified_triples(run=run).count() if BisonStage.VERIFICATION in stages else None,
        ),
    ]
