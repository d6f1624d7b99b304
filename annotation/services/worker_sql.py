"""The worker path's hot statements as plain SQL for PostgreSQL (prepared by psycopg after a
few runs): the ORM spent most of a claim's and a submit's time compiling them. Each mirrors a
rule written with the ORM in services/assignments.py (which other databases use); the claim,
submit and worker-page tests run through both (`CLAIM_SQL`/`SUBMIT_SQL` off: the ORM path)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

from annotation.models import (
    GOLD_KINDS,
    Answer,
    Assignment,
    AssignmentState,
    Batch,
    Hit,
    HitStatus,
)
from annotation.selectors.counting import COUNTED_STATES

M = TypeVar("M", bound=Model)

_COUNTED = "('" + "', '".join(COUNTED_STATES) + "')"
COUNTED_SQL = f"(a.state IN {_COUNTED} AND a.confirmed AND NOT a.excluded)"
# `_mine`: the rows a claim makes (any row where claims start unconfirmed).
_MINE = "(a.confirmed OR %(unconfirmed)s)"
# `_kept`: counted work (where claims start unconfirmed, also work waiting for confirmation);
# `_active_assignments`: kept work and claims within the assignment duration (within the
# first-claim hold for a worker with nothing counted in the batch).
KEPT_SQL = f"(a.state IN {_COUNTED} AND {_MINE} AND NOT a.excluded)"
ACTIVE_SQL = f"""(
  {KEPT_SQL}
  OR (a.state = '{AssignmentState.ACCEPTED}' AND {_MINE} AND a.accepted_at >= %(fresh)s
      AND (a.accepted_at >= %(first)s OR EXISTS (
        SELECT 1 FROM annotation_assignment s JOIN annotation_hit sh ON sh.id = s.hit_id
        WHERE s.worker_id = a.worker_id AND sh.batch_id = %(batch)s
          AND s.state IN {_COUNTED}))))"""


def _columns(model: type[Model], alias: str) -> str:
    return ", ".join(f"{alias}.{f.column}" for f in model._meta.concrete_fields)


def _instance(model: type[M], values: Sequence[Any]) -> M:
    """A model instance from its columns as `_columns` selected them, read as the ORM reads
    them (JSON fields decoded)."""
    fields = model._meta.concrete_fields
    values = [
        f.from_db_value(v, None, connection) if hasattr(f, "from_db_value") else v
        for f, v in zip(fields, values, strict=True)
    ]
    return model.from_db("default", [f.attname for f in fields], values)


_A_COLS, _H_COLS, _B_COLS = _columns(Assignment, "a"), _columns(Hit, "h"), _columns(Batch, "b")


# --- claim ----------------------------------------------------------------------------------

_GOLD = "('" + "', '".join(GOLD_KINDS) + "')"
# `gold_seen_before`: the HIT holds a gold copy of an item the worker had (as the real item
# or as the copy) in any HIT they claimed.
GOLD_SEEN_SQL = f"""EXISTS (
  SELECT 1 FROM annotation_question gq
  JOIN annotation_item gi ON gi.id = gq.item_id
  JOIN annotation_question sq ON sq.item_id = gi.id OR sq.item_id = gi.source_id
  JOIN annotation_assignment sa ON sa.hit_id = sq.hit_id
  WHERE gq.hit_id = h.id AND gi.kind IN {_GOLD} AND gi.source_id IS NOT NULL
    AND sa.worker_id = %(worker)s)"""

# `image_seen_before`: the HIT shows an image the worker had in a HIT they claimed (rows
# only for image-disjoint stages).
IMAGE_SEEN_SQL = """EXISTS (
  SELECT 1 FROM annotation_hitimage hi
  JOIN annotation_hitimage si ON si.image_id = hi.image_id
  JOIN annotation_assignment sa ON sa.hit_id = si.hit_id
  WHERE hi.hit_id = h.id AND sa.worker_id = %(worker)s)"""

# The HITs a worker may claim; the second NOT EXISTS is `judged_before` (re-offered items),
# the third `gold_seen_before`, the fourth `image_seen_before`.
CANDIDATE_SQL = f"""
SELECT h.id, COALESCE(h.max_assignments, %(per_hit)s) + h.extra_assignments
FROM annotation_hit h
WHERE h.batch_id = %(batch)s AND h.status = '{HitStatus.OPEN}'
  AND NOT (h.id = ANY(%(tried)s::bigint[]))
  AND NOT EXISTS (SELECT 1 FROM annotation_assignment x
                  WHERE x.hit_id = h.id AND x.worker_id = %(worker)s)
  AND NOT EXISTS (SELECT 1 FROM annotation_hit o
                  JOIN annotation_assignment y ON y.hit_id = o.id
                  WHERE o.reoffered_as_id = h.id AND y.worker_id = %(worker)s)
  AND NOT {GOLD_SEEN_SQL}
  AND NOT {IMAGE_SEEN_SQL}
  AND (SELECT count(*) FROM annotation_assignment a WHERE a.hit_id = h.id AND {ACTIVE_SQL})
      < COALESCE(h.max_assignments, %(per_hit)s) + h.extra_assignments
ORDER BY h.position LIMIT 1
FOR UPDATE OF h"""
RECOUNT_SQL = f"""
SELECT count(*) FROM annotation_assignment a WHERE a.hit_id = %(hit)s AND {ACTIVE_SQL}"""
_WORKER_LOCK_SQL = "SELECT 1 FROM annotation_worker WHERE id = %s FOR UPDATE"
# After the worker's lock (so a concurrent claim of theirs has committed): their pool in the
# run, and their open claim in the batch that still holds its slot.
_MINE_SQL = f"""
SELECT pm.stage, m.*
FROM (SELECT 1) one
LEFT JOIN annotation_poolmembership pm ON pm.run_id = %(run)s AND pm.worker_id = %(worker)s
LEFT JOIN LATERAL (
  SELECT {_A_COLS} FROM annotation_assignment a JOIN annotation_hit h ON h.id = a.hit_id
  WHERE h.batch_id = %(batch)s AND a.worker_id = %(worker)s AND {ACTIVE_SQL}
    AND a.state = '{AssignmentState.ACCEPTED}'
  ORDER BY a.id LIMIT 1) m ON true"""


def claim_mine(*, worker_id: int, params: dict[str, Any]) -> tuple[str | None, Assignment | None]:
    """Lock the worker's row (one claim of theirs at a time), then read the stage of their
    pool in the run and their open claim in the batch holding its slot."""
    with connection.cursor() as cursor:
        cursor.execute(_WORKER_LOCK_SQL, [worker_id])
        cursor.execute(_MINE_SQL, {**params, "worker": worker_id})
        row = cursor.fetchone()
    stage, mine = row[0], row[1:]
    return stage, (None if mine[0] is None else _instance(Assignment, mine))


# --- submit ---------------------------------------------------------------------------------

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
# `_check_in_time`'s counts of the HIT's other assignments, and `_claim_holds`'s question.
_SLOTS_SQL = f"""
SELECT
  (SELECT count(*) FROM annotation_assignment a
   WHERE a.hit_id = %(hit)s AND a.id <> %(me)s AND {KEPT_SQL}),
  (SELECT count(*) FROM annotation_assignment a
   WHERE a.hit_id = %(hit)s AND a.id <> %(me)s AND {ACTIVE_SQL}),
  EXISTS (SELECT 1 FROM annotation_assignment s JOIN annotation_hit sh ON sh.id = s.hit_id
          WHERE s.worker_id = %(worker)s AND sh.batch_id = %(batch)s
            AND s.state IN {_COUNTED})"""
_SUBMITTED_SQL = f"""
UPDATE annotation_assignment SET state = '{AssignmentState.SUBMITTED}', submitted_at = %s,
  started_at = %s WHERE id = %s"""
_EVENT_SQL = """
INSERT INTO annotation_event (action, run_id, batch_id, assignment_id, worker_id, data,
  created_at) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s)"""
# `hit_recount` after a submit, which only ever adds counted work: open -> complete when full.
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
    assignment = _instance(Assignment, row[:a])
    hit = _instance(Hit, row[a:h])
    hit.batch = _instance(Batch, row[h:b])
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
            _SUBMITTED_SQL, [assignment.submitted_at, assignment.started_at, assignment.pk]
        )
        cursor.execute(
            _EVENT_SQL,
            [
                "assignment.submitted",
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
