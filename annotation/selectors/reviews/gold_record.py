"""A worker's gold record on a stage, and the hold it leads to (issue 47).

A gold miss holds the one HIT it was in (`review_open_if_needed`); a worker who misses gold in
a third of their HITs kept the other two thirds counted. The lookup cheater (who identifies
every served picture and answers from the public COCO files) is such a worker: right where
the public source answers a question, wrong on the gold where careful people's answer differs
from it. This rule holds all waiting work of a worker whose gold pass rate on the stage is,
with 95 % confidence (one-sided), below what careful workers pass. Held gold misses count in
the record (they are the evidence); work nobody submitted or confirmed does not."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

from annotation.models import GOLD_KINDS, Answer, Assignment, AssignmentState, Batch, Item, Run
from pipeline.expectation import wilson

LIMIT = 0.8  # careful workers (accuracy 0.9) pass about nine gold in ten
MIN_GOLD = 10  # gold answers before anyone is held
Z_ONE_SIDED_95 = 1.645
POLICY = "fails_gold"  # a held review's reason names its policy
RECORDED_STATES = (AssignmentState.SUBMITTED, AssignmentState.APPROVED, AssignmentState.REJECTED)


def worker_gold_record(
    *, run: Run, stage: str, workers: Collection[int]
) -> dict[int, tuple[int, int]]:
    """Per worker (Worker pk, among `workers`): gold questions of `stage` in `run` answered
    right, and answered, in confirmed submitted work, held or decided work included."""
    from annotation.tasktypes import task_type_for  # the registry imports the flows

    rows = list(
        Answer.objects.filter(
            question__item__run=run,
            question__hit__batch__stage=stage,
            question__item__kind__in=GOLD_KINDS,
            assignment__worker_id__in=list(workers),
            assignment__state__in=RECORDED_STATES,
            assignment__confirmed=True,
        ).values_list("assignment__worker_id", "question__item_id", "label")
    )
    task = task_type_for(stage)
    items = Item.objects.select_related("run").in_bulk({item for _, item, _ in rows})
    record: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for worker, item, label in rows:
        passed = task.gold_passed(item=items[item], label=label)
        if passed is None:
            continue
        record[worker][0] += bool(passed)
        record[worker][1] += 1
    return {w: (right, seen) for w, (right, seen) in record.items()}


def gold_record_hold_reasons(
    *, batch: Batch, assignments: list[Assignment]
) -> dict[int, list[dict[str, Any]]]:
    """Waiting assignments of workers whose gold record on the batch's stage is below the
    rule (`LIMIT`, at least `MIN_GOLD` gold answers), with the reason."""
    if not assignments:
        return {}
    record = worker_gold_record(
        run=batch.run, stage=batch.stage, workers={a.worker_id for a in assignments}
    )
    held: dict[int, list[dict[str, Any]]] = {}
    for assignment in assignments:
        right, seen = record.get(assignment.worker_id, (0, 0))
        if seen < MIN_GOLD:
            continue
        _, upper = wilson(right, seen, z=Z_ONE_SIDED_95)
        if upper >= LIMIT:
            continue
        held[assignment.pk] = [
            {
                "policy": POLICY,
                "gold_right": right,
                "gold_seen": seen,
                "upper95": round(upper, 4),
                "limit": LIMIT,
            }
        ]
    return held
