"""The ids a run's config lists (its query sample, a split's gallery) as a subquery read from
the run's own row: the database gets the run's id, never a list of ids that grows with the
data (issue 32: no `IN` list in the exports)."""

from __future__ import annotations

from django.db import connection
from django.db.models.expressions import RawSQL

from annotation.models import Run


def run_config_ids(run: Run, key: str) -> RawSQL:
    """`SELECT` of the integers the saved config of `run` lists under `key` (for `__in=`)."""
    table = connection.ops.quote_name(Run._meta.db_table)
    if connection.vendor == "postgresql":
        return RawSQL(
            f"SELECT (jsonb_array_elements_text(config -> %s))::bigint FROM {table} WHERE id = %s",
            (key, run.pk),
        )
    return RawSQL(
        f"SELECT value FROM {table}, json_each({table}.config, %s) WHERE {table}.id = %s",
        (f"$.{key}", run.pk),
    )
