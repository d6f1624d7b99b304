"""A run's instructions history, once read from its `run.instructions_changed` events by the
release, is carried into `InstructionsChange` rows by annotation 0035: one row per event, at
the event's time; migrated back, the log is untouched."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.annotation.migrations.test_0034_state_rows import _migrate, old_run

BEFORE = [("annotation", "0034_state_rows")]


@pytest.mark.django_db(transaction=True)
def test_each_instructions_event_becomes_a_row_at_its_time():
    try:
        old = _migrate(BEFORE)
        run = old_run(old)
        Event = old.get_model("annotation", "Event")
        start = timezone.now() - timedelta(days=2)
        changes = [
            ("selection", "default", "0123456789ab"),
            ("selection", "0123456789ab", "default"),
            ("verification", "default", "ba9876543210"),
        ]
        for n, (stage, before, after) in enumerate(changes):
            event = Event.objects.create(
                action="run.instructions_changed",
                run=run,
                data={"stage": stage, "from": before, "to": after, "text": "..."},
            )  # its time set after: the log stamps its rows when they are made
            Event.objects.filter(pk=event.pk).update(created_at=start + timedelta(hours=n))
        Event.objects.create(action="run.consent_changed", run=run, data={"from": "a", "to": "b"})

        new = _migrate(None)
        rows = new.get_model("annotation", "InstructionsChange").objects.order_by("created_at")
        assert [(r.run_id, r.stage, r.from_version, r.to_version, r.created_at) for r in rows] == [
            (run.pk, stage, before, after, start + timedelta(hours=n))
            for n, (stage, before, after) in enumerate(changes)
        ]

        old = _migrate(BEFORE)
        with pytest.raises(LookupError):
            old.get_model("annotation", "InstructionsChange")
        assert old.get_model("annotation", "Event").objects.count() == 4
    finally:
        _migrate(None)
