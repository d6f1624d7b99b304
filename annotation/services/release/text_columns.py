"""Text files of millions of lines made a column at a time in Arrow (CxC's ratings): numbers
formatted exactly as Python's `%d` / `f"{x:.2f}"` would, CSV fields quoted as `csv.writer`
quotes them, lines joined in C++ — no Python object or call per row. Rows Arrow cannot
format exactly (a float within a hair of a rounding tie, NaN, a negative) go through
Python's own formatting, so every byte is what the row-by-row code wrote."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from annotation.selectors.arrow_rows import arrow_numbers, arrow_strings
from annotation.services.files import AtomicLines


def int_text(values: np.ndarray) -> pa.Array:
    """Integers as decimal text (Python's `%d`)."""
    return pc.cast(arrow_numbers(values), pa.string())


def _hundredths_text(hundredths: np.ndarray) -> pa.Array:
    """Non-negative integer counts of hundredths as "<units>.<2 digits>"."""
    units, cents = np.divmod(hundredths, 100)
    return pc.binary_join_element_wise(int_text(units), pc.utf8_lpad(int_text(cents), 2, "0"), ".")


def _patched(text: pa.Array, rows: np.ndarray, exact: list[str]) -> pa.Array:
    """`text` with the strings at `rows` replaced by `exact`."""
    if not rows.size:
        return text
    out = text.to_pylist()
    for row, value in zip(rows.tolist(), exact, strict=True):
        out[row] = value
    return arrow_strings(out)


def ratio_2f(numerators: np.ndarray, denominators: np.ndarray) -> pa.Array:
    """`f"{n / d:.2f}"` of integer-valued float arrays (a mean of whole ratings), computed in
    integers: round half to even where the ratio is an exact tie of hundredths, which Python's
    formatting of the float n / d gives wherever the tie is a float; ties that are not
    floats (and negatives) are formatted by Python itself."""
    n = numerators.astype(np.int64)
    d = denominators.astype(np.int64)
    whole, rest = np.divmod(100 * n, d)
    tie = 2 * rest == d
    hundredths = whole + ((2 * rest > d) | (tie & (whole % 2 == 1)))
    python = np.flatnonzero(tie | (n < 0))
    exact = [f"{a / b:.2f}" for a, b in zip(n[python].tolist(), d[python].tolist(), strict=True)]
    return _patched(_hundredths_text(np.maximum(hundredths, 0)), python, exact)


def float_2f(values: np.ndarray) -> pa.Array:
    """`f"{x:.2f}"` of each float: hundredths by floor, except within 1e-6 of a tie (where the
    float's binary value decides) or outside 0..1e6, which Python formats."""
    x = np.asarray(values, dtype=np.float64) * 100
    python_mask = ~np.isfinite(x) | (x < 0) | (x >= 1e8)
    safe = np.where(python_mask, 0.0, x)
    floor = np.floor(safe)
    frac = safe - floor
    python_mask |= np.abs(frac - 0.5) < 1e-6
    hundredths = floor.astype(np.int64) + (frac > 0.5)
    python = np.flatnonzero(python_mask)
    exact = [f"{v:.2f}" for v in np.asarray(values, dtype=np.float64)[python].tolist()]
    return _patched(_hundredths_text(hundredths), python, exact)


def csv_field(text: pa.Array) -> pa.Array:
    """Fields as `csv.writer` (QUOTE_MINIMAL, lineterminator "\\n") writes them: quoted, with
    quotes doubled, where they hold a comma, a quote or a newline."""
    needs = pc.match_substring_regex(text, '[,"\\n]')
    if not pc.any(needs).as_py():
        return text
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, text)


def joined_lines(*parts: pa.Array | str) -> pa.Array:
    """Each row's parts (columns, or text the same in every row) joined, with a newline."""
    return pc.binary_join_element_wise(*parts, "\n", "")


def _buffer(text: pa.Array) -> memoryview:
    """The characters of all of `text`'s strings, as they lie in Arrow's buffer."""
    if not len(text):
        return memoryview(b"")
    kinds = {pa.string(): np.int32, pa.large_string(): np.int64}
    offsets = np.frombuffer(text.buffers()[1], dtype=kinds[text.type])
    first, last = int(offsets[text.offset]), int(offsets[text.offset + len(text)])
    return memoryview(text.buffers()[2])[first:last]


def lines_bytes(text: pa.Array) -> bytes:
    """The strings of `text` (each ending in its newline), encoded, one after the other."""
    return bytes(_buffer(text))


def write_lines(lines: AtomicLines, text: pa.Array) -> None:
    """Write the strings of `text` (each ending in its newline) from Arrow's buffer."""
    lines.write_bytes(_buffer(text))
