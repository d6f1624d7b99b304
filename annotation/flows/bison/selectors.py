"""BISON reads: agreement and per-stage counts, aggregated in the database."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.db.models import Count, F, Q, QuerySet

from annotation.errors import ServiceError
from annotation.flows.bison.settings import BisonSettings
from annotation.flows.bison.vocabulary import (
    NONE,
    VERIFICATION_LABELS,
    BisonItemKind,
    BisonStage,
)
from annotation.models import Answer, Assignment, Item, Run, RunStatus
from annotation.run_settings import run_settings
from annotation.selectors.arrow_rows import arrow_rows, numpy_ints
from annotation.selectors.counting import counted, counted_reviewed
from annotation.selectors.id_sets import ids_in
from annotation.selectors.pseudonyms import run_worker_pseudonyms
from pipeline.aggregation import dawid_skene
from pipeline.dense import distinct_ints
from pipeline.errors import InputError

if TYPE_CHECKING:  # django-stubs' helper for querysets with annotations (not needed at run time)
    from django_stubs_ext import WithAnnotations

    from annotation.flows.bison.tally import BisonTally


def bison_settings(run: Run) -> BisonSettings:
    """The BISON run's settings: `verifiers` per triple (the paper: 2), the public `seed` and
    the stage-3 `aggregation`."""
    try:
        return run_settings(run, BisonSettings)
    except InputError as exc:  # stored before settings were checked
        raise ServiceError(f"run {run.pk} has a bad setting: {exc}") from None


def bison_required_verifiers(run: Run) -> int:
    return bison_settings(run).verifiers


def _answers_in(stage: str, prefix: str = "questions__") -> Q:
    return Q(**{f"{prefix}hit__batch__stage": stage}) & counted_reviewed(f"{prefix}answers__")


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
    aggregation = bison_settings(run).aggregation_rule
    # The same rules over vote arrays: `verified_by_votes` (the export's and counts' reads).
    if aggregation == "unanimity":
        return judged.filter(positive_votes=F("votes")).order_by("pk")
    if aggregation == "majority":
        return judged.filter(positive_votes__gt=F("votes") / 2.0).order_by("pk")
    rows = list(
        Answer.objects.filter(
            counted_reviewed(),
            question__item__in=judged,
            question__hit__batch__stage=BisonStage.VERIFICATION,
        ).values_list("question__item_id", "assignment__worker_id", "label")
    )
    code = {label: n for n, label in enumerate(VERIFICATION_LABELS)}
    chosen = dawid_skene_verified(
        items=np.array([r[0] for r in rows]),
        workers=np.array([r[1] for r in rows]),
        codes=np.array([code.get(r[2], 1) for r in rows]),
    )
    if not chosen.size:
        return judged.none()
    return judged.filter(ids_in("pk", chosen.tolist())).order_by("pk")


def verified_by_votes(*, aggregation: str, votes: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Per judged triple, whether `bison_verified_triples`' "unanimity" or "majority" rule
    verifies it, from its number of votes and of positive votes."""
    if aggregation == "unanimity":
        return positive == votes
    if aggregation == "majority":
        return positive > votes / 2.0
    raise ValueError(f"no vote rule for the aggregation {aggregation!r}")


def dawid_skene_verified(
    *, items: np.ndarray, workers: np.ndarray, codes: np.ndarray
) -> np.ndarray:
    """The items whose most likely class under Dawid-Skene is "positive", from the answers of
    judged triples (`codes`: positions in VERIFICATION_LABELS, anything else "negative")."""
    if not items.size:
        return np.zeros(0, dtype=np.int64)
    result = dawid_skene(items, workers, codes, k=len(VERIFICATION_LABELS))
    return np.asarray(result.items)[np.asarray(result.labels) == 0].astype(np.int64)


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
    Read with the run's tally (`tally.py`)."""
    from annotation.flows.bison.tally import bison_tally  # it builds on this module's rules

    return bison_tally(run=run).outcomes


def bison_selector_report(
    *, run: Run, outcomes: dict[int, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Each stage-2 worker's judged and rejected selections, workers pseudonymised (for
    manifests and staff pages); `outcomes`: `bison_selection_outcomes`' if already read."""
    if outcomes is None:
        outcomes = bison_selection_outcomes(run=run)
    names = run_worker_pseudonyms(run=run)  # the run's workers, joined by run (no id list)
    return [
        {"worker": names[pk], **outcome}
        for pk, outcome in sorted(outcomes.items(), key=lambda kv: -kv[1]["rejected_share"])
    ]


_MOMENT = pa.timestamp("us", tz="UTC")
_NO_MOMENT = np.iinfo(np.int64).min


def _crowd_per_stage(run: Run) -> dict[str, dict[str, Any]]:
    """Per stage: the distinct workers of the run's counted assignments, and the median of
    their seconds per answer (submitted less accepted, over the assignment's answers; those
    submitted with answers), from one read of the assignments as Arrow microseconds (no
    datetime per row)."""
    table = arrow_rows(
        Assignment.objects.filter(counted(), hit__batch__run=run).annotate(n=Count("answers")),
        {
            "stage": ("hit__batch__stage", pa.string()),
            "worker": ("worker_id", pa.int64()),
            "accepted": ("accepted_at", _MOMENT),
            "submitted": ("submitted_at", _MOMENT),
            "n": ("n", pa.int64()),
        },  # fmt: skip
    )
    stages = np.array(table.column("stage").to_pylist(), dtype=object)
    worker, n = numpy_ints(table.column("worker")), numpy_ints(table.column("n"))
    accepted, submitted = (
        numpy_ints(pc.cast(table.column(name), pa.int64()), missing=_NO_MOMENT)
        for name in ("accepted", "submitted")
    )
    timed = (n > 0) & (accepted != _NO_MOMENT) & (submitted != _NO_MOMENT)
    out: dict[str, dict[str, Any]] = {}
    for stage in BisonStage:
        of_stage = stages == str(stage)
        kept = of_stage & timed
        # Microseconds / 1e6 is timedelta.total_seconds()'s exact division, then per answer.
        per_answer = (submitted[kept] - accepted[kept]) / 1e6 / n[kept]
        median = round(statistics.median(per_answer.tolist()), 2) if per_answer.size else None
        out[stage] = {
            "workers": int(distinct_ints(worker[of_stage]).size),
            "median_seconds_per_annotation": median,
        }
    return out


def _rate(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def bison_stage_counts(*, run: Run, tally: BisonTally | None = None) -> dict[str, Any]:
    """Counts and conversion rates per stage, as the paper reports them; `tally`: the run's
    (`tally.bison_tally`) if already read."""
    from annotation.flows.bison.lookup import trap_answers  # it builds on this module's rules
    from annotation.flows.bison.tally import bison_tally

    if tally is None:
        tally = bison_tally(run=run)
    pairs = Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR).count()
    outcomes = tally.outcomes
    crowd = _crowd_per_stage(run)
    judged = int(tally.judged.sum())
    verified = int(tally.verified.sum())
    return {
        "stage1": {"images": run.dataset.images.count(), "pairs": pairs},
        "stage2": {
            "pairs_judged": tally.pairs_judged,
            "pairs_with_triple": tally.pairs_with_triple,
            "pairs_none": tally.pairs_judged - tally.pairs_with_triple,
            "triples": tally.triples,
            "conversion_percent": _rate(tally.pairs_with_triple, tally.pairs_judged),
            **crowd[BisonStage.SELECTION],
            # Selections stage 3 has judged, and those no verifier matched to the positive.
            "selections_judged": sum(o["judged"] for o in outcomes.values()),
            "selections_rejected": sum(o["rejected"] for o in outcomes.values()),
        },
        "stage3": {
            "verifiers_per_triple": bison_required_verifiers(run),
            "triples_judged": judged,
            "verified": verified,
            "aggregation": bison_settings(run).aggregation_rule,
            "conversion_percent": _rate(verified, judged),
            **crowd[BisonStage.VERIFICATION],
            # Traps: questions where people's answer is not the picture lookup's (issue 47).
            **trap_answers(run=run),
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
