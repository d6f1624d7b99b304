"""The claim's hot statements as plain SQL for PostgreSQL (prepared by psycopg after a few
runs): the ORM spent most of a claim's time compiling them. Each mirrors a rule of the ORM
path in `claim.py` (which other databases use); the claim tests run through both
(`claim.CLAIM_SQL` off: the ORM path)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from annotation.models import GOLD_KINDS, Assignment, AssignmentState, HitStatus
from annotation.services.slots_sql import ACTIVE_SQL
from annotation.services.sql_rows import columns, instance

_GOLD = "('" + "', '".join(GOLD_KINDS) + "')"
# `services.gold.gold_seen_before`: the HIT holds a gold copy of an item the worker had (as
# the real item or as the copy) in any HIT they claimed.
GOLD_SEEN_SQL = f"""EXISTS (
  SELECT 1 FROM annotation_question gq
  JOIN annotation_item gi ON gi.id = gq.item_id
  JOIN annotation_question sq ON sq.item_id = gi.id OR sq.item_id = gi.source_id
  JOIN annotation_assignment sa ON sa.hit_id = sq.hit_id
  WHERE gq.hit_id = h.id AND gi.kind IN {_GOLD} AND gi.source_id IS NOT NULL
    AND sa.worker_id = %(worker)s)"""

# `services.images.image_seen_before`: the HIT shows an image the worker had in a HIT they
# claimed (rows only for image-disjoint stages).
IMAGE_SEEN_SQL = """EXISTS (
  SELECT 1 FROM annotation_hitimage hi
  JOIN annotation_hitimage si ON si.image_id = hi.image_id
  JOIN annotation_assignment sa ON sa.hit_id = si.hit_id
  WHERE hi.hit_id = h.id AND sa.worker_id = %(worker)s)"""

# The HITs a worker may claim (`claim._claim_orm`'s `candidates`); the second NOT EXISTS is
# `claim.judged_before` (re-offered items), the third `gold_seen_before`, the fourth
# `image_seen_before` (unless the batch relaxed it: `images_kept_apart`).
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
  AND NOT (%(images_apart)s AND {IMAGE_SEEN_SQL})
  AND (SELECT count(*) FROM annotation_assignment a WHERE a.hit_id = h.id AND {ACTIVE_SQL})
      < COALESCE(h.max_assignments, %(per_hit)s) + h.extra_assignments
ORDER BY h.position LIMIT 1
FOR UPDATE OF h"""
# The recount under the HIT's lock.
RECOUNT_SQL = f"""
SELECT count(*) FROM annotation_assignment a WHERE a.hit_id = %(hit)s AND {ACTIVE_SQL}"""
_A_COLS = columns(Assignment, "a")
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
    return stage, (None if mine[0] is None else instance(Assignment, mine))
