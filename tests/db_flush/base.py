"""Django's PostgreSQL backend for the test process, with one change: a transactional test's
flush deletes every table's rows instead of truncating them.

TRUNCATE gives each of the ~60 tables and their indexes new files, about 0.5 s a test here
whatever the rows; a test leaves a few rows, which DELETE removes in a few milliseconds (the
foreign keys are deferred, so the order of the tables does not matter). Only the tests' own
process uses it (`tests/settings.py`); the servers and workers they start keep Django's."""

from typing import Any

from django.db.backends.postgresql import base, operations


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(
        self,
        style: Any,
        tables: Any,
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if reset_sequences or allow_cascade:  # what DELETE cannot do: Django's own
            return super().sql_flush(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {self.quote_name(t)};" for t in tables]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
