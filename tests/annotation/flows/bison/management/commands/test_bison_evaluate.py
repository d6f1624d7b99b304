"""`bison_evaluate` given an export folder names it (issue 8, part 5)."""

import json

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_bison_evaluate_given_an_export_folder_names_it(tmp_path):
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps([]))
    with pytest.raises(CommandError, match="is a folder") as info:
        call_command("bison_evaluate", annotations=str(tmp_path), predictions=str(predictions))
    assert str(tmp_path) in str(info.value)
