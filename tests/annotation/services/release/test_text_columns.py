"""The column-at-a-time text of large exports (annotation/services/release/text_columns.py) is byte
for byte what Python's own formatting and `csv.writer` write, ties and odd values included."""

import csv
import io

import numpy as np
import pyarrow as pa

from annotation.services.files import AtomicLines
from annotation.services.release.text_columns import (
    csv_field,
    float_2f,
    int_text,
    joined_lines,
    ratio_2f,
    write_lines,
)


def test_means_of_whole_ratings_format_like_python_ties_included():
    rng = np.random.default_rng(3)
    counts = rng.integers(1, 41, 20_000).astype(np.float64)
    sums = np.floor(rng.random(20_000) * (5 * counts + 1))
    # Exact ties of hundredths: x.125 (a float: half to even) and 1/200 (not a float).
    sums[:4], counts[:4] = [17, 19, 1, 3], [8, 8, 200, 40]
    sums[4], counts[4] = -3, 8  # a negative goes through Python
    expected = [f"{s / c:.2f}" for s, c in zip(sums.tolist(), counts.tolist(), strict=True)]
    assert ratio_2f(sums, counts).to_pylist() == expected
    assert expected[:2] == ["2.12", "2.38"]


def test_floats_format_like_python_near_ties_and_oddities_included():
    rng = np.random.default_rng(4)
    values = rng.random(20_000) * 5
    values[:8] = [0.125, 0.375, 2.675, 1.005, np.nan, -0.001, 1e7, 0.0]
    values[8:1008] = np.round(rng.random(1000) * 500) / 100 + 0.005  # near ties
    expected = [f"{v:.2f}" for v in values.tolist()]
    assert float_2f(values).to_pylist() == expected
    assert "nan" in expected and "-0.00" in expected


def test_fields_and_lines_match_csv_writer(tmp_path):
    fields = ["plain.jpg", "a,b", 'say "x"', "two\nlines", "cr\ronly", ""]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for n, field in enumerate(fields):
        writer.writerow((field, n))
    lines = AtomicLines(tmp_path / "x.csv")
    text = pa.array(fields, pa.string())
    write_lines(lines, joined_lines(csv_field(text), ",", int_text(np.arange(len(fields)))))
    lines.close()
    assert (tmp_path / "x.csv").read_bytes() == out.getvalue().encode()
    plain = pa.array(["a", "b"])
    assert csv_field(plain) is plain  # nothing to quote: the column as it is
