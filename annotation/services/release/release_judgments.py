"""Per-label provenance (issue 50): the `label_provenance` record set, one row per counted
judgment of the run (gold answers are checks, not labels: they appear as the gold a worker
passed), saying who gave it (the export's worker pseudonym), through which provider and
study, in which stage, batch and HIT, when, under which consent and instructions versions,
which gold checks of the same HIT the worker passed or failed, and (ECCV) which models
proposed the item with their checkpoints' sha256. Read by one COPY (`arrow_rows`) and built
in numpy/Arrow, so CxC's 1.3 million ratings cost no Python object per row."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.db.models import Value
from django.db.models.functions import Coalesce

from annotation.models import (
    GOLD_KINDS,
    Answer,
    Assignment,
    Hit,
    InstructionsChange,
    Item,
    Run,
)
from annotation.selectors.arrow_rows import (
    arrow_numbers,
    arrow_rows,
    arrow_strings,
    numpy_flags,
    numpy_ints,
)
from annotation.selectors.counting import counted_reviewed
from annotation.selectors.int_arrays import int_and_text_arrays
from annotation.selectors.pseudonyms import run_worker_pseudonyms
from annotation.selectors.work.run_texts import instructions_version
from annotation.services.release.release_tables import table_from_columns

PROVENANCE_SET = "label_provenance"
PROVENANCE_KEYS = ("judgment",)  # CHANGES.md matches rows by the answer's id

# Per item (pk), the machines that proposed it: (name, checkpoint sha256 or "").
Proposers = Callable[[Run], dict[int, list[tuple[str, str]]]]

# The provenance table's columns, each read once from the table that holds it: the answers'
# own (1.3 million rows at CxC's size) apart from their items', assignments' and HITs' (a
# fifth, a tenth and a fiftieth as many), gathered per answer in Arrow. One join of every
# answer with all of them sent PostgreSQL's CSV of 18 columns a row (193 MB at CxC's size)
# and took most of the export's time.
_ANSWER_COLUMNS = {  # read packed a chunk of rows at a time (`int_and_text_arrays`)
    "judgment": ("pk", np.int64),
    "item": ("question__item_id", np.int64),
    "hit": ("question__hit_id", np.int64),
    "assignment": ("assignment_id", np.int64),
}
_ITEM_COLUMNS = {  # read packed too (`_item_rows`), a missing id as `_NO_ID`
    "item": "pk",
    "image_id": "positive__coco_id",
    "image_id_2": "negative__coco_id",
    "caption_id": "caption__coco_id",
    "caption_id_2": "caption2__coco_id",
}
_NO_ID = np.iinfo(np.int64).min
_ASSIGNMENT_COLUMNS = {
    "assignment": ("pk", pa.int64()),
    "worker_pk": ("worker_id", pa.int64()),
    "accepted_at": ("accepted_at", pa.timestamp("us", tz="UTC")),
    "submitted_at": ("submitted_at", pa.timestamp("us", tz="UTC")),
    "consent_version": ("consent_version", pa.string()),
}
_HIT_COLUMNS = {
    "hit": ("pk", pa.int64()),
    "batch": ("batch_id", pa.int64()),
    "provider": ("batch__provider", pa.string()),
    "study": ("batch__provider_hit_type_id", pa.string()),
    "stage": ("batch__stage", pa.string()),
}


def _item_rows(run: Run) -> pa.Table:
    """The run's items in pk order: their kind and COCO ids (missing ones null), packed by
    the database a chunk of rows at a time and sorted here (a COPY of the joined rows sent a
    message per row, and the database's sort of them spilled to disk at val2014 size)."""
    ints, texts = int_and_text_arrays(
        Item.objects.filter(run=run),
        {
            name: (field if name == "item" else Coalesce(field, Value(_NO_ID)), np.int64)
            for name, field in _ITEM_COLUMNS.items()
        },
        {"item_kind": "kind"},
    )
    order = np.argsort(ints["item"], kind="stable")
    columns: dict[str, Any] = {}
    for name in _ITEM_COLUMNS:
        values = ints[name][order]
        columns[name] = arrow_numbers(values, valid=values != _NO_ID)
        if name == "item":
            columns["item_kind"] = texts["item_kind"].take(arrow_numbers(order))
    return pa.table(columns)


def _rows_of(table: pa.Table, key: str, keys: np.ndarray) -> np.ndarray:
    """Where each of `keys` stands in `table`'s `key` column (unique, ascending)."""
    have = numpy_ints(table.column(key))
    at = np.searchsorted(have, keys).clip(0, max(have.size - 1, 0))
    if keys.size and (not have.size or (have[at] != keys).any()):
        raise ValueError(f"label provenance: a {key} of an answer is not the run's")
    return at.astype(np.int64)


def _gathered(table: pa.Table, key: str, keys: np.ndarray) -> pa.Table:
    """The rows of `table` (ordered by its unique `key` column) whose key is each of `keys`,
    in that order."""
    return table.take(arrow_numbers(_rows_of(table, key, keys)))


def _gold_by_assignment(
    run: Run, *, assignments: np.ndarray, items: np.ndarray, stages: list[str], labels: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run's counted gold answers (`assignments`, `items`, `stages`, `labels`: one per
    answer, in (assignment, answer) order) as (assignment, gold item, passed) arrays, each
    judged by its stage's task type (`TaskType.gold_passed`, the rule the gold tally and the
    review hold use); answers no rule judges are left out."""
    from annotation.tasktypes import task_type_for

    # The run's gold items by a filter, not a list of thousands of ids (ECCV's 8,890).
    of_run = {item.pk: item for item in Item.objects.filter(run=run, kind__in=GOLD_KINDS)}
    verdicts: dict[tuple[str, int, str], bool | None] = {}
    kept = []
    for assignment, item, stage, label in zip(
        assignments.tolist(), items.tolist(), stages, labels, strict=True
    ):
        key = (stage, item, label)
        if key not in verdicts:
            verdicts[key] = task_type_for(stage).gold_passed(item=of_run[item], label=label)
        if verdicts[key] is not None:
            kept.append((assignment, item, bool(verdicts[key])))
    if not kept:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=bool)
    array = np.array(kept, dtype=np.int64)
    return array[:, 0], array[:, 1], array[:, 2].astype(bool)


def _per_row_lists(
    row_keys: np.ndarray, keys: np.ndarray, values: np.ndarray, *, where: np.ndarray
) -> pa.ListArray:
    """For each row, the `values` whose `keys` (sorted) equal the row's key and `where` holds,
    as a list column (a row without any: an empty list)."""
    keys, values = keys[where], values[where]
    start = np.searchsorted(keys, row_keys, side="left")
    end = np.searchsorted(keys, row_keys, side="right")
    counts = end - start
    offsets = np.zeros(row_keys.size + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    # Each row's run of values: start[i] .. end[i], gathered without a Python loop.
    at = np.repeat(start - offsets[:-1], counts) + np.arange(int(offsets[-1]), dtype=np.int64)
    return pa.ListArray.from_arrays(
        arrow_numbers(offsets), arrow_numbers(values[at].astype(np.int64))
    )


def _instructions_versions(run: Run, stages: pa.Array, accepted: pa.Array) -> pa.Array:
    """Per row, the version of its stage's instructions in force when the worker took the
    HIT: the run's recorded changes (`InstructionsChange`) give each stage's versions over
    time; a stage never changed shows its one version throughout."""
    changes: dict[str, list[tuple[datetime, str, str]]] = {}
    for stage, created, before, after in (
        InstructionsChange.objects.filter(run=run)
        .order_by("created_at", "pk")
        .values_list("stage", "created_at", "from_version", "to_version")
    ):
        changes.setdefault(stage, []).append((created, before, after))
    encoded = pc.dictionary_encode(stages)
    names = encoded.dictionary.to_pylist()
    codes = numpy_ints(encoded.indices)
    # A missing time falls after every change (as NaN sorted when these were floats).
    times = numpy_ints(pc.cast(accepted, pa.int64()), missing=np.iinfo(np.int64).max)
    words: list[str] = []  # every version named, each row pointing at its own
    word = np.full(len(stages), -1, dtype=np.int64)
    for code, stage in enumerate(names):
        rows = np.flatnonzero(codes == code)
        timeline = changes.get(stage)
        if not timeline:
            word[rows] = len(words)
            words.append(instructions_version(run.config, stage))
            continue
        # Versions: before the first change its "from", after change n its "to".
        at = np.array([int(t.timestamp() * 1_000_000) for t, _, _ in timeline], dtype=np.int64)
        word[rows] = len(words) + np.searchsorted(at, times[rows], side="right")
        words.extend([timeline[0][1], *(to for _, _, to in timeline)])
    return arrow_strings(words).take(arrow_numbers(word, valid=word >= 0)).dictionary_encode()


def _proposals(
    items: np.ndarray, proposers: dict[int, list[tuple[str, str]]]
) -> tuple[pa.ListArray, pa.ListArray]:
    """Per row, the names of the machines that proposed its item and their checkpoints'
    sha256 ("" where none was recorded), in the same order."""
    distinct, at = np.unique(items, return_inverse=True)
    names: list[str] = []
    shas: list[str] = []
    counts = np.zeros(distinct.size, dtype=np.int64)
    starts = np.zeros(distinct.size, dtype=np.int64)
    for n, item in enumerate(distinct.tolist()):
        starts[n] = len(names)
        for name, sha in proposers.get(item, []):
            names.append(name)
            shas.append(sha)
        counts[n] = len(names) - starts[n]
    row_counts = counts[at]
    offsets = np.zeros(items.size + 1, dtype=np.int32)
    np.cumsum(row_counts, out=offsets[1:])
    gather = np.repeat(starts[at] - offsets[:-1], row_counts) + np.arange(
        int(offsets[-1]), dtype=np.int64
    )
    index = arrow_numbers(gather)
    return (
        pa.ListArray.from_arrays(arrow_numbers(offsets), arrow_strings(names).take(index)),
        pa.ListArray.from_arrays(arrow_numbers(offsets), arrow_strings(shas).take(index)),
    )


def label_provenance_table(*, run: Run, proposers: Proposers | None = None) -> pa.Table:
    """The `label_provenance` record set of `run` (rows in the order the answers were
    stored). `proposers`: the flow's machines per item (ECCV's annotators)."""
    # Every counted answer of the run's batches (a join on the items for the run and their
    # kind made PostgreSQL look each answer's item up by its index: twice as slow), the gold
    # answers then left out by their items' kind, read anyway.
    ints, texts = int_and_text_arrays(
        Answer.objects.filter(counted_reviewed(""), question__hit__batch__run=run),
        _ANSWER_COLUMNS,
        {"label": "label"},
    )
    item_rows = _item_rows(run)
    hit_rows = arrow_rows(Hit.objects.filter(batch__run=run).order_by("pk"), _HIT_COLUMNS)
    at_item = _rows_of(item_rows, "item", ints["item"])
    gold = numpy_flags(
        pc.is_in(
            item_rows.column("item_kind"), value_set=arrow_strings([k.value for k in GOLD_KINDS])
        )
    )
    # The gold answers, read with the rest: the gold passed and failed per assignment.
    of_gold = np.flatnonzero(gold[at_item])
    of_gold = of_gold[np.lexsort((ints["judgment"][of_gold], ints["assignment"][of_gold]))]
    gold_assignments, gold_items, passed = _gold_by_assignment(
        run,
        assignments=ints["assignment"][of_gold],
        items=ints["item"][of_gold],
        stages=_gathered(hit_rows, "hit", ints["hit"][of_gold]).column("stage").to_pylist(),
        labels=texts["label"].take(arrow_numbers(of_gold)).to_pylist(),
    )
    kept = np.flatnonzero(~gold[at_item])
    # In the order the answers were stored.
    order = kept[np.argsort(ints["judgment"][kept], kind="stable")]
    answers = {name: values[order] for name, values in ints.items()}
    label = texts["label"].take(arrow_numbers(order))
    of_item = item_rows.take(arrow_numbers(at_item[order]))
    del ints, texts, order, kept, at_item, gold, item_rows, of_gold
    items, assignments = answers["item"], answers["assignment"]
    of_assignment = _gathered(
        arrow_rows(
            Assignment.objects.filter(hit__batch__run=run).order_by("pk"), _ASSIGNMENT_COLUMNS
        ),
        "assignment",
        assignments,
    )
    of_hit = _gathered(hit_rows, "hit", answers["hit"])
    del hit_rows
    names = run_worker_pseudonyms(run=run)
    workers = numpy_ints(of_assignment.column("worker_pk"))
    distinct, at = np.unique(workers, return_inverse=True)
    pseudonyms = arrow_strings([names[w] for w in distinct.tolist()])
    columns: dict[str, Any] = {
        "judgment": arrow_numbers(answers["judgment"]),
        "item": arrow_numbers(items),
    }
    for name in ("item_kind", "image_id", "image_id_2", "caption_id", "caption_id_2"):
        columns[name] = of_item.column(name)
    columns["label"] = label
    columns["worker"] = pa.DictionaryArray.from_arrays(
        arrow_numbers(at.reshape(-1).astype(np.int32)), pseudonyms
    )
    for name in ("provider", "study", "batch", "stage"):
        columns[name] = of_hit.column(name)
    columns["hit"] = arrow_numbers(answers["hit"])
    columns["submitted_at"] = of_assignment.column("submitted_at")
    columns["consent_version"] = of_assignment.column("consent_version")
    columns["instructions_version"] = _instructions_versions(
        run,
        of_hit.column("stage").combine_chunks(),
        of_assignment.column("accepted_at").combine_chunks(),
    )
    columns["gold_passed"] = _per_row_lists(assignments, gold_assignments, gold_items, where=passed)
    columns["gold_failed"] = _per_row_lists(
        assignments, gold_assignments, gold_items, where=~passed
    )
    if proposers is not None:
        columns["proposed_by"], columns["proposer_checkpoint_sha256"] = _proposals(
            items, proposers(run)
        )
    return table_from_columns(columns)
