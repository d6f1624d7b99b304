"""A BISON run's stage-2 and stage-3 work read once, as arrays: each triple's votes and
whether it is verified, each stage-2 worker's judged and rejected selections, and the pairs
judged. Three plain reads (the triples, the verification answers, the selection answers; a
COPY each on PostgreSQL, the answers' packed into arrays a chunk of rows at a time by
`int_arrays`) counted in numpy: the stage counts, the selectors' outcomes and the
export all come from one tally, and nothing is grouped or matched by the database per triple
(the grouped reads took seconds at 40,000 images)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from django.db.models import Case, IntegerField, Value, When
from django.db.models.functions import Coalesce

from annotation.flows.bison.selectors import (
    bison_required_verifiers,
    bison_settings,
    dawid_skene_verified,
    verified_by_votes,
)
from annotation.flows.bison.vocabulary import (
    NONE,
    VERIFICATION_LABELS,
    BisonItemKind,
    BisonStage,
)
from annotation.models import Answer, Item, Run
from annotation.selectors.arrow_rows import Columns, arrow_numbers, arrow_rows, numpy_ints
from annotation.selectors.counting import counted, counted_reviewed
from annotation.selectors.int_arrays import int_arrays
from pipeline.dense import distinct_ints

# A triple's identity as the tally reads it; the export adds its texts (`arrow_rows` columns).
TRIPLE_COLUMNS = {
    "pk": ("pk", pa.int64()),
    "source": ("source_id", pa.int64()),
    "caption": ("caption_id", pa.int64()),
}


@dataclass(frozen=True)
class BisonTally:
    triples: int
    pks: np.ndarray  # the triples' ids, ascending: every per-triple array is in this order
    pairs_judged: int  # image pairs with a counted stage-2 answer
    pairs_with_triple: int  # distinct sources of the triples (a missing one counts once)
    votes: np.ndarray  # per triple, in pk order: counted verification answers
    positive: np.ndarray  # per triple: those that picked the positive image
    judged: np.ndarray  # per triple: at least the required number of votes
    verified: np.ndarray  # per triple: judged, and verified by the run's aggregation
    # The verification answers in (triple, assignment) order: their triple's row, worker.
    answer_rows: np.ndarray
    answer_workers: np.ndarray
    outcomes: dict[int, dict[str, Any]]  # `bison_selection_outcomes`


def read_triples(*, run: Run, columns: Columns = TRIPLE_COLUMNS) -> pa.Table:
    """The run's triples in pk order (the records' order), `columns` (with at least
    TRIPLE_COLUMNS) read as they are and sorted here (the database's sort of the joined rows
    spilled to disk at 40,000 images)."""
    table = arrow_rows(Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE), columns)
    return table.take(arrow_numbers(np.argsort(numpy_ints(table.column("pk")), kind="stable")))


def bison_tally(*, run: Run, triples: pa.Table | None = None) -> BisonTally:
    """The run's tally; `triples`: the run's triples as `read_triples` reads them, if
    already read."""
    if triples is None:
        triples = read_triples(run=run)
    pks = numpy_ints(triples.column("pk"))
    required = bison_required_verifiers(run)
    answers = _verification_answers(run)
    rows = np.searchsorted(pks, answers["item"])  # every answer's item is a triple of the run
    votes = np.bincount(rows, minlength=pks.size)
    positive = np.bincount(rows, weights=answers["code"] == 0, minlength=pks.size).astype(np.int64)
    judged = votes >= required
    aggregation = bison_settings(run).aggregation_rule
    if aggregation == "dawid_skene":
        of_judged = judged[rows]
        chosen = dawid_skene_verified(
            items=answers["item"][of_judged],
            workers=answers["worker"][of_judged],
            codes=answers["code"][of_judged],
        )
        verified = judged & np.isin(pks, chosen)
    else:
        verified = judged & verified_by_votes(
            aggregation=aggregation, votes=votes, positive=positive
        )
    sources = numpy_ints(triples.column("source"))
    pairs_judged, outcomes = _selections(
        run,
        keys=_keys(sources, numpy_ints(triples.column("caption"))),
        votes=votes,
        positive=positive,
        required=required,
    )
    return BisonTally(
        triples=int(pks.size),
        pks=pks,
        pairs_judged=pairs_judged,
        pairs_with_triple=int(distinct_ints(sources).size),
        votes=votes,
        positive=positive,
        judged=judged,
        verified=verified,
        answer_rows=rows,
        answer_workers=answers["worker"],
        outcomes=outcomes,
    )


def _keys(pairs: np.ndarray, captions: np.ndarray) -> np.ndarray:
    """One integer per (pair, caption): row ids are below 2**31."""
    return (pairs.astype(np.int64) << 32) | (captions.astype(np.int64) & 0xFFFFFFFF)


def _verification_answers(run: Run) -> dict[str, np.ndarray]:
    """The run's counted verification answers not held by review in (triple, assignment) order (sorted here,
    not by the database): their triple, worker and label (its position in
    VERIFICATION_LABELS, anything else 1, "negative", as Dawid-Skene reads it)."""
    code = Case(
        *(When(label=label, then=Value(n)) for n, label in enumerate(VERIFICATION_LABELS)),
        default=Value(1),
        output_field=IntegerField(),
    )
    columns = int_arrays(
        Answer.objects.filter(
            counted_reviewed(),  # held work (e.g. a lookup worker's) verifies nothing
            question__item__run=run,
            question__item__kind=BisonItemKind.TRIPLE,
            question__hit__batch__stage=BisonStage.VERIFICATION,
        ),
        {
            "item": ("question__item_id", np.int64),
            "assignment": ("assignment_id", np.int64),
            "worker": ("assignment__worker_id", np.int64),
            "code": (code, np.int8),
        },
    )
    order = np.lexsort((columns["assignment"], columns["item"]))
    return {name: values[order] for name, values in columns.items()}


def _selections(
    run: Run, *, keys: np.ndarray, votes: np.ndarray, positive: np.ndarray, required: int
) -> tuple[int, dict[int, dict[str, Any]]]:
    """The image pairs judged in stage 2, and per stage-2 worker (by Worker pk) how many of
    their caption selections stage 3 has judged (the required number of verifiers answered)
    and how many it rejected (no verifier matched the caption to its positive image: "bad
    caption selections will not be rewarded"), each selection matched to its triple by pair
    and caption."""
    col = int_arrays(
        Answer.objects.filter(
            counted("assignment__"),
            question__hit__batch__run=run,
            question__hit__batch__stage=BisonStage.SELECTION,
        ),
        {
            "worker": ("assignment__worker_id", np.int64),
            "item": ("question__item_id", np.int64),
            "caption": (Coalesce("caption_id", Value(-1)), np.int64),  # -1: "none"
            "chose": (Case(When(label=NONE, then=Value(0)), default=Value(1)), np.int8),
            "pair": (
                Case(
                    When(question__item__kind=BisonItemKind.IMAGE_PAIR, then=Value(1)),
                    default=Value(0),
                ),
                np.int8,
            ),
        },
    )
    pairs_judged = int(distinct_ints(col["item"][col["pair"] == 1]).size)
    chose = col["chose"] == 1
    worker, caption = col["worker"][chose], col["caption"][chose]
    wanted = _keys(col["item"][chose], caption)
    count = np.zeros(wanted.size, dtype=np.int64)
    rejected = np.zeros(wanted.size, dtype=bool)
    if keys.size:  # (pair, caption) is unique among a run's triples
        order = np.argsort(keys, kind="stable")
        row = order[np.searchsorted(keys, wanted, sorter=order).clip(max=keys.size - 1)]
        found = keys[row] == wanted
        count[found] = votes[row[found]]
        rejected[found] = positive[row[found]] == 0
    judged = (caption >= 0) & (count >= required)
    tally: dict[int, list[int]] = {}
    for w, r in zip(worker[judged].tolist(), rejected[judged].tolist(), strict=True):
        entry = tally.setdefault(w, [0, 0])
        entry[0] += 1
        entry[1] += r
    return pairs_judged, {
        w: {"judged": j, "rejected": r, "rejected_share": round(r / j, 4)}
        for w, (j, r) in sorted(tally.items())
    }
