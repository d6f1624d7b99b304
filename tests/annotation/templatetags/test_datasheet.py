"""The datasheet's Markdown tables rendered on the exports page
(annotation/templatetags/datasheet.py)."""

import pytest

pytestmark = pytest.mark.django_db


def test_the_exports_page_renders_the_datasheets_tables():
    from annotation.templatetags.datasheet import datasheet_html

    html = datasheet_html(
        "- Counts:\n\n| what | value |\n|---|---|\n| pairs | 6 |\n| <b> | `x` |\n"
    )
    assert "<table" in html and "<th>what</th><th>value</th>" in html
    assert "<td>pairs</td><td>6</td>" in html and "&lt;b&gt;" in html and "</table>" in html
    assert "---" not in html  # the header's rule is no row
