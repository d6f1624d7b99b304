"""The slot rules of `slots.py` as SQL fragments over an assignment aliased `a`, for the
prepared statements of the claim (`claim_sql.py`) and the submit (`submit_sql.py`). They read
`slots.slot_params`' parameters."""

from __future__ import annotations

from annotation.models import AssignmentState
from annotation.selectors.counting import COUNTED_STATES

COUNTED_STATES_SQL = "('" + "', '".join(COUNTED_STATES) + "')"
# `selectors.counting.counted`.
COUNTED_SQL = f"(a.state IN {COUNTED_STATES_SQL} AND a.confirmed AND NOT a.excluded)"
# `slots.claim_rows`: the rows a claim makes (any row where claims start unconfirmed).
MINE = "(a.confirmed OR %(unconfirmed)s)"
# `slots.kept_work`: counted work (where claims start unconfirmed, also work waiting for
# confirmation); `slots.active_assignments`: kept work and claims within the assignment
# duration (within the first-claim hold for a worker with nothing counted in the batch).
KEPT_SQL = f"(a.state IN {COUNTED_STATES_SQL} AND {MINE} AND NOT a.excluded)"
ACTIVE_SQL = f"""(
  {KEPT_SQL}
  OR (a.state = '{AssignmentState.ACCEPTED}' AND {MINE} AND a.accepted_at >= %(fresh)s
      AND (a.accepted_at >= %(first)s OR EXISTS (
        SELECT 1 FROM annotation_assignment s JOIN annotation_hit sh ON sh.id = s.hit_id
        WHERE s.worker_id = a.worker_id AND sh.batch_id = %(batch)s
          AND s.state IN {COUNTED_STATES_SQL}))))"""
