"""The submit's hot statements as plain SQL for PostgreSQL (prepared by psycopg after a few
runs): the ORM spent most of a submit's time compiling them. Each mirrors a rule of the ORM
path in `submit.py` (which other databases use); the submit and worker-page tests run through
both (`submit.SUBMIT_SQL` off: the ORM path)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from annotation.models import (
    Answer,
    Assignment,
    AssignmentState,
    Batch,
    EventAction,
    Hit,
    HitStatus,
)
from annotation.services.slots_sql import ACTIVE_SQL, COUNTED_SQL, COUNTED_STATES_SQL, KEPT_SQL
from annotation.services.sql_rows import columns, instance

_A_COLS, _H_COLS, _B_COLS = columns(Assignment, "a"), columns(Hit, "h"), columns(Batch, "b")

# The assignment (locked), its HIT and batch, and the worker's pool in the run, in one read.
_SUBMIT_READ_SQL = f"""
SELECT {_A_COLS}, {_H_COLS}, {_B_COLS}, pm.stage
FROM annotation_assignment a
JOIN annotation_hit h ON h.id = a.hit_id
JOIN annotation_batch b ON b.id = h.batch_id
LEFT JOIN annotation_poolmembership pm ON pm.run_id = b.run_id AND pm.worker_id = a.worker_id
WHERE a.id = %s
FOR UPDATE OF a"""
_HIT_LOCK_SQL = "SELECT 1 FROM annotation_hit WHERE id = %s FOR UPDATE"
# `submit._check_in_time`'s counts of the HIT's other assignments, and `slots.claim_holds`'s
# question.
_SLOTS_SQL = f"""
SELECT
  (SELECT count(*) FROM annotation_assignment a
   WHERE a.hit_id = %(hit)s AND a.id <> %(me)s AND {KEPT_SQL}),
  (SELECT count(*) FROM annotation_assignment a
   WHERE a.hit_id = %(hit)s AND a.id <> %(me)s AND {ACTIVE_SQL}),
  EXISTS (SELECT 1 FROM annotation_assignment s JOIN annotation_hit sh ON sh.id = s.hit_id
          WHERE s.worker_id = %(worker)s AND sh.batch_id = %(batch)s
            AND s.state IN {COUNTED_STATES_SQL})"""
# The draft goes in the same statement (`drafts.draft_consume`'s SQL twin): the answers count
# once, from the submit, at no extra round trip.
_SUBMITTED_SQL = f"""
WITH draft AS (DELETE FROM annotation_assignmentdraft WHERE assignment_id = %s)
UPDATE annotation_assignment SET state = '{AssignmentState.SUBMITTED}', submitted_at = %s,
  started_at = %s WHERE id = %s"""
_EVENT_SQL = """
INSERT INTO annotation_event (action, run_id, batch_id, assignment_id, worker_id, data,
  created_at) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s)"""
# `recount.hit_recount` after a submit, which only ever adds counted work: open -> complete
# when full.
_HIT_FULL_SQL = f"""
UPDATE annotation_hit h SET status = '{HitStatus.COMPLETE}'
WHERE h.id = %(hit)s AND h.status = '{HitStatus.OPEN}' AND (
  h.reoffered_as_id IS NOT NULL
  OR (SELECT count(*) FROM annotation_assignment a WHERE a.hit_id = h.id AND {COUNTED_SQL})
     >= COALESCE(h.max_assignments, %(per_hit)s) + h.extra_assignments)
RETURNING h.id"""


def submit_read(assignment_id: int) -> tuple[Assignment, str | None] | None:
    """The assignment, locked, with its HIT and batch attached, and the stage of the worker's
    pool in the run (None: in no pool); None if there is no such assignment."""
    with connection.cursor() as cursor:
        cursor.execute(_SUBMIT_READ_SQL, [assignment_id])
        row = cursor.fetchone()
    if row is None:
        return None
    a = len(Assignment._meta.concrete_fields)
    h = a + len(Hit._meta.concrete_fields)
    b = h + len(Batch._meta.concrete_fields)
    assignment = instance(Assignment, row[:a])
    hit = instance(Hit, row[a:h])
    hit.batch = instance(Batch, row[h:b])
    assignment.hit = hit
    return assignment, row[b]


def submit_slots(*, assignment: Assignment, params: dict[str, Any]) -> tuple[int, int, bool]:
    """Lock the HIT (one submitter at a time), then count its other assignments: counted,
    holding a slot; and whether the worker has counted work in the batch."""
    with connection.cursor() as cursor:
        cursor.execute(_HIT_LOCK_SQL, [assignment.hit_id])
        cursor.execute(
            _SLOTS_SQL,
            {
                **params,
                "hit": assignment.hit_id,
                "me": assignment.pk,
                "worker": assignment.worker_id,
            },
        )
        counted, active, has_submitted = cursor.fetchone()
    return counted, active, has_submitted


def submit_write(
    *, assignment: Assignment, rows: Sequence[Answer], event: dict[str, Any], now: datetime
) -> bool:
    """Store the answers, mark the assignment submitted, write its event, and complete its
    HIT if now full (True then)."""
    batch = assignment.hit.batch
    values = ", ".join(["(%s, %s, %s, %s, %s, %s::jsonb, %s)"] * len(rows))
    params: list[Any] = []
    for r in rows:
        params += [r.assignment_id, r.question_id, r.choice, r.label, r.caption_id]
        params += [json.dumps(r.details), r.raw]
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO annotation_answer (assignment_id, question_id, choice, label, "
            f"caption_id, details, raw) VALUES {values}",
            params,
        )
        cursor.execute(
            _SUBMITTED_SQL,
            [assignment.pk, assignment.submitted_at, assignment.started_at, assignment.pk],
        )
        cursor.execute(
            _EVENT_SQL,
            [
                EventAction.ASSIGNMENT_SUBMITTED,
                batch.run_id,
                batch.pk,
                assignment.pk,
                assignment.worker_id,
                json.dumps(event),
                now,
            ],
        )
        if not assignment.confirmed:
            return False
        cursor.execute(
            _HIT_FULL_SQL, {"hit": assignment.hit_id, "per_hit": batch.assignments_per_hit}
        )
        return cursor.fetchone() is not None
