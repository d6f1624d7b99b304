"""`label_provenance_table`'s instructions column: each judgment names the version of its
stage's instructions in force when its worker took the HIT, from the run's
`InstructionsChange` rows (never from the event log)."""

from datetime import timedelta

import pytest

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, Event, EventAction, InstructionsChange
from annotation.selectors.work.run_texts import instructions_version
from annotation.services.release.release_judgments import label_provenance_table
from annotation.services.runs.run_texts import run_instructions_set
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def test_each_judgment_names_the_instructions_its_worker_was_shown(paired_run):
    batch = selection_done_factory(paired_run, accuracy=0.9)
    run = run_instructions_set(run=paired_run, stage=BisonStage.SELECTION, text="Pick one.")
    new = instructions_version(run.config, BisonStage.SELECTION)
    changed = InstructionsChange.objects.get(run=run).created_at
    later = Assignment.objects.filter(hit__batch=batch).order_by("pk").first().hit_id
    taken = Assignment.objects.filter(hit__batch=batch)
    taken.exclude(hit_id=later).update(accepted_at=changed - timedelta(hours=1))
    taken.filter(hit_id=later).update(accepted_at=changed + timedelta(hours=1))
    # The log is history only: without its events the release reads the same.
    Event.objects.filter(action=EventAction.RUN_INSTRUCTIONS_CHANGED).delete()

    table = label_provenance_table(run=run).to_pydict()
    versions: dict[int, set[str]] = {}
    for hit, version in zip(table["hit"], table["instructions_version"], strict=True):
        versions.setdefault(hit, set()).add(version)
    assert new != "default" and len(versions) > 1
    assert versions.pop(later) == {new}
    assert set().union(*versions.values()) == {"default"}
