"""CSV files the server writes for people to open in a spreadsheet."""

from __future__ import annotations

# A cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets
# (`=HYPERLINK(...)` in a label would run when the researcher opens the file).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(text: str) -> str:
    """`text` as a cell a spreadsheet shows as text, never runs: a leading `'` if needed."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text
