"""A filter on a set of ids that grows with the data, bound as ONE parameter.

`pk__in=[...]` binds one parameter per id: PostgreSQL refuses more than 65,535 (the worker
path binds on the server), SQLite more than 32,766. Here PostgreSQL gets an array
(`= ANY(%s)`) and SQLite a JSON list read by `json_each`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL


def ids_in(field: str, ids: Iterable[int]) -> Q:
    """`Q(<field>__in=ids)` for any number of integer ids, as one bound parameter."""
    values = [int(i) for i in ids]
    if connection.vendor == "postgresql":
        subquery = RawSQL("SELECT unnest(%s::bigint[])", (values,))
    else:
        subquery = RawSQL("SELECT value FROM json_each(%s)", (json.dumps(values),))
    return Q(**{f"{field}__in": subquery})
