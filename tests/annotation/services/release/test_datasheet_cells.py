"""The datasheet's cells (annotation/services/release/datasheet_cells.py): words, small tables
or counts, never JSON."""

import pytest

pytestmark = pytest.mark.django_db


def test_datasheet_cells_read_as_words_small_tables_or_counts_never_json():
    from annotation.services.release.datasheet_cells import cell_text, pairs
    from tests.annotation.release_checks import json_outside_blocks

    selectors = [{"worker": f"w-{n}", "judged": 10 + n, "rejected": n} for n in range(3)]
    stage = {
        "stage1": {
            "cosines": {"nn_p5": 0.93, "degenerate": False},
            "params": {"vectors_path": None, "locales": ["US", "GB"]},
        },
        "stage2": {"selectors": selectors, "judged": 33},
        "ratings": list(range(500)),
    }
    lines = pairs(stage)
    assert "| stage1.cosines | nn_p5 0.93, degenerate no |" in lines
    assert "| stage1.params | vectors_path none, locales (US, GB) |" in lines
    # A short list of records: counted in its cell, then its own table under its key.
    assert "| stage2.selectors | 3 rows, table `stage2.selectors` below |" in lines
    at = lines.index("`stage2.selectors` (manifest.json: stage2.selectors):")
    assert lines[at + 2 : at + 7] == [
        "| worker | judged | rejected |",
        "|---|---|---|",
        "| w-0 | 10 | 0 |",
        "| w-1 | 11 | 1 |",
        "| w-2 | 12 | 2 |",
    ]
    # Long values are counted, with where the manifest has them.
    assert "| ratings | 500 values from 0 to 499 (see manifest.json: ratings) |" in lines
    many = [{"worker": f"w-{n}", "judged": n} for n in range(21)]
    assert cell_text({"a": many, "b": 1}, key="stage2") == "2 entries (see manifest.json: stage2)"
    assert pairs({"selectors": many}, source="stage2")[2:] == [
        "| selectors | 21 rows (see manifest.json: stage2.selectors) |"
    ]
    assert not json_outside_blocks("\n".join(lines))
    # The check refuses what the datasheet wrote before: JSON in cells and sentences.
    for old in (
        '| stage1.params | {"vectors_path": null, "dim": 100} |',
        "| histogram | [0, 6, 12] |",
        "| bison_selection | default | false |",
        "- Exclusions: []",
    ):
        assert json_outside_blocks(f"# Datasheet\n{old}\n```\n[1, 2]\n```\n") == [old]
