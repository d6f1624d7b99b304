"""Errors raised by pure pipeline code when input is bad."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input, located by file, record and field so a user can fix it."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        record: str | int | None = None,
        field: str | None = None,
        page: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.record = record
        self.field = field
        # The same said for a web page, where `message` names a command-line option.
        self.page = page
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.record is not None:
            where.append(f"record {self.record}")
        if self.field:
            where.append(f"field '{self.field}'")
        return f"{': '.join(where)}: {self.message}" if where else self.message
