"""Stored JSON dicts as exports show them: one key order whatever the database hands back
(PostgreSQL's jsonb reorders keys, SQLite keeps the written order; issue 48)."""

import json

import pytest

from annotation.json_order import keys_sorted
from annotation.models import Run


def test_keys_are_sorted_at_every_depth_and_lists_keep_their_order():
    value = {"b": 1, "a": [{"z": 1, "y": 2}, 3], "c": {"e": None, "d": "x"}}
    shown = keys_sorted(value)
    assert json.dumps(shown) == ('{"a": [{"y": 2, "z": 1}, 3], "b": 1, "c": {"d": "x", "e": null}}')
    assert shown == value  # the same content


@pytest.mark.django_db
def test_a_config_read_back_from_the_database_shows_in_the_written_order_sorted(paired_run):
    written = {"verifiers": 2, "seed": 0, "aggregation": "unanimity"}
    Run.objects.filter(pk=paired_run.pk).update(config=written)
    read = Run.objects.get(pk=paired_run.pk).config
    assert list(keys_sorted(read)) == ["aggregation", "seed", "verifiers"]
    assert list(keys_sorted(read)) == list(keys_sorted(written))
